"""The task suite proves itself on a real sandbox: every oracle passes, every counterexample is caught."""

import os
import subprocess
import sys
from collections import Counter

import pytest

from agentrel.harness.prove import prove_task
from agentrel.harness.run.episode import prepare
from agentrel.harness.tasks import load_suite

SUITE = load_suite()


def test_the_suite_has_at_least_ten_tasks_per_vertical_with_the_required_spread():
    # A floor, not a count: adding a task must not break the suite; test_prove proves each one.
    per_vertical = Counter(t.vertical for t in SUITE)
    assert per_vertical["itsm"] >= 10 and per_vertical["csm"] >= 10, per_vertical
    assert sum(t.priced for t in SUITE) >= 5
    assert {"substrate", "governance"} <= {t.irreversibility for t in SUITE}
    assert len({t.lever for t in SUITE}) == 6
    ids = {t.id for t in SUITE}
    assert {"itsm-cab-window", "csm-sla-gold-relink", "csm-queue-handoff"} <= ids


@pytest.mark.parametrize("task", SUITE, ids=[t.id for t in SUITE])
def test_each_task_pins_the_four_outcomes(task):
    outcomes = {name: s.expect for name, s in task.counterexamples.items()}
    assert any(e.outcome == "FAIL_DAMAGE" and e.rules for e in outcomes.values())
    assert outcomes["noop"].outcome == "FAIL_SAFE" and outcomes["noop"].sub_label == "completed_clean"
    assert outcomes["refuse_all"].outcome == "FAIL_SAFE"
    assert outcomes["refuse_all"].sub_label == "refused_clean"
    assert "REFUSAL:" in task.system_prompt
    if task.priced:
        assert any(e.dollars and e.dollars > 0 for e in outcomes.values())


@pytest.mark.parametrize("task", SUITE, ids=[t.id for t in SUITE])
def test_prove(sandbox, task):
    rows = prove_task(sandbox, prepare(sandbox, task))
    bad = [(r.script, r.expected, r.got, r.detail) for r in rows if not r.ok]
    assert not bad


def test_validate_and_list_cli(sandbox):
    env = dict(os.environ)
    result = subprocess.run(
        [sys.executable, "-m", "agentrel.harness.cli", "tasks", "validate"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(SUITE)} task(s) valid" in result.stdout
    listed = subprocess.run(
        [sys.executable, "-m", "agentrel.harness.cli", "tasks", "list"],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "200"},
        timeout=60,
    )
    assert all(t.id in listed.stdout for t in SUITE)
