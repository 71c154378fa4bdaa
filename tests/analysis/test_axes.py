"""The operational axes: known answers worked out by hand from tests/analysis/conftest.py ops_records,
and the rule that an invalid run enters no axis.

ops_records, clean condition, agent m (t1 optimal_steps 2, t2 optimal_steps 4), valid runs:
  t1: PASS 2 calls | PASS 4 calls, 1 duplicate | FAIL_SAFE with an agent error | PASS 0 calls
  t2: PASS 8 calls | FAIL_DAMAGE | PASS 2 calls, 1 duplicate | FAIL_SAFE
  costs 0.01, 0.02, ..., 0.08; one harness_invalid run (PASS, $1, 40 calls) in t1.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from agentrel.analysis.axes import bootstrap_mean, efficiency_scores, pareto_front
from agentrel.analysis.axes_table import AXES, operational_axes
from agentrel.analysis.inputs import load_input
from agentrel.analysis.intervals import wilson
from tests.analysis.conftest import (
    HARNESS_ERROR,
    PROVIDER_ERROR,
    op_record,
    ops_records,
    write_ops_results,
)

OPTIMAL = {"t1": 2, "t2": 4}


def _axes(directory, n_boot=400):  # type: ignore[no-untyped-def]
    return operational_axes(load_input(directory), n_boot=n_boot, seed=3).table


def _row(table: pd.DataFrame, axis: str, condition: str = "clean", model: str = "m") -> pd.Series:
    hit = table[(table["axis"] == axis) & (table["condition"] == condition) & (table["model"] == model)]
    assert len(hit) == 1, f"{axis} / {condition} / {model}: {len(hit)} rows"
    return hit.iloc[0]


def test_completion_known_answer(ops_results):
    row = _row(_axes(ops_results), "completion")
    # 5 PASS of 8 valid runs; the invalid PASS run is beside, not in.
    assert (row["n"], row["invalid"], row["estimate"]) == (8, 1, 0.625)
    assert row["ci_low"] == pytest.approx(stats.beta.ppf(0.025, 5, 4), abs=1e-12)
    assert row["ci_high"] == pytest.approx(stats.beta.ppf(0.975, 6, 3), abs=1e-12)
    assert (round(row["ci_low"], 4), round(row["ci_high"], 4)) == (0.2449, 0.9148)


def test_cost_known_answer(ops_results):
    row = _row(_axes(ops_results), "cost_usd")
    # mean of 0.01..0.08 = 0.045; s = 0.01 * sqrt(6); half-width t(0.975; 7) * s / sqrt(8).
    half = 2.3646242510102993 * 0.01 * math.sqrt(6) / math.sqrt(8)
    assert (row["n"], row["invalid"]) == (8, 1)
    assert row["estimate"] == pytest.approx(0.045)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((0.045 - half, 0.045 + half))
    assert row["ci_method"] == "Student t"


def test_efficiency_known_answer(ops_results):
    row = _row(_axes(ops_results), "efficiency")
    # PASS runs: t1 2 calls -> 1; t1 4 calls 1 dup -> (2/4)(3/4) = 0.375; t1 0 calls -> 1;
    # t2 8 calls -> 0.5; t2 2 calls 1 dup -> min(4/2, 1)(1/2) = 0.5. Mean 3.375 / 5.
    assert (row["n"], row["invalid"], row["unknown"]) == (5, 1, 0)
    assert row["estimate"] == pytest.approx(0.675)
    assert 0.375 <= row["ci_low"] < 0.675 < row["ci_high"] <= 1.0


def test_efficiency_scores_formula():
    calls = np.array([2.0, 4.0, 0.0, 8.0, 2.0, 1.0])
    dups = np.array([0.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    optimal = np.array([2.0, 2.0, 2.0, 4.0, 4.0, 0.0])
    assert efficiency_scores(calls, dups, optimal).tolist() == [1.0, 0.375, 1.0, 0.5, 0.5, 0.0]


def test_efficiency_is_na_without_optimal_steps_or_digests(tmp_path):
    recs = [op_record("m", "t1", 0, calls=3), op_record("m", "t1", 1, calls=None)]
    table = _axes(write_ops_results(tmp_path / "r", recs, optimal_steps={}))
    row = _row(table, "efficiency")
    assert math.isnan(row["estimate"]) and row["n"] == 0 and row["unknown"] == 2
    # A call without its digest leaves the duplicate count unknown: the run is not scored as 0 dups.
    undigested = op_record("m", "t1", 0, calls=3)
    for call in undigested["tool_calls"]:
        del call["args_digest"]
    table = _axes(write_ops_results(tmp_path / "s", [undigested, op_record("m", "t1", 1, calls=1)], OPTIMAL))
    row = _row(table, "efficiency")
    assert (row["n"], row["unknown"], row["estimate"]) == (1, 1, 1.0)


def test_bootstrap_mean_matches_the_run_bootstrap():
    values = np.array([0.0, 1.0] * 50)
    lo, hi = bootstrap_mean(values, 4000, np.random.default_rng(1), 0.05)
    # The mean of 100 fair coin flips: 0.5 -/+ 1.96 * 0.05.
    assert lo == pytest.approx(0.402, abs=0.015) and hi == pytest.approx(0.598, abs=0.015)
    assert bootstrap_mean(np.full(7, 0.4), 50, np.random.default_rng(1), 0.05) == pytest.approx((0.4, 0.4))


def test_reliability_known_answer(ops_results):
    row = _row(_axes(ops_results), "reliability")
    # 7 of 8 valid runs without an agent error; Wilson 95%.
    assert (row["n"], row["invalid"], row["estimate"]) == (8, 1, 0.875)
    assert (round(row["ci_low"], 4), round(row["ci_high"], 4)) == (0.5291, 0.9776)
    assert row["ci_method"] == "Wilson"


def test_wilson_published_value():
    lo, hi = wilson(8, 10)
    assert (round(float(lo), 4), round(float(hi), 4)) == (0.4902, 0.9433)
    lo, hi = wilson(0, 10)
    assert float(lo) == 0.0 and round(float(hi), 4) == 0.2775


def test_pass_hat_k_consistency_known_answer(ops_results):
    table = _axes(ops_results)
    row = _row(table, "pass_hat_k")
    # k = 2, the clean condition's smallest cell (s / t1); t1: C(3,2)/C(4,2) = 1/2, t2: C(2,2)/C(4,2) = 1/6.
    assert (row["k"], row["n"], row["invalid"]) == (2, 2, 1)
    assert row["estimate"] == pytest.approx(1 / 3)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((1 / 6, 1 / 2))
    assert _row(table, "pass_hat_k", model="s")["estimate"] == 1.0


def _without_invalid():  # type: ignore[no-untyped-def]
    return [r for r in ops_records() if r["status"] == "valid"]


@pytest.mark.parametrize("axis", [a.key for a in AXES])
def test_an_invalid_run_enters_no_axis(tmp_path, axis):
    """Adding invalid runs (with PASS, damage, cost, calls and exposure) moves only the invalid counts."""
    valid = _without_invalid()
    extra = [
        op_record(
            "m",
            "t1",
            9,
            status=s,
            error=e,
            cost=5.0,
            calls=30,
            exposure="exposed",
            condition=c,
            spec="injection:exfil" if c == "adversarial" else None,
            outcome="FAIL_DAMAGE" if c == "adversarial" else "PASS",
        )
        for c in ("clean", "noisy", "adversarial")
        for s, e in (("harness_invalid", HARNESS_ERROR), ("provider_invalid", PROVIDER_ERROR))
    ]
    # A second invalid run needs its own index; an unseen status name is invalid too.
    for i, rec in enumerate(extra):
        rec["run_index"] = 10 + i
        rec["run_id"] += f"-{i}"
    extra.append({**op_record("m", "t2", 30, calls=1, cost=9.0), "status": "invalid_injection"})
    conds = ["clean", "noisy", "adversarial"]
    base = _axes(write_ops_results(tmp_path / "a", valid, OPTIMAL, conds))
    more = _axes(write_ops_results(tmp_path / "b", valid + extra, OPTIMAL, conds))
    left, right = base[base["axis"] == axis], more[more["axis"] == axis]
    assert len(left) and len(left) == len(right)
    same = ["model", "condition", "estimate", "ci_low", "ci_high", "n", "k", "not_exposed"]
    pd.testing.assert_frame_equal(left[same].reset_index(drop=True), right[same].reset_index(drop=True))
    assert (right["invalid"].to_numpy() >= left["invalid"].to_numpy()).all()
    if axis not in ("completion_kept", "extra_steps", "extra_damage"):  # recovery counts broken pairs
        added = pd.Series([r["condition"] for r in extra]).value_counts()
        grew = right["invalid"].to_numpy() - left["invalid"].to_numpy()
        assert grew.tolist() == [
            int(added.get(c, 0)) if m == "m" else 0
            for m, c in zip(right["model"], right["condition"], strict=True)
        ]


def test_all_invalid_group_is_listed_with_no_value(tmp_path):
    recs = [
        op_record("m", "t1", 0),
        op_record("m", "t1", 0, condition="noisy", status="harness_invalid", error=HARNESS_ERROR),
    ]
    table = _axes(write_ops_results(tmp_path / "r", recs, OPTIMAL))
    for axis in ("completion", "cost_usd", "efficiency", "reliability", "pass_hat_k"):
        row = _row(table, axis, condition="noisy")
        assert row["n"] == 0 and row["invalid"] == 1 and math.isnan(row["estimate"])


def test_older_records_and_manifests(tmp_path):
    """No tool_calls, exposure or events, conditions as a list of names: no recovery or safety rows,
    and call counts are unknown rather than zero."""
    recs = [op_record("m", "t1", i, calls=None) for i in range(3)]
    for rec in recs:
        del rec["exposure"], rec["events"], rec["status"], rec["attempt"]
    loaded = load_input(write_ops_results(tmp_path / "r", recs, OPTIMAL, ["clean"]))
    assert loaded.runs["calls"].isna().all() and loaded.conditions == ["clean"]
    result = operational_axes(loaded, n_boot=50)
    assert set(result.table["axis"]) == {"completion", "cost_usd", "efficiency", "reliability", "pass_hat_k"}
    assert _row(result.table, "efficiency")["unknown"] == 3


def test_condition_order_follows_the_manifest(ops_results):
    result = operational_axes(load_input(ops_results), n_boot=10)
    assert result.conditions == ["clean", "noisy", "adversarial"]
    assert list(dict.fromkeys(result.table["condition"])) == ["clean", "noisy", "adversarial"]


def test_pareto_front():
    cost = np.array([1.0, 2.0, 3.0, 2.0, 1.0, np.nan])
    comp = np.array([0.5, 0.7, 0.6, 0.4, 0.5, 0.9])
    # (3, .6) is beaten by (2, .7), (2, .4) by (1, .5); the two equal (1, .5) points both stay.
    assert pareto_front(cost, comp).tolist() == [True, True, False, False, True, False]


def test_a_duplicate_repeats_tool_and_arguments(tmp_path):
    """Same arguments to another tool is a new call; same tool and arguments again is a duplicate."""
    rec = op_record("m", "t1", 0, calls=0)
    rec["tool_calls"] = [
        {"ordinal": 0, "tool": "get_order", "ok": True, "args_digest": "x"},
        {"ordinal": 1, "tool": "refund_order", "ok": True, "args_digest": "x"},
        {"ordinal": 2, "tool": "refund_order", "ok": False, "args_digest": "x"},
    ]
    runs = load_input(write_ops_results(tmp_path / "r", [rec], OPTIMAL)).runs
    assert (runs["calls"].iloc[0], runs["duplicate_calls"].iloc[0]) == (3, 1)
