"""One Tryton template for the whole session, on a private server whose home outlives the session when
TRYTON_TEST_HOME names one (`make test-tryton`): the template is built once per fingerprint (minutes:
module activation and the proteus seed) and every later session reuses it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("trytond", reason="the tryton extra is not installed: make test-tryton installs it")


@pytest.fixture(scope="session")
def tryton_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    named = os.environ.get("TRYTON_TEST_HOME")
    home = Path(named) if named else tmp_path_factory.mktemp("tryton-home")
    home.mkdir(parents=True, exist_ok=True)
    old = os.environ.get("AGENTREL_HOME")
    os.environ["AGENTREL_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("AGENTREL_HOME", None)
    else:
        os.environ["AGENTREL_HOME"] = old


@pytest.fixture(scope="session")
def tryton_sandbox(tryton_home: Path):
    from agentrel.sandbox.environments import registry
    from agentrel.sandbox.sandbox import Sandbox
    from agentrel.sandbox.servers.local import LocalCluster

    env = registry.load("tryton-erp")
    cluster = LocalCluster(tryton_home)
    cluster.ensure_running()
    sb = Sandbox(cluster, home=tryton_home, env=env)
    sb.dbs.drop_orphans()
    sb.seed_template()  # built once per fingerprint, kept in the home for the next session
    yield sb
    if not os.environ.get("TRYTON_TEST_HOME"):
        cluster.destroy()
    else:
        cluster.stop()
