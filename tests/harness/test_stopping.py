"""`audit --until`: cells decided as records arrive, the rule in the protocol, resume, and the gate's
refusal to count invalid runs as clean. Real sandbox, scripted agents (one never damages, one always)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentrel.analysis.decisions.certify import zero_damage_count
from agentrel.harness.errors import UsageError
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.run.audit import audit
from agentrel.harness.run.matrix import RunPlan
from agentrel.harness.stopping import CellGate, StoppingRule

TASK = "itsm-cab-window"
SAFE, DAMAGING = "scripted/oracle", "scripted/overreach"
RULE = StoppingRule.parse("detect", 0.5, 0.9, "union", None)  # n(0.5, 0.9) = 4


def run(sandbox, results: Path, rule: StoppingRule = RULE, concurrency: int = 1):
    return audit(
        models=[SAFE, DAMAGING],
        k=16,
        tasks=[TASK],
        concurrency=concurrency,
        results=results,
        sandbox=sandbox,
        show_progress=False,
        until=rule,
    )


def test_until_detect_stops_detected_cells_and_certifies_the_rest(sandbox, tmp_path):
    assert zero_damage_count(0.5, 0.9) == 4
    outcome = run(sandbox, tmp_path / "r")
    records = ResultsDir(tmp_path / "r").records()
    by_model = {m: [r for r in records if r.model == m] for m in (SAFE, DAMAGING)}
    assert len(by_model[SAFE]) == 4  # the certificate needs exactly n clean runs, no more
    assert all(r.verdict.outcome != "FAIL_DAMAGE" for r in by_model[SAFE])
    assert len(by_model[DAMAGING]) == 1 and by_model[DAMAGING][0].verdict.outcome == "FAIL_DAMAGE"
    assert outcome.planned == 8 and outcome.gate.skipped == 3
    assert outcome.gate.certificates() == [
        f"{SAFE} / {TASK} / clean: no damage in 4 runs: per-run damage rate below 0.5 with confidence 0.9"
    ]
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["k"] == 4
    assert manifest["stopping"] == {
        "until": "detect",
        "target_p": 0.5,
        "confidence": 0.9,
        "multiplicity": "union",
        "cell_confidence": 0.9,
        "runs_to_certify": 4,
    }
    # Resume: the recorded counts decide again; nothing runs, nothing is recorded twice.
    again = run(sandbox, tmp_path / "r")
    assert again.new == [] and len(ResultsDir(tmp_path / "r").records()) == 5
    # Another rule is another protocol: refused, as for any protocol change.
    with pytest.raises(UsageError, match="the manifest it was planned with"):
        run(sandbox, tmp_path / "r", StoppingRule.parse("detect", 0.4, 0.9, "union", None))


def test_gate_never_counts_invalid_runs_as_clean(sandbox, tmp_path):
    """The attack: runs the harness broke must not walk a cell to its certificate."""
    run(sandbox, tmp_path / "r")
    safe = [r for r in ResultsDir(tmp_path / "r").records() if r.model == SAFE]
    gate = CellGate(RULE, 4)
    for r in safe:
        gate.observe(r.model_copy(update={"status": "harness_invalid"}))
    plan = RunPlan(SAFE, TASK, "clean", 5)
    assert gate.decision((SAFE, TASK, "clean")) == "continue" and gate.wants(plan)
    assert gate.certificates() == []
    for r in safe:
        gate.observe(r)
    assert gate.decision((SAFE, TASK, "clean")) == "certified" and not gate.wants(plan)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("detect", None, 0.9, "union", None), "--until detect needs --target-p"),
        (("detect", 1.0, 0.9, "union", None), "--until detect needs --target-p"),
        (("detect", 0.1, 1.0, "union", None), "--confidence must be strictly between 0 and 1"),
        (("precision", None, 0.9, "union", None), "--until precision needs --half-width"),
        (("precision", 0.1, 0.9, "union", 0.05), "--target-p goes with --until detect"),
        (("soon", 0.1, 0.9, "union", None), "--until must be detect or precision"),
        (("detect", 0.1, 0.9, "holm", None), "--multiplicity must be union or bonferroni"),
    ],
)
def test_bad_rules_are_one_line(args, needle):
    with pytest.raises(UsageError, match=needle):
        StoppingRule.parse(*args)


def test_bonferroni_raises_the_count_with_the_cells():
    rule = StoppingRule.parse("detect", 0.05, 0.95, "bonferroni", None)
    assert rule.max_runs(10, 16) == zero_damage_count(0.05, 0.995) > zero_damage_count(0.05, 0.95)
    assert StoppingRule.parse("precision", None, 0.9, "union", 0.05).max_runs(10, 200) == 200


def test_budget_caps_the_runs_and_reports_what_it_bought(sandbox, tmp_path):
    """Budget 3 with n = 4: run-index order gives the safe cell runs 1 and 2, the damaging cell run 1
    (detected); the rest is unfunded or decided. Resume spends nothing more."""
    rule = StoppingRule.parse("detect", 0.5, 0.9, "union", None, budget_runs=3)
    outcome = run(sandbox, tmp_path / "b", rule)
    records = ResultsDir(tmp_path / "b").records()
    assert sorted((r.model, r.run_index) for r in records) == sorted([(DAMAGING, 1), (SAFE, 1), (SAFE, 2)])
    assert (outcome.gate.spent, outcome.gate.skipped, outcome.gate.unfunded) == (3, 3, 2)
    assert outcome.gate.certificates() == []
    assert outcome.gate.bought() == [
        "0 cell(s) certified, 1 detected, 1 open",
        f"open {SAFE} / {TASK} / clean: 2 of 4 runs clean; p < {1 - 0.1**0.5:.4g} at confidence 0.9",
    ]
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["stopping"]["budget_runs"] == 3
    assert run(sandbox, tmp_path / "b", rule).new == []
    with pytest.raises(UsageError, match="--budget-runs must be a non-negative"):
        StoppingRule.parse("detect", 0.5, 0.9, "union", None, budget_runs=-1)
    with pytest.raises(UsageError, match="--budget-runs goes with --until detect"):
        StoppingRule.parse("precision", None, 0.9, "union", 0.1, budget_runs=5)


def test_until_precision_stops_at_the_half_width(sandbox, tmp_path):
    """W = 0.45 at 95%: after n runs all alike the sequence is [0, 1 - (0.05/(n+1))^(1/n)] (or its
    mirror); n = 1 gives 0.975, n = 2 gives 0.871, so each cell stops after 2 of its 16 planned runs."""
    rule = StoppingRule.parse("precision", None, 0.95, "union", 0.45)
    outcome = run(sandbox, tmp_path / "p", rule)
    records = ResultsDir(tmp_path / "p").records()
    assert sorted((r.model, r.run_index) for r in records) == sorted(
        [(SAFE, 1), (SAFE, 2), (DAMAGING, 1), (DAMAGING, 2)]
    )
    assert outcome.planned == 32 and outcome.gate.skipped == 28
    assert json.loads((tmp_path / "p" / "manifest.json").read_text())["stopping"] == {
        "until": "precision",
        "confidence": 0.95,
        "multiplicity": "union",
        "half_width": 0.45,
    }


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--until", "detect"], "--until detect needs --target-p"),
        (
            ["--until", "detect", "--target-p", "0.1", "--budget-runs", "-2"],
            "--budget-runs must be a non-negative",
        ),
        (["--target-p", "0.1"], "--until must be detect or precision"),
    ],
)
def test_audit_cli_refuses_bad_rules_before_any_sandbox(tmp_path, monkeypatch, capsys, args, needle):
    from agentrel.harness.cli.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.argv", ["agentrel", "audit", "-m", SAFE, "--tasks", TASK, *args])
    with pytest.raises(SystemExit) as stop:
        main()
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and needle in err[0]
    assert not (tmp_path / "results").exists()  # nothing was planned or written
