"""No silence: an audit says where its results and state go before anything slow, and slow first-use
work (a template built, a cluster created, a wheel fetched) says so as it starts (sandbox/notices.py)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import uuid

from agentrel.sandbox.notices import LOGGER


def test_an_audit_says_where_its_results_and_state_go(sandbox, tmp_path):
    results = tmp_path / "r"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentrel.harness.cli",
            "audit",
            "-m",
            "scripted/overreach",
            "--k",
            "1",
            "--tasks",
            "csm-goodwill-cap",
            "--results",
            str(results),
            "--plan",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    home = os.environ["AGENTREL_HOME"]
    said = f"agentrel: audit into {results}; AgentRel's state (AGENTREL_HOME) is {home}"
    assert said in res.stderr.splitlines()


def test_building_a_template_is_said_as_it_starts_and_when_done(sandbox, caplog):
    from agentrel.harness.tasks import load_suite

    task = load_suite()[0]
    fixture = f"-- a fixture no template has yet: {uuid.uuid4().hex}\nSELECT 1;"
    with caplog.at_level(logging.INFO, logger=LOGGER):
        template = sandbox.dbs.task_template(sandbox.seed_template(), task.id, fixture)
    said = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert said[0] == f"building the template of task {task.id} (first use of this seed and code)"
    assert said[-1].startswith(f"built the template of task {task.id} in ")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=LOGGER):  # built once: the second use is silent
        assert sandbox.dbs.task_template(sandbox.seed_template(), task.id, fixture) == template
    assert not [r for r in caplog.records if r.name == LOGGER]
    sandbox.dbs.drop(template.name)
