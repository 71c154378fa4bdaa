"""The distribution AgentRel installs as: `agentrel-audit` (the name `agentrel` on PyPI is another
project's), while the import name stays `agentrel`. The one place the name is spelled in code."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "agentrel-audit"


def installed_version() -> str | None:
    """The installed version, or None for a checkout run without an install."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return None
