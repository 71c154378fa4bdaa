"""The distribution AgentRel installs as, the one place its name is spelled in code.

It is `agentrel-audit`, while the import package is `agentrel`: `agentrel` on PyPI is another project, so
that name must never reach pip. AgentRel installs from its checkout (`pip install -e .`). Code that reads
our own metadata (the version, the requirements the evaluator digest binds) looks it up by this name; the
import name is not a distribution name here."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

DISTRIBUTION = "agentrel-audit"
# The import package's own folder (its layers are symlinks in it in a checkout), found without importing
# the front door, which would pull the whole library in.
PACKAGE_DIR = Path(__file__).parent


def installed_version() -> str | None:
    """The installed version, or None for a checkout run without an install."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return None
