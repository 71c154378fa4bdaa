"""Least privilege: connected the way the tool box connects, a run's role reaches its own database only."""

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from agentrel.sandbox import roles
from agentrel.sandbox.dump import connect_canonical, dump_database, dump_run
from agentrel.sandbox.environments.enterprise.schema import table_infos
from agentrel.sandbox.environments.enterprise.tools import all_tools
from agentrel.sandbox.tools import ToolBox


@pytest.fixture()
def runs(sandbox):
    tpl = sandbox.seed_template()
    a, b = sandbox.dbs.create_run(tpl), sandbox.dbs.create_run(tpl)
    yield a, b
    sandbox.dbs.drop(a)
    sandbox.dbs.drop(b)


@pytest.fixture()
def tool_conn(sandbox, runs):
    with psycopg.connect(sandbox.dbs.tool_conninfo(runs[0]), autocommit=True) as conn:
        yield conn


def test_the_tool_box_connects_as_the_runs_own_unprivileged_role(sandbox, runs, tool_conn):
    assert sandbox.dbs.confined()
    row = tool_conn.execute(
        "SELECT current_user, rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls "
        "FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    assert row == (runs[0], False, False, False, False, False)
    member_of = tool_conn.execute(
        "SELECT b.rolname FROM pg_auth_members m JOIN pg_roles b ON b.oid = m.roleid "
        "JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = current_user"
    ).fetchall()
    assert member_of == [(roles.GROUP,)]  # not pg_read_server_files, pg_execute_server_program, ...


@pytest.mark.parametrize(
    "statement",
    [
        "CREATE DATABASE agentrel_run_evil",
        "CREATE ROLE evil",
        "COPY (SELECT 1) TO PROGRAM 'true'",
        "COPY incidents FROM '/etc/passwd'",
        "SELECT pg_read_file('postgresql.conf')",
        "SELECT rolpassword FROM pg_authid",
        "SELECT * FROM agentrel_meta.touched",
        "TRUNCATE agentrel_meta.touched",
        "TRUNCATE work_notes",
        "ALTER TABLE incidents DISABLE TRIGGER agentrel_touched",
        "CREATE TABLE public.mine (x int)",
        "CREATE TEMP TABLE mine (x int)",
    ],
)
def test_the_tool_role_is_refused_what_the_tools_never_need(tool_conn, statement):
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        tool_conn.execute(statement)


def test_the_tool_role_cannot_become_the_owner(sandbox, tool_conn):
    owner = conninfo_to_dict(sandbox.server.conninfo("postgres"))["user"]
    for stmt in (f'SET ROLE "{owner}"', f'SET SESSION AUTHORIZATION "{owner}"'):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            tool_conn.execute(stmt)


def test_the_tool_role_cannot_connect_to_any_other_database(sandbox, runs):
    own = sandbox.dbs.tool_conninfo(runs[0])
    others = [runs[1], sandbox.seed_template().name, "postgres", "template1"]
    for other in others:
        conninfo = make_conninfo(own, dbname=other)
        # a template takes no connections at all (sandbox/databases.py); the others refuse this role
        refused = "not currently accepting connections|permission denied for database"
        with pytest.raises(psycopg.OperationalError, match=refused):
            psycopg.connect(conninfo).close()
    # ... while the other run's own role reaches its own database
    with psycopg.connect(sandbox.dbs.tool_conninfo(runs[1])) as conn:
        assert conn.execute("SELECT current_database()").fetchone() == (runs[1],)


def test_tool_calls_as_the_tool_role_write_and_are_tracked(sandbox, runs):
    run = runs[0]
    before = sandbox.dbs.template_state(sandbox.seed_template())
    with ToolBox(sandbox.dbs.tool_conninfo(run), all_tools(), acting_user_id=1) as box:
        assert box.call("add_work_note", {"record_table": "incidents", "record_id": 3, "note": "x"}).ok
        assert box.call("create_purchase_request", {"cost_center_id": 1, "item": "disk", "amount": 9}).ok
        assert box.call("delete_ci_relationship", {"id": 5}).ok
    owner = sandbox.server.conninfo(run)
    fast, full = dump_run(owner, before), dump_database(owner, table_infos().values())
    assert fast.digest(before) == full.digest() != before.digest()
    with connect_canonical(owner) as conn:
        assert conn.execute("SELECT count(*) FROM agentrel_meta.touched").fetchone() == (3,)


def test_a_runs_role_goes_with_its_database_and_orphaned_roles_are_dropped(sandbox):
    run = sandbox.dbs.create_run(sandbox.seed_template())
    sandbox.dbs.drop(run)
    with sandbox.dbs.admin() as conn:
        assert run not in roles.role_names(conn, run)
        # A crash after dropping a run's database, before its role: dead pid, role left behind.
        orphan = run.rsplit("_", 2)[0] + "_999999999_deadbeef"
        conn.execute(f'CREATE ROLE "{orphan}" LOGIN')
    assert orphan in sandbox.dbs.drop_orphans()
    with sandbox.dbs.admin() as conn:
        assert roles.role_names(conn, orphan) == []


def test_an_owner_that_cannot_create_roles_runs_unconfined_with_a_warning(sandbox, capsys):
    from agentrel.sandbox.databases import Databases
    from agentrel.sandbox.servers.external import ExternalServer

    with sandbox.dbs.admin() as conn:
        conn.execute("DROP ROLE IF EXISTS agentrel_test_plain")
        # every login needs a password (sandbox/servers/auth.py): the DSN carries this role's own
        conn.execute("CREATE ROLE agentrel_test_plain LOGIN CREATEDB PASSWORD 'plain-pw'")
        conn.execute("GRANT CONNECT ON DATABASE postgres TO agentrel_test_plain")  # closed to PUBLIC
    try:
        owner = {k: v for k, v in conninfo_to_dict(sandbox.server.conninfo("postgres")).items()}
        owner.pop("passfile")
        dsn = make_conninfo("", **{**owner, "user": "agentrel_test_plain", "password": "plain-pw"})
        dbs = Databases(ExternalServer(dsn), sandbox.env)
        assert dbs.confined() is False and dbs.confined() is False
        assert capsys.readouterr().err.count("cannot create roles") == 1
        assert dbs.tool_conninfo("agentrel_run_x") == dbs.server.conninfo("agentrel_run_x")
    finally:
        with sandbox.dbs.admin() as conn:
            conn.execute("REVOKE CONNECT ON DATABASE postgres FROM agentrel_test_plain")
            conn.execute("DROP ROLE agentrel_test_plain")
