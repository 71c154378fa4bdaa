import os
import shutil
import signal
import subprocess
import sys
import textwrap

import psycopg
import pytest

from agentrel.dsl.state import load
from agentrel.sandbox.dump import dump_database
from agentrel.sandbox.environments import default
from agentrel.sandbox.environments.enterprise.schema import table_infos
from agentrel.sandbox.environments.enterprise.seed import generate
from agentrel.sandbox.servers.local import LocalCluster

ENTERPRISE = default()


def test_seed_template_matches_the_generated_data(sandbox):
    tpl = sandbox.seed_template()
    assert tpl.digest == generate().digest()
    assert sandbox.dbs.template_state(tpl).digest() == tpl.digest


def test_run_databases_are_isolated_from_each_other_and_from_the_template(sandbox):
    tpl = sandbox.seed_template()
    a, b = sandbox.dbs.create_run(tpl), sandbox.dbs.create_run(tpl)
    try:
        with psycopg.connect(sandbox.server.conninfo(a), autocommit=True) as conn:
            conn.execute("UPDATE invoices SET amount = amount + 1 WHERE id = 1")
            conn.execute(
                "DELETE FROM group_members WHERE (group_id, user_id) IN "
                "(SELECT group_id, user_id FROM group_members LIMIT 1)"
            )
        changed = dump_database(sandbox.server.conninfo(a), table_infos().values()).digest()
        assert changed != tpl.digest
        assert dump_database(sandbox.server.conninfo(b), table_infos().values()).digest() == tpl.digest
        assert sandbox.dbs.dump_template(tpl.name).digest() == tpl.digest
    finally:
        sandbox.dbs.drop(a)
        sandbox.dbs.drop(b)
    assert a not in sandbox.dbs.names()


def test_changing_one_value_in_one_row_changes_the_digest(sandbox):
    tpl = sandbox.seed_template()
    run = sandbox.dbs.create_run(tpl)
    try:
        with psycopg.connect(sandbox.server.conninfo(run), autocommit=True) as conn:
            conn.execute("UPDATE contacts SET phone = phone || '0' WHERE id = 7")
        assert dump_database(sandbox.server.conninfo(run), table_infos().values()).digest() != tpl.digest
    finally:
        sandbox.dbs.drop(run)


def test_dump_file_round_trips_and_normalizes_values(sandbox, tmp_path):
    tpl = sandbox.seed_template()
    state = sandbox.dbs.template_state(tpl)
    digest = state.save(tmp_path / "seed.jsonl.gz")
    again = load(tmp_path / "seed.jsonl.gz")
    assert digest == tpl.digest == again.digest()
    row = again.tables["incidents"].as_dict((1,))
    assert row["opened_at"].endswith("Z") and "T" in row["opened_at"]
    assert isinstance(row["priority"], int)
    assert again.tables["group_members"].info.primary_key == ("group_id", "user_id")


def test_two_fresh_clusters_under_different_homes_give_the_same_seed_digest(tmp_path, sandbox):
    from agentrel.sandbox.sandbox import Sandbox

    server = LocalCluster(tmp_path / "second-home")
    try:
        server.ensure_running()
        other = Sandbox(server, home=tmp_path / "second-home").seed_template()
    finally:
        server.destroy()
    assert other.digest == sandbox.seed_template().digest


def test_orphaned_run_databases_from_a_crash_are_dropped_at_next_start(sandbox, agentrel_home):
    # A child process creates a run database and is killed -9 before it can clean up.
    script = textwrap.dedent(f"""
        import os, sys, time
        from agentrel.sandbox.servers.local import LocalCluster
        from agentrel.sandbox.databases import Databases, Template
        from agentrel.sandbox.environments import default
        dbs = Databases(LocalCluster(), default())
        name = dbs.create_run(Template({sandbox.seed_template().name!r}, ""))
        print(name, flush=True)
        time.sleep(60)
    """)
    env = dict(os.environ, AGENTREL_HOME=str(agentrel_home))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    orphan = proc.stdout.readline().strip()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert orphan in sandbox.dbs.names()
    live = sandbox.dbs.create_run(sandbox.seed_template())  # ours: alive, must survive
    try:
        dropped = sandbox.dbs.drop_orphans()
        assert orphan in dropped
        names = sandbox.dbs.names()
        assert orphan not in names and live in names
    finally:
        sandbox.dbs.drop(live)


def test_fixture_sql_error_names_the_task(sandbox):
    from agentrel.sandbox.servers import SandboxError

    with pytest.raises(SandboxError, match="fixture SQL failed"):
        sandbox.dbs.task_template(sandbox.seed_template(), "t-bad", "UPDATE nope SET x = 1")
    assert not [n for n in sandbox.dbs.names() if "_b" in n.split("_")[-1][:2]]


def test_post_run_dump_rereads_exactly_the_written_tables(sandbox):
    from agentrel.sandbox import tracking
    from agentrel.sandbox.dump import connect_canonical, dump_run

    base_tpl = sandbox.seed_template()
    tpl = sandbox.dbs.task_template(base_tpl, "t-tracking", "UPDATE accounts SET tier = 'gold' WHERE id = 2")
    before = sandbox.dbs.template_state(tpl)
    run = sandbox.dbs.create_run(tpl)
    try:
        conninfo = sandbox.server.conninfo(run)
        with connect_canonical(conninfo) as conn:
            assert tracking.touched(conn) == set()  # the fixture's own write is not the run's
            conn.execute("UPDATE invoices SET amount = amount + 1 WHERE id = 3")
            conn.execute(
                "DELETE FROM user_roles WHERE (user_id, role_id) IN (SELECT user_id, role_id FROM "
                "user_roles LIMIT 2)"
            )
            conn.execute("UPDATE cases SET state = state WHERE id = -1")  # no row: still marked, harmless
            assert tracking.touched(conn) == {"invoices", "user_roles", "cases"}
        fast, full = dump_run(conninfo, before), dump_database(conninfo, table_infos().values())
        assert fast.digest(before) == full.digest() != before.digest()
        assert fast.tables["accounts"] is before.tables["accounts"]  # unwritten: shared, not re-read
    finally:
        sandbox.dbs.drop(run)


def test_an_external_server_by_dsn_serves_templates_and_runs(sandbox):
    from agentrel.sandbox.databases import Databases
    from agentrel.sandbox.servers import resolve_server
    from agentrel.sandbox.servers.external import ExternalServer

    server = resolve_server(dsn=sandbox.server.conninfo("postgres"))
    assert isinstance(server, ExternalServer)
    server.ensure_running()
    dbs = Databases(server, sandbox.env)
    tpl = dbs.seed_template()
    assert tpl.digest == sandbox.seed_template().digest
    run = dbs.create_run(tpl)
    try:
        assert dump_database(server.conninfo(run), table_infos().values()).digest() == tpl.digest
        # A server the user runs may want passwords: the run's role gets one, known only in memory.
        assert "password=" in dbs.tool_conninfo(run)
        with psycopg.connect(dbs.tool_conninfo(run)) as conn:
            assert conn.execute("SELECT current_user").fetchone() == (run,)
    finally:
        dbs.drop(run)


def test_a_cluster_deleted_without_destroy_leaves_no_run_space_that_blocks_the_next(tmp_path):
    """Deleting AGENTREL_HOME by hand (a CI checkout removed, `rm -rf .agentrel`) leaves the RAM run space
    behind, holding the old cluster's tablespace directory; the next cluster at that home must not fail
    to create its run tablespace ("already in use as a tablespace")."""
    from agentrel.sandbox.databases import Databases

    home = tmp_path / "home"
    first = LocalCluster(home)
    if first.run_space is None:
        pytest.skip("no RAM-backed /dev/shm on this machine: runs live in the data directory")
    first.ensure_running()
    Databases(first, ENTERPRISE).run_tablespace()
    first.stop()
    shutil.rmtree(home)  # the home removed by hand: the run space stays
    assert first.run_space is not None and any(first.run_space.iterdir())
    second = LocalCluster(home)
    try:
        second.ensure_running()
        assert Databases(second, ENTERPRISE).run_tablespace() is not None
    finally:
        second.destroy()


def test_a_client_paused_mid_login_is_not_cut_off_after_a_minute(sandbox):
    """An audit stopped with Ctrl-Z (or SIGSTOP) while one of its runs was logging in had the handshake
    cut at Postgres's default 60 s: that run failed as harness_invalid when the audit resumed and ran again.
    The private cluster waits as long as Postgres allows."""
    with psycopg.connect(sandbox.server.conninfo("postgres")) as conn:
        (timeout,) = conn.execute("SHOW authentication_timeout").fetchone()
    assert timeout == "10min"
