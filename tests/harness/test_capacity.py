"""An audit's concurrency against the server's max_connections: a private cluster is raised to fit, and a
server AgentRel may not restart (or one another process is using) is left alone, with one line saying so."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from agentrel.harness.executors.capacity import connections_needed, max_connections, size_server
from agentrel.sandbox.servers.external import ExternalServer
from agentrel.sandbox.servers.local import LocalCluster


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory: pytest.TempPathFactory):
    """A cluster of this module's own: raising max_connections restarts it."""
    server = LocalCluster(Path(tmp_path_factory.mktemp("capacity-home")))
    server.ensure_running()
    yield server
    server.destroy()


def test_a_private_cluster_is_raised_for_the_runs_in_flight(own_cluster: LocalCluster) -> None:
    slots = max_connections(own_cluster)  # two connections per slot: never fits as it is
    said: list[str] = []
    assert size_server(own_cluster, slots, said.append) == connections_needed(slots)
    assert max_connections(own_cluster) == connections_needed(slots)
    assert len(said) == 1 and "raised" in said[0]
    # Enough already: nothing to do, nothing said, no restart.
    assert size_server(own_cluster, 4, said.append) == connections_needed(slots)
    assert len(said) == 1


def test_a_restart_that_would_cut_another_session_is_refused(own_cluster: LocalCluster) -> None:
    have = max_connections(own_cluster)
    with psycopg.connect(own_cluster.conninfo("postgres"), autocommit=True) as other:
        said: list[str] = []
        assert size_server(own_cluster, have, said.append) == have
        # The other process's session survived: no restart happened under it.
        assert other.execute("SELECT 1").fetchone() == (1,)
    assert max_connections(own_cluster) == have
    assert len(said) == 1
    assert "other session(s)" in said[0] and "lower --concurrency" in said[0]


def test_an_external_server_is_the_users_to_configure(own_cluster: LocalCluster) -> None:
    external = ExternalServer(own_cluster.conninfo("postgres"))
    have = max_connections(external)
    with psycopg.connect(own_cluster.conninfo("postgres"), autocommit=True) as session:
        said: list[str] = []
        assert size_server(external, have, said.append) == have
        assert session.execute("SELECT 1").fetchone() == (1,)
    assert said == [
        f"warning: Postgres allows {have} connections and {have} runs in flight need about "
        f"{connections_needed(have)} (two per run); the external server is not AgentRel's to restart: "
        "raise max_connections on the server or lower --concurrency"
    ]


def test_the_audit_says_when_its_server_cannot_hold_its_concurrency(sandbox, tmp_path: Path) -> None:
    """The same Postgres reached as an external server: a concurrency it cannot hold is one line, and the
    runs still complete (here one run, which needs one connection)."""
    from agentrel.harness.run.audit import audit
    from agentrel.sandbox.sandbox import Sandbox

    external = Sandbox(ExternalServer(sandbox.server.conninfo("postgres")), home=sandbox.home)
    concurrency = max_connections(external.server)
    said: list[str] = []
    out = audit(
        models=["scripted/oracle"],
        k=1,
        tasks=["itsm-alert-storm"],
        concurrency=concurrency,
        results=tmp_path / "r",
        sandbox=external,
        show_progress=False,
        say=said.append,
    )
    assert [m for m in said if "max_connections" in m] == [
        f"warning: Postgres allows {concurrency} connections and {concurrency} runs in flight need about "
        f"{connections_needed(concurrency)} (two per run); the external server is not AgentRel's to "
        "restart: raise max_connections on the server or lower --concurrency"
    ]
    assert len(out.new) == 1 and out.new[0].terminal
