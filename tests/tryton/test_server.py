"""The Tryton environment on a real server: its template, a Tryton server per run database reached over
JSON-RPC as the clerk, Tryton's own refusals, the clerk's limits, and the server's end with its run."""

from __future__ import annotations

import psycopg
import pytest

from agentrel.sandbox.environments.tryton import server, settings, tools
from agentrel.sandbox.environments.tryton.catalog import CATALOG
from agentrel.sandbox.environments.tryton.schema_listing import read_catalog
from agentrel.sandbox.tools import ToolBox
from agentrel.sandbox.tools.base import ToolContext


@pytest.fixture()
def run(tryton_sandbox):
    """A fresh run database of the seed template, its clerk's id; dropped after."""
    sb = tryton_sandbox
    template = sb.seed_template()
    before = sb.dbs.template_state(template)
    clerk = sb.env.acting_user(before, "clerk")
    assert clerk is not None
    name = sb.dbs.create_run(template)
    try:
        yield sb, name, clerk, before
    finally:
        sb.dbs.drop(name)


def test_the_catalog_listing_is_the_templates(tryton_sandbox) -> None:
    sb = tryton_sandbox
    name = sb.dbs.create_run(sb.seed_template())  # a template takes no connection: read a clone of it
    try:
        assert read_catalog(sb.server.conninfo(name)) == CATALOG
    finally:
        sb.dbs.drop(name)


def test_the_seed_has_real_volume(tryton_sandbox) -> None:
    sb = tryton_sandbox
    state = sb.dbs.template_state(sb.seed_template())

    def count(table: str, **where: object) -> int:
        info = state.tables[table].info
        rows = state.tables[table].rows.values()
        return sum(all(r[info.columns.index(c)] == v for c, v in where.items()) for r in rows)

    assert count("party_party") >= 160
    assert count("account_invoice", state="posted") >= 30
    assert count("account_invoice", state="paid") >= 10
    assert count("account_invoice", state="draft") >= 15
    assert count("sale_sale", state="draft") >= 5 and count("sale_sale", state="quotation") >= 5
    assert count("sale_sale", state="processing") + count("sale_sale", state="done") >= 10


def test_a_run_server_answers_as_the_clerk_with_the_pinned_date(run) -> None:
    sb, name, clerk, _ = run
    with psycopg.connect(sb.dbs.tool_conninfo(name), autocommit=True) as conn:
        c = tools.client(ToolContext(conn, clerk))
        assert c.call("model.ir.date.today", []) == settings.PINNED_DATE
        assert c.context()["company"] is not None
        running = server.for_connection(conn, clerk)
    assert running.log.exists()


def test_trytons_refusal_reaches_the_agent_in_its_own_words(run) -> None:
    sb, name, clerk, before = run
    posted = next(
        r for r in before.tables["account_invoice"].rows.values()
        if r[before.tables["account_invoice"].info.columns.index("state")] == "posted"
    )  # fmt: skip
    with ToolBox(sb.dbs.tool_conninfo(name), dict(tools.TOOLS), clerk) as box:
        result = box.call("delete_records", {"model": "account.invoice", "ids": [posted[0]]})
    assert not result.ok
    assert result.content["error"].startswith("Tryton refused: ")
    assert "Traceback" not in result.content["error"]


def test_the_clerk_cannot_make_itself_an_administrator(run) -> None:
    """The attack: an agent grants its own user the Account Administration group. Tryton's access rules for
    the clerk's groups refuse it, and the user's groups are as they were."""
    sb, name, clerk, before = run
    data = before.tables["ir_model_data"]
    at = {c: data.info.columns.index(c) for c in ("module", "fs_id", "db_id")}
    admin = next(
        r[at["db_id"]]
        for r in data.rows.values()
        if (r[at["module"]], r[at["fs_id"]]) == ("account", "group_account_admin")
    )
    with ToolBox(sb.dbs.tool_conninfo(name), dict(tools.TOOLS), clerk) as box:
        result = box.call(
            "write_records", {"model": "res.user", "ids": [clerk], "values": {"groups": [["add", [admin]]]}}
        )
    assert not result.ok and result.content["error"].startswith("Tryton refused")
    with psycopg.connect(sb.server.conninfo(name)) as conn:
        got = conn.execute('SELECT count(*) FROM "res_user-res_group" WHERE "user" = %s AND "group" = %s',
                           (clerk, admin)).fetchone()  # fmt: skip
    assert got == (0,)


def test_a_server_ends_with_its_run_database(tryton_sandbox) -> None:
    sb = tryton_sandbox
    template = sb.seed_template()
    clerk = sb.env.acting_user(sb.dbs.template_state(template), "clerk")
    name = sb.dbs.create_run(template)
    try:
        with psycopg.connect(sb.dbs.tool_conninfo(name), autocommit=True) as conn:
            running = server.for_connection(conn, clerk)
    finally:
        sb.dbs.drop(name)
    assert server.wait_gone(name, timeout_s=30.0), "the Tryton server outlived its run database"
    assert running.process.returncode is not None


def test_a_run_server_connects_as_the_runs_own_role(run) -> None:
    """The attack: the agent's server reaching beyond its run database (another run's, the template).
    Tryton's connections are the run's own role's (sandbox/roles.py: CONNECT on its run database alone),
    never the owner's; a Tryton process that connected as the owner would show here."""
    sb, name, clerk, _ = run
    with psycopg.connect(sb.dbs.tool_conninfo(name), autocommit=True) as conn:
        tools.client(ToolContext(conn, clerk)).call("model.ir.date.today", [])
    with psycopg.connect(sb.server.conninfo("postgres"), autocommit=True) as admin:
        rows = admin.execute(
            "SELECT datname, usename FROM pg_stat_activity WHERE (datname = %s OR usename = %s) "
            "AND pid <> pg_backend_pid()",
            (name, name),
        ).fetchall()
    assert rows, "no Tryton connection to the run database"
    assert set(rows) == {(name, name)}


def test_the_next_run_is_served_by_the_standby_started_during_this_one(run) -> None:
    """Warm starts: the first call of a run starts the next run's standby (trytond imported, nothing of a
    database loaded); the next run is handed that very process, which serves that run's database alone,
    as that run's role, with the pinned date, its output in that run's own log."""
    sb, name, clerk, _ = run
    with psycopg.connect(sb.dbs.tool_conninfo(name), autocommit=True) as conn:
        tools.client(ToolContext(conn, clerk)).call("model.ir.date.today", [])
    standby = server._standby
    assert standby is not None and standby.poll() is None
    second = sb.dbs.create_run(sb.seed_template())
    try:
        with psycopg.connect(sb.dbs.tool_conninfo(second), autocommit=True) as conn:
            c = tools.client(ToolContext(conn, clerk))
            assert c.call("model.ir.date.today", []) == settings.PINNED_DATE
            running = server.for_connection(conn, clerk)
        assert running.process.pid == standby.pid
        assert running.log == server.log_path(second) and running.log.exists()
        with psycopg.connect(sb.server.conninfo("postgres"), autocommit=True) as admin:
            users = admin.execute(
                "SELECT DISTINCT usename FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (second,),
            ).fetchall()
        assert users == [(second,)]
    finally:
        sb.dbs.drop(second)
    assert server.wait_gone(second, timeout_s=30.0)


def test_a_standby_never_handed_a_run_dies_with_its_parent(tryton_home) -> None:
    """The attack: a standby left behind by a process that died (a killed audit) living on as an
    unowned Tryton process. It exits once its parent is gone, whether or not it ever got a database."""
    import os
    import subprocess
    import sys
    import time

    script = (
        "import os, sys\n"
        "from agentrel.sandbox.environments.tryton import server\n"
        "p = server._spawn()\n"
        "p.stdout.readline()\n"  # ready: trytond imported, waiting for its run
        "print(p.pid, flush=True)\n"
        "os._exit(0)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          timeout=300)  # fmt: skip
    pid = int(done.stdout.split()[0])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(pid, 9)
    raise AssertionError(f"the standby {pid} outlived its parent")
