"""The docker backend's image, built offline from the host's Debian packages."""
