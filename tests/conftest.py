"""One real Postgres for the whole test session: the project's own LocalCluster in a private home."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ENV_VAR = "AGENTREL_ENV"  # the process-wide environment selection (sandbox/environments/registry.py)
_SESSION_ENV = os.environ.get(ENV_VAR)


def pytest_collection_finish(session: pytest.Session) -> None:
    """A test module that selects an environment when imported changes it for every later test in its
    worker (a τ² environment under the enterprise suite's tests): refuse the session at once."""
    if os.environ.get(ENV_VAR) != _SESSION_ENV:
        raise pytest.UsageError(
            f"{ENV_VAR} was changed while collecting tests ({_SESSION_ENV!r} -> "
            f"{os.environ.get(ENV_VAR)!r}): a test module selects an environment at import; use "
            "registry.load(name) there"
        )


@pytest.fixture(autouse=True)
def _environment_restored() -> Iterator[None]:
    """Each test leaves the environment selection as it found it (a test may select one for itself)."""
    before = os.environ.get(ENV_VAR)
    yield
    if before is None:
        os.environ.pop(ENV_VAR, None)
    else:
        os.environ[ENV_VAR] = before


@pytest.fixture(scope="session")
def agentrel_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("agentrel-home")
    old = os.environ.get("AGENTREL_HOME")
    os.environ["AGENTREL_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("AGENTREL_HOME", None)
    else:
        os.environ["AGENTREL_HOME"] = old


@pytest.fixture(scope="session")
def cluster(agentrel_home: Path):
    from agentrel.sandbox.servers.local import LocalCluster

    server = LocalCluster(agentrel_home)
    server.ensure_running()
    yield server
    server.destroy()


@pytest.fixture(scope="session")
def sandbox(cluster, agentrel_home: Path):
    from agentrel.sandbox.sandbox import Sandbox

    sb = Sandbox(cluster, home=agentrel_home)
    sb.seed_template()
    return sb
