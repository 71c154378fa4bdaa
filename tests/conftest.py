"""One real Postgres for the whole test session: the project's own LocalCluster in a private home."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ENV_VAR = "AGENTREL_ENV"  # written only into child processes' variables (sandbox/environments/registry.py)
_SESSION_ENV = os.environ.get(ENV_VAR)


def _changed() -> str | None:
    now = os.environ.get(ENV_VAR)
    if now == _SESSION_ENV:
        return None
    if _SESSION_ENV is None:  # put back, so one culprit fails and not every test after it
        os.environ.pop(ENV_VAR, None)
    else:
        os.environ[ENV_VAR] = _SESSION_ENV
    return f"{ENV_VAR} changed in this process ({_SESSION_ENV!r} -> {now!r})"


def pytest_collection_finish(session: pytest.Session) -> None:
    """The environment is a value handed down: nothing in-process writes AGENTREL_ENV, at import either."""
    changed = _changed()
    if changed:
        raise pytest.UsageError(f"{changed} while collecting tests: pass the environment as a value")


@pytest.fixture(autouse=True)
def _environment_variable_untouched() -> Iterator[None]:
    """A test (or the code it runs) that writes AGENTREL_ENV into this process fails: the environment
    reaches library code as a value, and child processes through their own variables."""
    yield
    changed = _changed()
    if changed:
        pytest.fail(f"{changed}: pass the environment as a value (registry.child_environ for a child)")


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
