"""One real Postgres for the whole test session: the project's own LocalCluster in a private home."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


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
