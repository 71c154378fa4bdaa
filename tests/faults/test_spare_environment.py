"""A fault run's tool server serves its run's environment, whatever environment its warm spare was started
for and whatever this process's variables say.

The symptom this stops: spares were started with the driver's variables, and a spare warmed while one
environment was selected was handed a run of another after a switch; it refused the run's tools with
`--tools: unknown tool(s)`. Now the environment is a value: the binding names it, and spares are kept
per environment."""

from __future__ import annotations

import json
import os

import pytest

from agentrel.harness.faults.process import BOOT_TIMEOUT_S, ServerProcess, ServerSpec, WarmPool, _readline
from agentrel.sandbox.environments import registry

AIRLINE_TOOLS = ("get_reservation_details", "cancel_reservation")


@pytest.fixture
def run_db(sandbox):
    """A run database to connect to (the server checks it can, before READY); its tools are never called."""
    name = sandbox.dbs.create_run(sandbox.seed_template())
    yield sandbox.dbs.tool_conninfo(name)
    sandbox.dbs.drop(name)


def _bind(popen, conninfo: str, env: str, tools: tuple[str, ...]) -> str:
    bind = {
        "env": env,
        "conninfo": conninfo,
        "tools": list(tools),
        "acting_user_id": 0,
        "call_timeout_s": 5.0,
        "allow_hold": False,
    }
    assert popen.stdin is not None
    popen.stdin.write(json.dumps(bind).encode() + b"\n")
    popen.stdin.flush()
    return _readline(popen, BOOT_TIMEOUT_S)


def test_a_spare_warmed_for_one_environment_serves_the_run_of_another(run_db):
    assert "AGENTREL_ENV" not in os.environ  # nothing in this process names the airline
    pool = WarmPool(spares=0)
    popen = pool.take(registry.DEFAULT)  # started (and its tools built) for the built-in
    try:
        line = _bind(popen, run_db, "tau2-airline", AIRLINE_TOOLS)
        assert line.startswith("READY "), line
    finally:
        popen.kill()
        popen.wait()
        pool.close()


def test_the_binding_environment_is_the_one_checked(run_db, capfd):
    """The negative: the same tools bound under the built-in are refused, in one line, before READY."""
    pool = WarmPool(spares=0)
    popen = pool.take("tau2-airline")
    try:
        line = _bind(popen, run_db, registry.DEFAULT, AIRLINE_TOOLS)
        assert line == ""
        assert popen.wait(30) != 0
    finally:
        if popen.poll() is None:
            popen.kill()
            popen.wait()
        pool.close()
    err = capfd.readouterr().err
    assert "--tools: unknown tool(s) get_reservation_details, cancel_reservation" in err


def test_runs_of_two_environments_in_turn_each_get_their_tools(sandbox, run_db):
    """The audit's path (the shared pool, a spare refilled between runs): airline, then the built-in's
    own tools, then airline again, with no variable of this process changed."""
    enterprise_tools = ("get_case", "issue_credit")
    for env, tools in (
        ("tau2-airline", AIRLINE_TOOLS),
        (registry.DEFAULT, enterprise_tools),
        ("tau2-airline", AIRLINE_TOOLS),
    ):
        server = ServerProcess.start(ServerSpec(run_db, tools, 0, allow_hold=False, env=env))
        try:
            assert server.alive(), env
        finally:
            server.close()
    assert "AGENTREL_ENV" not in os.environ
