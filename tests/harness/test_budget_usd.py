"""`audit --until detect --budget-usd X`: dollars converted to runs at a declared or recorded per-run
cost; an unknown cost is refused (never $0), and every bad value is one line with exit 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentrel.harness.errors import UsageError
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.run_cost import recorded_cost_per_run
from agentrel.harness.stopping import StoppingRule, budget_runs_for

TASK = "itsm-cab-window"
ORACLE = "scripted/oracle"
BASE = ["agentrel", "audit", "-m", ORACLE, "--tasks", TASK, "--until", "detect"]


@pytest.fixture(scope="module")
def recorded(sandbox, tmp_path_factory) -> list[dict]:
    """Three real records of the oracle (a scripted agent records $0): re-costed by each test."""
    from agentrel.harness.run.audit import audit

    results = tmp_path_factory.mktemp("cost") / "r"
    audit(models=[ORACLE], k=3, tasks=[TASK], concurrency=1, results=results, sandbox=sandbox,
          show_progress=False)  # fmt: skip
    return [json.loads(line) for line in (results / "runs.jsonl").read_text().splitlines()]


def write_results(directory: Path, recs: list[dict]) -> Path:
    directory.mkdir(parents=True)
    (directory / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return directory


def record(base: list[dict], model: str, index: int, cost: float | None) -> dict:
    return {**base[index], "model": model, "run_id": f"{model}-{index}", "cost_usd": cost}


def test_dollars_to_runs_in_exact_decimals() -> None:
    assert budget_runs_for(10.0, 0.5) == 20
    assert budget_runs_for(0.3, 0.1) == 3  # float division gives 2.9999999999999996, floor 2
    assert budget_runs_for(0.29, 0.1) == 2
    assert budget_runs_for(0.05, 0.1) == 0  # less than one run buys none


def test_the_rule_keeps_the_dollars_and_the_rate_they_were_converted_at() -> None:
    rule = StoppingRule.parse("detect", 0.5, 0.9, "union", None, budget_usd=1.5, cost_per_run_usd=0.5)
    entry = rule.manifest_entry(1)
    assert (entry["budget_runs"], entry["budget_usd"], entry["cost_per_run_usd"]) == (3, 1.5, 0.5)
    assert StoppingRule.from_manifest(entry) == rule


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"budget_usd": 5.0}, "--budget-usd needs the cost of one run: declare it with --cost-per-run"),
        ({"budget_usd": 5.0, "cost_per_run_usd": 0.0}, "a run that costs $0 cannot be bounded by dollars"),
        ({"budget_usd": -1.0, "cost_per_run_usd": 0.1}, "--budget-usd must be a positive number"),
        ({"budget_usd": 0.0, "cost_per_run_usd": 0.1}, "--budget-usd must be a positive number"),
        ({"budget_usd": float("nan"), "cost_per_run_usd": 0.1}, "--budget-usd must be a positive number"),
        ({"budget_usd": 1.0, "cost_per_run_usd": 0.1, "budget_runs": 4}, "not both"),
    ],
)
def test_bad_budgets_are_refused(kw: dict, needle: str) -> None:
    with pytest.raises(UsageError, match=needle.replace("$", r"\$")):
        StoppingRule.parse("detect", 0.5, 0.9, "union", None, **kw)


def test_recorded_cost_is_the_highest_per_model_mean(recorded, tmp_path: Path) -> None:
    recs = [record(recorded, "a", i, c) for i, c in enumerate([0.01, 0.03])]
    recs += [record(recorded, "b", i, 0.05) for i in range(3)]
    results = write_results(tmp_path / "r", recs)
    assert len(ResultsDir(results).records()) == 5
    assert recorded_cost_per_run(results, ["a"]) == pytest.approx(0.02)
    assert recorded_cost_per_run(results, ["a", "b"]) == pytest.approx(0.05)


def test_an_unknown_recorded_cost_is_refused_not_taken_as_zero(recorded, tmp_path: Path) -> None:
    """The attack: runs whose cost was never known (no price) would make every budget infinite at $0."""
    recs = [record(recorded, "a", 0, 0.02), record(recorded, "a", 1, None)]
    results = write_results(tmp_path / "r", recs)
    with pytest.raises(UsageError, match=r"1 of 2 recorded runs of a have no cost \(unknown, not \$0\)"):
        recorded_cost_per_run(results, ["a"])
    with pytest.raises(UsageError, match="no recorded run of b"):
        recorded_cost_per_run(results, ["b"])
    with pytest.raises(UsageError, match=r"no runs\.jsonl there"):
        recorded_cost_per_run(tmp_path, ["a"])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--budget-usd", "-1", "--cost-per-run", "0.1"], "--budget-usd must be a positive number"),
        (["--budget-usd", "0", "--cost-per-run", "0.1"], "--budget-usd must be a positive number"),
        (["--budget-usd", "lots", "--cost-per-run", "0.1"], "Invalid value for '--budget-usd'"),
        (["--budget-usd", "inf", "--cost-per-run", "0.1"], "--budget-usd must be a positive number"),
        (["--budget-usd", "5"], "declare it with --cost-per-run USD"),
        (["--budget-usd", "5", "--cost-per-run", "0"], "cannot be bounded by dollars"),
        (["--budget-usd", "5", "--budget-runs", "3", "--cost-per-run", "1"], "not both"),
        (["--cost-per-run", "0.1"], "--cost-per-run and --cost-from go with --budget-usd"),
        (["--plan", "--cost-per-run", "-0.1"], "--cost-per-run must be a positive number"),
        (["--budget-usd", "5", "--cost-from", "nowhere"], "--cost-from nowhere: no runs.jsonl there"),
    ],
)
def test_audit_cli_refuses_bad_budgets_in_one_line(tmp_path, monkeypatch, capsys, args, needle) -> None:
    from agentrel.harness.cli.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [*BASE, "--target-p", "0.1", *args])
    with pytest.raises(SystemExit) as stop:
        main()
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and needle in err[0], err
    assert not (tmp_path / "results").exists()  # nothing was planned or written


def test_a_recorded_cost_of_zero_cannot_bound_dollars(recorded, tmp_path, monkeypatch, capsys) -> None:
    from agentrel.harness.cli.main import main

    earlier = write_results(tmp_path / "earlier", recorded)
    assert {r["cost_usd"] for r in recorded} == {0.0}
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        sys, "argv", [*BASE, "--target-p", "0.1", "--budget-usd", "5", "--cost-from", str(earlier)]
    )
    with pytest.raises(SystemExit) as stop:
        main()
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and "use --budget-runs" in err[0]


def test_audit_cli_refuses_unknown_recorded_costs(recorded, tmp_path, monkeypatch, capsys) -> None:
    from agentrel.harness.cli.main import main

    earlier = write_results(tmp_path / "earlier", [{**r, "cost_usd": None} for r in recorded])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        sys,
        "argv",
        [*BASE, "--target-p", "0.1", "--budget-usd", "5", "--cost-from", str(earlier)],
    )
    with pytest.raises(SystemExit) as stop:
        main()
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and "have no cost (unknown, not $0)" in err[0]
    assert len((earlier / "runs.jsonl").read_text().splitlines()) == 3  # the earlier results untouched


def test_a_draft_plan_says_the_most_runs_and_dollars_it_may_spend(sandbox) -> None:
    """The most a sequential audit can cost is known before any run: every preregistered run, unless a
    budget caps it, times the declared cost of one (the cost is shown, never put in the protocol)."""
    from agentrel.harness.cli.audit import sequential_plan_line
    from agentrel.harness.stopping import StoppingRule

    rule = StoppingRule.parse("detect", 0.05, 0.95, "union", None)
    assert sequential_plan_line(rule, 590, 0.02).startswith("at most 590 run(s)")
    assert sequential_plan_line(rule, 590, 0.02).endswith("at most $11.80 at $0.02 a run")
    assert "--cost-per-run" in sequential_plan_line(rule, 590, None)
    capped = StoppingRule.parse("detect", 0.05, 0.95, "union", None, budget_runs=100)
    assert sequential_plan_line(capped, 590, 0.5).startswith("at most 100 run(s)")
    assert "the budget counts retries too" in sequential_plan_line(capped, 590, 0.5)
