"""Invalid runs and retried attempts: counted per cell, shown beside every rate, never in a rate.

The results directory mixes every case the harness writes: valid runs, a provider failure retried
into a valid run, a run whose three attempts all failed, invalid attempts that carry a damaging
verdict, records from before run statuses existed, and a status name analysis has never seen.
"""

from __future__ import annotations

import csv
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from agentrel.analysis.attempts import decide
from agentrel.analysis.cells import cell_table
from agentrel.analysis.inputs import load_input
from agentrel.analysis.intervals import clopper_pearson
from agentrel.analysis.normalized import InputError
from agentrel.analysis.outputs import write_report, write_summary_json
from agentrel.analysis.pipeline import analyze
from agentrel.harness.cli import analyze as analyze_cli
from agentrel.harness.cli import export as export_cli
from agentrel.harness.results.reading import RunReading
from tests.analysis.conftest import event, record, write_results

PIPELINE_EVENTS = [{"kind": "tool_call", "ordinal": 0, "tool": "run_sql", "detail": "select 1"}]


def attempt(
    task: str,
    run: int,
    outcome: str | None,
    status: str | None,
    n: int | None = 1,
    *,
    model: str = "m",
    error: dict[str, str] | None = None,
    damage: bool = False,
    mutated: bool | None = None,
) -> dict[str, Any]:
    """One attempt line in the new format (status and attempt omitted when None: an old record)."""
    events = [event("40.00")] if damage else None
    rec = record(model, task, run, outcome, events=events, error=error, mutated=mutated)
    if status is not None:
        rec["status"] = status
        rec["events"] = PIPELINE_EVENTS
        rec["transcript_digest"] = None
    if n is not None:
        rec["attempt"] = n
    return rec


PROVIDER = {"kind": "provider", "message": "429 after 5 retries"}
HARNESS = {"kind": "harness", "message": "clone failed"}


def mixture() -> list[dict[str, Any]]:
    return [
        # t1: five valid runs (2 damaging) and one invalid run.
        attempt("t1", 0, "FAIL_DAMAGE", "valid", damage=True),
        attempt("t1", 1, "FAIL_DAMAGE", "valid", damage=True),
        attempt("t1", 2, "PASS", "valid"),
        attempt("t1", 3, "PASS", "valid"),
        # The provider failed, mid-run damage was seen, the retry was clean: a valid, safe run.
        attempt("t1", 4, "FAIL_DAMAGE", "provider_invalid", 1, error=PROVIDER, damage=True),
        attempt("t1", 4, "PASS", "valid", 2),
        # Three invalid attempts (the cap): an invalid run, whatever its last verdict says.
        attempt("t1", 5, None, "provider_invalid", 1, error=PROVIDER),
        attempt("t1", 5, None, "harness_invalid", 2, error=HARNESS),
        attempt("t1", 5, "FAIL_DAMAGE", "provider_invalid", 3, error=PROVIDER, damage=True),
        # t2: every attempt of every run invalid: the cell has no rate but stays in every table.
        *(attempt("t2", r, None, "harness_invalid", a, error=HARNESS) for r in (0, 1) for a in (1, 2, 3)),
        # t3: records from before statuses existed (no status, no attempt).
        attempt("t3", 0, "PASS", None, None),
        attempt("t3", 1, "FAIL_DAMAGE", None, None, damage=True),
        attempt("t3", 2, "PASS", None, None, error=HARNESS),  # a harness error: invalid
        attempt("t3", 3, None, None, None),  # no verdict: invalid
        # An agent error after a mutation is damage by a valid run, exactly as before.
        attempt("t3", 4, "FAIL_SAFE", None, None, error={"kind": "agent", "message": "x"}, mutated=True),
        # t4: a status from a later harness, and a contradictory "valid" without a verdict.
        attempt("t4", 0, "PASS", "valid"),
        attempt("t4", 1, "PASS", "invalid_injection"),
        attempt("t4", 2, None, "valid"),
    ]


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    return write_results(tmp_path / "mixed", mixture())


def _cell(cells: pd.DataFrame, task: str) -> pd.Series:
    return cells[cells["task"] == task].iloc[0]


def test_decisive_attempts_and_cell_counts(mixed):
    loaded = load_input(mixed)
    assert len(loaded.runs) == 5 + 3 + 1 and len(loaded.invalid) == 1 + 2 + 2 + 2
    assert loaded.invalid_by_status() == {
        "harness_invalid": 5,
        "invalid_injection": 1,
        "provider_invalid": 1,
    }
    assert len(loaded.superseded) == 1 + 2 + 4  # t1 run 4, t1 run 5, t2's two runs
    assert any(
        "7 attempt(s) superseded" in n and "4 run(s) retried, 1 of them ended valid" in n
        for n in loaded.notes
    )
    assert any("1 attempt(s) marked valid without a verdict" in n for n in loaded.notes)

    cells = cell_table(loaded.runs, loaded.invalid, superseded=loaded.superseded)
    t1 = _cell(cells, "t1")
    assert (t1["n"], t1["x"], t1["invalid"], t1["invalid_provider"], t1["retried"]) == (5, 2, 1, 1, 3)
    assert t1["p_hat"] == pytest.approx(2 / 5)
    assert (t1["p_invalid_safe"], t1["p_invalid_damaging"]) == pytest.approx((2 / 6, 3 / 6))
    lo, hi = clopper_pearson(2, 5)
    assert (t1["ci_low"], t1["ci_high"]) == pytest.approx((float(lo), float(hi)))
    assert t1["dollars_total"] == 80  # the invalid attempts' $40 events are not damage

    t2 = _cell(cells, "t2")
    assert (t2["n"], t2["x"], t2["invalid"], t2["invalid_harness"], t2["retried"]) == (0, 0, 2, 2, 4)
    assert pd.isna(t2["p_hat"]) and pd.isna(t2["ci_low"]) and not t2["always_damage"]
    assert (t2["p_invalid_safe"], t2["p_invalid_damaging"]) == (0.0, 1.0)

    t3 = _cell(cells, "t3")
    assert (t3["n"], t3["x"], t3["invalid_harness"], t3["errored"]) == (3, 2, 2, 1)
    t4 = _cell(cells, "t4")
    assert (t4["n"], t4["x"], t4["invalid"], t4["invalid_other"], t4["invalid_harness"]) == (1, 0, 2, 1, 1)


def test_no_invalid_verdict_enters_events(mixed):
    loaded = load_input(mixed)
    assert len(loaded.events) == 3  # t1 runs 0 and 1, t3 run 1: valid runs only
    assert set(zip(loaded.events["task"], loaded.events["run"], strict=True)) == {
        ("t1", "0"),
        ("t1", "1"),
        ("t3", "1"),
    }
    t1_5 = loaded.invalid[(loaded.invalid["task"] == "t1") & (loaded.invalid["run"] == "5")].iloc[0]
    assert (t1_5["status"], t1_5["attempts"], t1_5["outcome"]) == ("provider_invalid", 3, "FAIL_DAMAGE")


def test_rates_equal_those_over_valid_runs_only(mixed, tmp_path):
    """The same analysis without any invalid or superseded line gives the same rates."""
    loaded = load_input(mixed)
    keep = {(r.task, int(r.run)) for r in loaded.runs.itertuples()}
    valid_only = [
        r
        for r in mixture()
        if (r["task"], r["run_index"]) in keep
        and r.get("status", "valid") == "valid"
        and (r["error"] or {}).get("kind") != "harness"
    ]
    clean = load_input(write_results(tmp_path / "valid", valid_only))
    assert len(clean.invalid) == 0 and len(clean.runs) == len(loaded.runs)
    mixed_a, clean_a = analyze(loaded, n_boot=200, seed=3), analyze(clean, n_boot=200, seed=3)
    cols = ["model", "task", "condition", "n", "x", "p_hat", "ci_low", "ci_high", "expected_dollars_per_run"]
    rated = mixed_a.cells[mixed_a.cells["n"] > 0][cols].reset_index(drop=True)
    pd.testing.assert_frame_equal(rated, clean_a.cells[cols].reset_index(drop=True))
    for mp, cp in zip(mixed_a.pools, clean_a.pools, strict=True):
        assert mp.spec == cp.spec and mp.runs == cp.runs and mp.damaged_runs == cp.damaged_runs
        assert mp.stats == pytest.approx(cp.stats, nan_ok=True)
        assert mp.invalid == 7 and cp.invalid == 0
        assert mp.damage_rate_bounds == pytest.approx((4 / 16, 11 / 16))


def test_invalid_column_in_every_output(mixed, tmp_path):
    result = analyze(load_input(mixed), n_boot=50, seed=0)
    out = tmp_path / "report"
    write_report(result, out, figures=True)
    summary = json.loads(write_summary_json(result, tmp_path / "s.json").read_text())

    with (out / "cells.csv").open() as fh:
        rows = {r["task"]: r for r in csv.DictReader(fh)}
    header = list(rows["t1"])
    assert header.index("invalid") == header.index("n") + 1
    assert {"invalid_provider", "invalid_harness", "invalid_other", "retried"} <= set(header)
    assert (rows["t1"]["n"], rows["t1"]["invalid"], rows["t1"]["p_hat"]) == ("5", "1", "0.400000")
    assert float(rows["t1"]["p_invalid_safe"]) == pytest.approx(1 / 3)
    assert float(rows["t1"]["p_invalid_damaging"]) == pytest.approx(0.5)
    t2 = rows["t2"]  # all invalid: present, with no rate
    assert (t2["n"], t2["invalid"], t2["p_hat"], t2["ci_low"], t2["k_point"]) == ("0", "2", "", "", "")
    assert t2["expected_dollars_per_run"] == "" and t2["dollars_total"] == ""
    assert (rows["t1"]["k_point"], rows["t1"]["k_conservative"]) == ("6", "38")  # integers, not 6.0

    assert summary["schema"] == "agentrel-analysis/3"
    assert summary["runs"] == 9 and summary["invalid_runs"] == 7 and summary["retried_attempts"] == 7
    assert summary["attempts"] == len(mixture()) and summary["unrated_cells"] == 1
    cells = {c["task"]: c for c in summary["cells"]}
    assert cells["t1"]["invalid"] == 1 and cells["t1"]["invalid_by_status"] == {"provider_invalid": 1}
    assert cells["t1"]["damage_rate_bounds"] == pytest.approx([1 / 3, 0.5])
    assert cells["t2"]["n"] == 0 and cells["t2"]["p_hat"] is None and cells["t2"]["ci_high"] is None
    assert cells["t2"]["invalid_by_status"] == {"harness_invalid": 2}
    assert cells["t4"]["invalid_by_status"] == {"harness_invalid": 1, "invalid_injection": 1}
    pool = summary["pools"][0]
    assert pool["invalid"] == 7 and pool["unrated_cells"] == 1 and pool["runs"] == 9

    report = (out / "report.md").read_text()
    assert "9 valid and 7 invalid runs (harness_invalid 5, invalid_injection 1, provider_invalid 1)" in report
    assert "Note: 7 attempt(s) superseded by a later attempt of the same run" in report
    assert "| all models | clean | 3 (+1 with no valid run) |" in report
    assert "| agent | task | condition | x/n | invalid | p̂ |" in report
    assert "| m | t1 | clean | 2/5 | 1 | 0.400 |" in report
    assert "| m | t4 | clean | 0/1 | 2 | 0.000 |" in report  # listed although it never damaged
    assert "| m | t2 | clean | 2 | 0 | 2 | 0 | n/a |" in report
    assert "damaged runs | invalid |" in report
    html = (out / "report.html").read_text()
    assert "<th>invalid</th>" in html and "<td>n/a</td>" in html


def test_cli_prints_invalid_counts(mixed, tmp_path):
    root = typer.Typer()
    analyze_cli.register(root)
    export_cli.register(root)
    runner = CliRunner()
    counts = "9 valid runs, 7 invalid (harness_invalid 5, invalid_injection 1, provider_invalid 1) in 4 cells"
    res = runner.invoke(root, ["analyze", str(mixed), "--no-figures", "--bootstrap", "20"])
    assert res.exit_code == 0, res.output
    assert f"{counts}; 7 retried attempts" in res.stderr
    res = runner.invoke(root, ["export", "cells", str(mixed), "-o", str(tmp_path / "c.csv")])
    assert res.exit_code == 0, res.output
    assert f"{counts}; 7 retried attempts" in res.stderr
    res = runner.invoke(root, ["export", "damages", str(mixed), "-o", str(tmp_path / "d.csv")])
    assert res.exit_code == 0, res.output
    assert f"3 damage events from {counts}" in res.stderr
    res = runner.invoke(root, ["required-k", "--from", str(mixed)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    # Outside a terminal the table is plain columns (two spaces apart), nothing cut.
    t2 = next(line for line in res.stdout.splitlines() if re.search(r"\s{2}t2\s{2}", line))
    assert re.split(r"\s{2,}", t2.strip())[3:6] == ["0/0", "2", "–"]


@pytest.mark.parametrize("status", ["invalid_injection", "weird_new_status", "VALID", "valid ", ""])
def test_unknown_status_names_count_as_invalid(tmp_path, status):
    recs = [attempt("t", 0, "PASS", "valid"), attempt("t", 1, "PASS", status)]
    loaded = load_input(write_results(tmp_path / "r", recs))
    assert len(loaded.runs) == 1 and len(loaded.invalid) == 1
    assert loaded.invalid["status"].iloc[0] == (status or "unnamed_invalid")
    cells = cell_table(loaded.runs, loaded.invalid)
    assert (cells["n"].item(), cells["invalid"].item(), cells["invalid_other"].item()) == (1, 1, 1)


def test_decisive_attempt_is_the_first_valid_then_the_latest():
    def rec(n: int, status: str, outcome: str = "PASS") -> RunReading:
        return RunReading.model_validate(attempt("t", 0, outcome, status, n))

    # The first valid attempt is final: a later valid one is a re-roll, never the decision; attempt
    # numbers, not line order, say which is first.
    lines = [
        (1, rec(2, "valid", "PASS")),
        (2, rec(1, "valid", "FAIL_DAMAGE")),
        (3, rec(3, "provider_invalid")),
    ]
    decided = decide(lines)
    assert [(r.record.attempt, r.status, r.attempts) for r in decided.runs] == [(1, "valid", 3)]
    assert decided.runs[0].record.verdict.outcome == "FAIL_DAMAGE"  # the re-rolled PASS does not replace it
    assert [(r.attempt, s) for r, s in decided.superseded] == [(2, "valid"), (3, "provider_invalid")]
    # An invalid attempt never decides over a later valid one.
    decided = decide([(1, rec(1, "provider_invalid")), (2, rec(2, "valid"))])
    assert [(r.record.attempt, r.status) for r in decided.runs] == [(2, "valid")]
    decided = decide([(1, rec(2, "harness_invalid")), (2, rec(1, "provider_invalid"))])
    assert [(r.record.attempt, r.status) for r in decided.runs] == [(2, "harness_invalid")]


def test_all_runs_invalid_is_refused_with_the_counts(tmp_path):
    recs = [attempt("t", r, None, "provider_invalid", error=PROVIDER) for r in range(3)]
    with pytest.raises(InputError, match=r"no valid runs \(3 invalid \(provider_invalid 3\)\)"):
        load_input(write_results(tmp_path / "r", recs))


def test_csv_input_has_no_invalid_runs(tmp_path):
    path = tmp_path / "o.csv"
    path.write_text("model,task,run,damaged\nm,t,1,1\nm,t,2,0\n")
    loaded = load_input(path)
    assert loaded.invalid.empty and loaded.superseded.empty
    cells = cell_table(loaded.runs, loaded.invalid)
    assert (cells["n"].item(), cells["invalid"].item(), cells["p_hat"].item()) == (2, 0, 0.5)
    assert (cells["p_invalid_safe"].item(), cells["p_invalid_damaging"].item()) == (0.5, 0.5)


def test_an_agent_without_a_valid_run_stays_in_the_all_pool(tmp_path):
    recs = [
        *(attempt("t1", r, "FAIL_DAMAGE" if r == 0 else "PASS", "valid", damage=r == 0) for r in range(4)),
        *(attempt("t1", r, None, "provider_invalid", model="m2", error=PROVIDER) for r in range(3)),
    ]
    result = analyze(load_input(write_results(tmp_path / "r", recs)), n_boot=20, seed=0)
    assert [(p.spec.model, p.spec.agents) for p in result.pools] == [("all", ("m", "m2")), ("m", ("m",))]
    everyone = result.pools[0]
    assert (everyone.runs, everyone.invalid, everyone.unrated_cells) == (4, 3, 1)
    assert everyone.damage_rate_bounds == pytest.approx((1 / 7, 4 / 7))
    assert everyone.stats["damage_rate"] == pytest.approx(1 / 4)
    out = tmp_path / "out"
    write_report(result, out, figures=False)
    report = (out / "report.md").read_text()
    assert "No valid run, so no pool and no rate: m2 under clean (3 invalid)." in report
    assert "| m2 | t1 | clean | 3 | 3 | 0 | 0 | n/a |" in report


def test_reads_attempts_written_by_the_harness_record_model(tmp_path):
    """Contract check: attempts appended by harness.results load with the same decisive attempt."""
    from agentrel.dsl.verdict import Verdict
    from agentrel.harness.results.directory import ResultsDir
    from agentrel.harness.results.record import RunError as HarnessError
    from agentrel.harness.results.record import RunRecord as HarnessRecord

    def verdict(outcome: str) -> Verdict:
        return Verdict(
            outcome=outcome,
            sub_label="completed_damage" if outcome == "FAIL_DAMAGE" else "completed_clean",
            inconsistent=False,
            mutated=outcome == "FAIL_DAMAGE",
            changes=0,
            events=[],
            max_severity=None,
            dollars=Decimal("0"),
            irreversibility=[],
            requirements=[],
        )

    def rec(run: int, n: int, status: str, outcome: str | None) -> HarnessRecord:
        error = None if status == "valid" else HarnessError(kind=status.split("_")[0], message="x")
        return HarnessRecord(
            run_id=f"m__t__clean__{run:04d}",
            model="m",
            agent_kind="model",
            task="t",
            condition="clean",
            run_index=run,
            seed="s",
            protocol_hash="a" * 64,
            attempt=n,
            status=status,
            verdict=verdict(outcome) if outcome else None,
            error=error,
            before_digest="d",
            started_at="2026-01-01T00:00:00Z",
        )

    results = ResultsDir(tmp_path / "r")
    results.open()
    for r in (
        rec(0, 1, "provider_invalid", "FAIL_DAMAGE"),
        rec(0, 2, "valid", "PASS"),
        rec(1, 1, "harness_invalid", None),
        rec(1, 2, "harness_invalid", "FAIL_DAMAGE"),
        rec(2, 1, "valid", "FAIL_SAFE"),
    ):
        results.append(r)
    (tmp_path / "r" / "manifest.json").write_text(json.dumps({"protocol_hash": "a" * 64, "agents": []}))
    loaded = load_input(tmp_path / "r")
    assert sorted(loaded.runs["run"]) == ["0", "2"] and not loaded.runs["damaged"].any()
    assert loaded.invalid[["run", "status", "attempts"]].values.tolist() == [["1", "harness_invalid", 2]]
    assert len(loaded.superseded) == 2 and loaded.events.empty


def test_damage_before_a_provider_failure_is_a_valid_damaging_run(tmp_path):
    """As the harness decides: an attempt whose dumped state holds damage is valid whoever failed later;
    without damage the same failure makes it invalid."""
    recs = [
        attempt("t", 0, "FAIL_DAMAGE", "valid", damage=True, error=PROVIDER),
        attempt("t", 1, "FAIL_SAFE", "valid", error=PROVIDER),  # contradictory: no damage to stand
    ]
    loaded = load_input(write_results(tmp_path / "r", recs))
    assert len(loaded.runs) == 1 and bool(loaded.runs["damaged"].iloc[0])
    assert len(loaded.invalid) == 1


@pytest.mark.parametrize(
    ("outcome", "dollars_shown", "fragment"),
    [("PASS", None, "outcome PASS next to 1 damage event"), ("FAIL_DAMAGE", "0", "add up to 40.00")],
)
def test_a_verdict_that_contradicts_itself_is_a_record_error_not_zero_dollars(
    tmp_path, outcome, dollars_shown, fragment
):
    edited = attempt("t", 1, "FAIL_DAMAGE", "valid", damage=True)
    edited["verdict"]["outcome"] = outcome
    if dollars_shown is not None:
        edited["verdict"]["dollars"] = dollars_shown
    loaded = load_input(write_results(tmp_path / "r", [attempt("t", 0, "PASS", "valid"), edited]))
    assert len(loaded.runs) == 1 and loaded.events.empty
    assert loaded.invalid["status"].tolist() == ["record_error"]
    assert any(fragment in note for note in loaded.notes), loaded.notes
