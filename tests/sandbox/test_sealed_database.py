"""The database needs credentials the subject does not have (issue 31, attack 4), written as the attacks.

An audited program runs with the auditor's environment; what it must not have is the superuser's password
file (sandbox/servers/auth.py), which the sealed launcher keeps out of its view. Without it: no login as
the superuser on the socket or on TCP, none as another run's role, no connection to a template and no way
to reopen one; a template changed out of band by someone who has the password is found before it is
cloned and built again; and the password is in no child's environment or command line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from agentrel.sandbox import databases
from agentrel.sandbox.notices import LOGGER
from agentrel.sandbox.servers.auth import HBA_LINES, ITERATIONS, lets_anyone_in
from agentrel.sandbox.servers.local import LocalCluster

ATTACKER = Path(__file__).with_name("db_attacker.py")
TASK = "csm-double-charge"


def without_secret(conninfo: str, **changes: str) -> str:
    """The conninfo an attacker can write: every address part, no password file."""
    params = {k: v for k, v in conninfo_to_dict(conninfo).items() if k not in ("passfile", "password")}
    return make_conninfo("", **{**params, **changes})


def attack(tmp_path: Path, targets: list[str]) -> dict:
    out = tmp_path / "attack.json"
    # The auditor's whole environment: only the password file is out of its reach (it is not named).
    subprocess.run([sys.executable, str(ATTACKER), str(out), *targets], check=True, timeout=120)
    return json.loads(out.read_text())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_out_of_band(sandbox, name: str, statement: str) -> None:
    """What someone holding the superuser's password can do to a template: reopen it, write, close it."""
    with sandbox.dbs.admin() as conn:
        conn.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
    with psycopg.connect(sandbox.server.conninfo(name), autocommit=True) as conn:
        conn.execute(statement)
    with sandbox.dbs.admin() as conn:
        conn.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')


@pytest.fixture(scope="module")
def tcp_cluster(tmp_path_factory):
    server = LocalCluster(tmp_path_factory.mktemp("tcp-home"), port=free_port(), tcp=True)
    server.ensure_running()
    yield server
    server.destroy()


def test_the_superuser_without_its_password_file_is_refused_on_the_socket_and_on_tcp(tcp_cluster, tmp_path):
    socket_dir = str(tcp_cluster.sockdir)
    targets = [
        without_secret(tcp_cluster.conninfo("postgres"), host=socket_dir),
        without_secret(tcp_cluster.conninfo("postgres"), host="127.0.0.1"),
        without_secret(tcp_cluster.conninfo("template1"), host="127.0.0.1"),
    ]
    assert attack(tmp_path, targets)["logins"] == dict.fromkeys(targets)
    # ... while the harness, which names the file, logs in on both
    for host in (socket_dir, "127.0.0.1"):
        with psycopg.connect(make_conninfo(tcp_cluster.conninfo("postgres"), host=host)) as conn:
            assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone() == (
                True,
            )
    assert (tcp_cluster.secret.path.stat().st_mode & 0o777) == 0o600
    assert (tcp_cluster.secret.path.parent.stat().st_mode & 0o777) == 0o700


def test_another_runs_role_cannot_be_guessed_into(sandbox, tmp_path):
    tpl = sandbox.seed_template()
    victim = sandbox.dbs.create_run(tpl)
    try:
        guessed = without_secret(sandbox.server.conninfo(victim), user=victim)
        as_owner = without_secret(sandbox.server.conninfo(victim))
        assert attack(tmp_path, [guessed, as_owner])["logins"] == {guessed: None, as_owner: None}
        with psycopg.connect(sandbox.dbs.tool_conninfo(victim)) as conn:  # its own password gets in
            assert conn.execute("SELECT current_user").fetchone() == (victim,)
        with sandbox.dbs.admin() as conn:  # stored as scram verifiers (ours, cheap to log in with)
            owner = conn.info.user
            stored = conn.execute(
                "SELECT rolname, split_part(rolpassword, ':', 1) FROM pg_authid WHERE rolname IN (%s, %s)",
                (victim, owner),
            ).fetchall()
        scram = f"SCRAM-SHA-256${ITERATIONS}"
        assert sorted(stored) == sorted([(victim, scram), (owner, scram)])
    finally:
        sandbox.dbs.drop(victim)


def test_a_template_takes_no_connections_and_a_run_role_cannot_reopen_it(sandbox):
    tpl = sandbox.seed_template()
    with sandbox.dbs.admin() as conn:
        allow = conn.execute("SELECT datallowconn FROM pg_database WHERE datname = %s", (tpl.name,))
        assert allow.fetchone() == (False,)
    # not even the superuser logs into a template ...
    with pytest.raises(psycopg.OperationalError, match="not currently accepting connections"):
        psycopg.connect(sandbox.server.conninfo(tpl.name)).close()
    run = sandbox.dbs.create_run(tpl)  # ... and cloning it works all the same
    try:
        with psycopg.connect(sandbox.dbs.tool_conninfo(run), autocommit=True) as conn:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="must be owner"):
                conn.execute(f'ALTER DATABASE "{tpl.name}" WITH ALLOW_CONNECTIONS true')
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f'ALTER DATABASE "{tpl.name}" OWNER TO CURRENT_USER')
    finally:
        sandbox.dbs.drop(run)


def test_a_template_poisoned_out_of_band_is_rebuilt_before_the_next_audit_clones_it(
    sandbox, tmp_path, caplog
):
    """Someone with the superuser's password writes a work note into the task's template; the next audit
    (a new process: the once-per-process check forgotten) finds it, says so, rebuilds, and its honest
    oracle run passes instead of carrying the planted row as damage."""
    from agentrel.harness.results.directory import ResultsDir
    from agentrel.harness.run.audit import audit
    from agentrel.harness.run.episode import prepare
    from agentrel.harness.tasks import load_suite

    prepared = prepare(sandbox, load_suite(patterns=[TASK])[0])
    tpl = prepared.template
    write_out_of_band(
        sandbox,
        tpl.name,
        "INSERT INTO work_notes (record_table, record_id, author_id, note, created_at) "
        "VALUES ('incidents', 7, 1, 'planted', '2026-03-02T09:00:00Z')",
    )
    assert sandbox.dbs.dump_template(tpl.name).digest() != tpl.digest
    databases._CHECKED.clear()  # a later audit invocation has checked nothing yet

    results = tmp_path / "results"
    with caplog.at_level(logging.INFO, logger=LOGGER):
        audit(
            models=["scripted/oracle"],
            k=1,
            tasks=[TASK],
            concurrency=1,
            results=results,
            sandbox=sandbox,
            show_progress=False,
        )
    said = "\n".join(r.getMessage() for r in caplog.records if r.name == LOGGER)
    assert f"template {tpl.name} holds" in said and "dropped and built again" in said
    [record] = ResultsDir(results).records()
    assert record.verdict is not None and record.verdict.outcome == "PASS"
    assert record.before_digest == tpl.digest
    assert sandbox.dbs.dump_template(tpl.name).digest() == tpl.digest


def test_the_environment_record_reports_the_seed_digest_it_computed(sandbox):
    """The record dumps the seed template now; the stored digest alone would report a changed template as
    conforming. A changed seed is rebuilt first, so the digest reported is the one runs start from."""
    from agentrel.harness.protocol.environment import observe_environment

    tpl = sandbox.seed_template()
    write_out_of_band(sandbox, tpl.name, "UPDATE invoices SET amount = amount + 1 WHERE id = 1")
    # the in-process memo says "checked" (this process built it): the record does not trust it
    observed = observe_environment(sandbox).get("seed_digest")
    assert observed is not None and observed.value == tpl.digest
    assert sandbox.dbs.dump_template(tpl.name).digest() == tpl.digest  # rebuilt, not merely re-labelled


def test_the_superuser_password_is_in_no_childs_environment_or_argv(sandbox, tmp_path):
    """An agent program (reading its own and its parent's /proc environ and cmdline) and a fault tool
    server: neither holds the superuser's password, and the agent cannot log in with what it has."""
    from agentrel.harness.agents.external import ExternalSpec
    from agentrel.harness.faults.process import POOL
    from agentrel.harness.faults.rig import FaultRig
    from agentrel.harness.run.audit import audit
    from agentrel.harness.run.episode import prepare
    from agentrel.harness.tasks import load_suite

    password = sandbox.server.secret.read().encode()
    out = tmp_path / "agent-saw.json"
    superuser = without_secret(sandbox.server.conninfo("postgres"))
    command = [sys.executable, str(ATTACKER), str(out), superuser]
    # Unsealed, the worst case: it can read its parent's /proc too (sealed, it sees no other process).
    spec = ExternalSpec(name="attacker", command=command, timeout_s=60.0, isolation="none")
    audit(
        models=[],
        k=1,
        tasks=[TASK],
        concurrency=1,
        results=tmp_path / "results",
        sandbox=sandbox,
        show_progress=False,
        agents=[spec],
    )
    saw = json.loads(out.read_text())
    assert saw["logins"] == {superuser: None}
    assert set(saw["seen"]) == {"self/environ", "self/cmdline", "parent/environ", "parent/cmdline"}
    for what, hexed in saw["seen"].items():
        if os.geteuid() == 0:  # as root it reads them all; another user may be kept from its parent's
            assert not hexed.startswith("unreadable"), what
        if not hexed.startswith("unreadable"):
            assert password not in bytes.fromhex(hexed), what

    prepared = prepare(sandbox, load_suite(patterns=[TASK])[0])
    run_db = sandbox.dbs.create_run(prepared.template)

    async def tool_server_sees() -> list[bytes]:
        rig = await FaultRig.start(sandbox, prepared, run_db)
        try:
            pids = [rig.server.pid, *(p.pid for spares in list(POOL._idle.values()) for p in spares)]
            return [
                Path(f"/proc/{pid}/{what}").read_bytes() for pid in pids for what in ("environ", "cmdline")
            ]
        finally:
            await rig.close()

    try:
        seen = asyncio.run(tool_server_sees())
    finally:
        sandbox.dbs.drop(run_db)
    assert seen and not any(password in blob for blob in seen)
    assert not any(str(sandbox.server.secret.path).encode() in blob for blob in seen)


def test_a_cluster_made_with_trust_is_upgraded_at_its_first_start(tmp_path, capfd):
    """A cluster from an earlier version: trust logins, no superuser password, no password file. Its
    first start seals it (said in one line) and keeps its databases."""
    home = tmp_path / "old-home"
    old = LocalCluster(home)
    old.ensure_running()
    try:
        with psycopg.connect(old.conninfo("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE kept")
            conn.execute("ALTER ROLE agentrel PASSWORD NULL")
            hba = conn.execute("SHOW hba_file").fetchone()[0]
            conn.execute(f"COPY (SELECT 'local all all trust') TO '{hba}'")
            conn.execute("SELECT pg_reload_conf()")
        old.secret.remove()
        address = without_secret(old.conninfo("postgres"))
        for _ in range(200):  # the postmaster reloads pg_hba.conf a moment after the signal
            if lets_anyone_in(address):
                break
            time.sleep(0.05)
        assert lets_anyone_in(address)  # what the earlier version made
        capfd.readouterr()

        LocalCluster(home).ensure_running()
        said = capfd.readouterr().err
        assert "upgraded the sandbox server" in said and "scram-sha-256" in said
        assert not lets_anyone_in(address)
        with psycopg.connect(old.conninfo("postgres"), autocommit=True) as conn:
            assert conn.execute("SELECT 1 FROM pg_database WHERE datname = 'kept'").fetchone() == (1,)
            rules = conn.execute("SELECT DISTINCT auth_method FROM pg_hba_file_rules").fetchall()
            assert rules == [("scram-sha-256",)]
        assert Path(hba).read_text().splitlines() == list(HBA_LINES)
    finally:
        LocalCluster(home).destroy()


def test_a_cluster_whose_password_file_is_gone_gets_a_new_password(tmp_path, capfd):
    """AGENTREL_HOME removed by hand while the cluster lived outside it (root's fallback under /var/tmp):
    the stopped cluster gets a new password in single-user mode rather than becoming unusable."""
    home = tmp_path / "lost-home"
    first = LocalCluster(home)
    first.ensure_running()
    try:
        first.stop()
        first.secret.remove()
        capfd.readouterr()
        again = LocalCluster(home)
        again.ensure_running()
        assert "had lost its password file" in capfd.readouterr().err
        assert not lets_anyone_in(without_secret(again.conninfo("postgres")))
        with psycopg.connect(again.conninfo("postgres")) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        LocalCluster(home).destroy()
