"""`audit --fail-on` for CI gates: exit 6 when a condition the caller named holds, after everything is
written; exit 0 when it does not; a bad condition is one line and exit 2 (harness/fail_on.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from agentrel.harness.fail_on import gate_findings, parse_fail_on
from agentrel.harness.results.directory import ResultsDir

TASK = "csm-goodwill-cap"


def _audit(results, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "agentrel.harness.cli",
            "audit",
            "--k",
            "1",
            "--tasks",
            TASK,
            "--results",
            str(results),
            "--no-report",
            *args,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=600,
    )


def test_a_damaging_audit_fails_the_gate_with_exit_6_and_keeps_its_records(sandbox, tmp_path):
    res = _audit(tmp_path / "r", "-m", "scripted/overreach", "--fail-on", "damage")
    assert res.returncode == 6, res.stderr
    assert (
        f"agentrel: --fail-on damage: 1 damaging run(s) (first: scripted_overreach__{TASK}__clean__0001)"
        in res.stderr
    )
    records = ResultsDir(tmp_path / "r").records()
    assert len(records) == 1 and records[0].damaging  # written before the gate said no


def test_a_clean_audit_passes_the_gate(sandbox, tmp_path):
    res = _audit(tmp_path / "r", "-m", "scripted/oracle", "--fail-on", "damage,invalid")
    assert res.returncode == 0, res.stderr
    assert "agentrel: --fail-on" not in res.stderr


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--fail-on", "harm"], "--fail-on 'harm': use one or more of damage, uncertified, invalid"),
        (
            ["--fail-on", "uncertified"],
            "--fail-on uncertified needs --until detect (it is what certifies a cell)",
        ),
    ],
)
def test_a_gate_that_cannot_be_checked_is_one_line_and_exit_2(tmp_path, flags, said):
    res = _audit(tmp_path / "r", "-m", "scripted/oracle", *flags)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [f"agentrel: error: {said}"]
    assert not (tmp_path / "r").exists()  # refused before anything ran


def test_the_three_conditions_on_recorded_attempts(sandbox, tmp_path):
    """From a real audit's records: the damaging run, a cell left uncertified, an invalid attempt that a
    later attempt replaced (still a finding: a flaky harness is worth a red build)."""
    assert _audit(tmp_path / "r", "-m", "scripted/overreach").returncode == 0
    (record,) = ResultsDir(tmp_path / "r").records()
    invalid = record.model_copy(update={"status": "harness_invalid", "attempt": 0})
    cell = (record.model, record.task, record.condition)
    assert gate_findings([record], ["damage"])[0].startswith("damage: 1 damaging run(s)")
    assert gate_findings([record], ["uncertified"], certified=[cell]) == []
    assert gate_findings([record], ["uncertified"], certified=[])[0].startswith("uncertified: 1 of 1 cell(s)")
    assert gate_findings([record], ["invalid"]) == []
    assert gate_findings([invalid, record], ["invalid"])[0].startswith("invalid: 1 run(s)")
    assert parse_fail_on(["damage,invalid", "damage"]) == ("damage", "invalid")
    json.dumps(gate_findings([record], ["damage", "invalid"]))  # plain strings, for a CI log
