"""The distribution AgentRel installs as, the one place its name is spelled in code. It is `agentrel`,
like the import package (Inspect AI names our tasks `agentrel/<task>` only then); `agentrel` on PyPI is
another project, so AgentRel is installed from its checkout (`pip install -e .`), never by name."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

DISTRIBUTION = "agentrel"
# The import package's own folder (its layers are symlinks in it in a checkout), found without importing
# the front door, which would pull the whole library in.
PACKAGE_DIR = Path(__file__).parent


def installed_version() -> str | None:
    """The installed version, or None for a checkout run without an install."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return None
