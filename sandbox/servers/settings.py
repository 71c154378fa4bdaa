"""The postgresql.conf settings of every server AgentRel makes (the local cluster and the container), in one
place so that both serve the same state and a setting changes once."""

from __future__ import annotations

DEFAULT_MAX_CONNECTIONS = 200


def server_settings(
    socket_dir: str, port: int, listen: str = "", max_connections: int | None = None
) -> dict[str, str]:
    """name -> value (unquoted). Durability is off on purpose: run databases are dumped before they are
    dropped and templates are rebuilt from their seed, so a crash loses nothing a run needs."""
    return {
        "listen_addresses": listen,
        "unix_socket_directories": socket_dir,
        "port": str(port),
        "fsync": "off",
        "synchronous_commit": "off",
        "full_page_writes": "off",
        "max_connections": str(max_connections or DEFAULT_MAX_CONNECTIONS),
        "shared_buffers": "128MB",
        "timezone": "UTC",
        "log_min_messages": "warning",
        "password_encryption": "scram-sha-256",
        # A client paused mid-login (Ctrl-Z on an audit, a debugger, SIGSTOP) had its handshake cut at the
        # default 60 s, and the run it was starting failed as harness_invalid once it resumed. The server
        # listens only on its own socket (or loopback), so the longest wait Postgres allows costs nothing.
        "authentication_timeout": "600s",
    }
