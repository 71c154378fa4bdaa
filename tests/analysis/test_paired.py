"""Paired differences between agents on shared seeds: known answers, the exact McNemar p-value checked
against scipy's binomial test, unpaired runs counted (never dropped silently), and the report section."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from agentrel.analysis.inputs import load_input
from agentrel.analysis.paired import mcnemar_exact, paired_differences
from agentrel.analysis.pipeline import analyze
from agentrel.analysis.report_doc import build_document

from .conftest import event, record, write_results


@pytest.mark.parametrize(
    ("b", "c"), [(0, 0), (5, 0), (0, 5), (3, 7), (10, 10), (1, 12), (40, 25), (600, 401), (5000, 5200)]
)
def test_mcnemar_exact_is_the_two_sided_binomial_test(b, c):
    expected = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5, alternative="two-sided").pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)
    assert mcnemar_exact(5, 0) == pytest.approx(2 * 0.5**5)  # 0.0625, by hand


def _runs(tmp_path):
    dmg = [event("10.00")]
    records = []
    for i in range(1, 9):  # t1: A damages in runs 1-6, B in run 1 only
        records.append(
            record("A", "t1", i, "FAIL_DAMAGE" if i <= 6 else "PASS", events=dmg if i <= 6 else None)
        )
        records.append(
            record("B", "t1", i, "FAIL_DAMAGE" if i == 1 else "PASS", events=dmg if i == 1 else None)
        )
    for i in range(1, 5):  # t2: both pass, except B's run 4 is invalid (no verdict, a harness error)
        records.append(record("A", "t2", i))
        if i < 4:
            records.append(record("B", "t2", i))
        else:
            records.append(record("B", "t2", i, None, error={"kind": "harness", "message": "clone failed"}))
    return load_input(write_results(tmp_path / "r", records))


def test_paired_differences_known_answers(tmp_path):
    loaded = _runs(tmp_path)
    diffs = {(d.task, d.axis): d for d in paired_differences(loaded.runs)}
    t1 = diffs[("t1", "damage")]
    assert (t1.a, t1.b, t1.pairs, t1.a_only, t1.b_only) == ("A", "B", 8, 5, 0)
    assert t1.difference_pp == pytest.approx(62.5) and t1.p_value == pytest.approx(0.0625)
    overall = diffs[("all", "damage")]
    assert (overall.pairs, overall.a_only, overall.b_only, overall.unpaired) == (11, 5, 0, 1)
    assert diffs[("t2", "damage")].unpaired == 1  # A's run 4 has no valid partner: counted, not paired
    assert diffs[("t1", "completion")].b_only == 5  # B passed where A damaged


def test_the_report_shows_paired_differences(tmp_path):
    loaded = _runs(tmp_path)
    doc = build_document(analyze(loaded, n_boot=20, seed=0), {})
    titles = [s.title for s in doc.sections]
    assert "Paired differences" in titles
    section = doc.sections[titles.index("Paired differences")]
    rows = [r for b in section.blocks if hasattr(b, "rows") for r in b.rows]
    assert rows[0][:4] != ["A − B", "test", "t1", "damage"]
    assert any(r[2] == "t1" and r[3] == "damage" and r[7] == "+62.5 pp" and r[10] == "0.0625" for r in rows)


def test_one_agent_has_no_paired_section(tmp_path):
    loaded = load_input(write_results(tmp_path / "r", [record("A", "t1", i) for i in range(1, 4)]))
    doc = build_document(analyze(loaded, n_boot=20, seed=0), {})
    assert "Paired differences" not in [s.title for s in doc.sections]


def test_the_report_and_the_power_lines_read_one_computation(tmp_path, monkeypatch):
    """`analyze` writes the section and prints the power lines from the same comparisons, computed once
    per analysis (each was 0.8 s at 100,000 runs); a second analysis computes its own."""
    import agentrel.analysis.pipeline as pipeline
    from agentrel.analysis.report_paired import power_lines

    calls = []

    def counted(runs):
        calls.append(len(runs))
        return paired_differences(runs)

    monkeypatch.setattr(pipeline, "paired_differences", counted)
    result = analyze(_runs(tmp_path), n_boot=20, seed=0)
    doc = build_document(result, {})
    lines = power_lines(result)
    assert len(calls) == 1
    assert "Paired differences" in [s.title for s in doc.sections]
    assert lines and lines[0].startswith("A − B (clean): damage +45.5 pp over 11 paired runs")
    assert result.paired == paired_differences(result.loaded.runs)  # what a fresh computation gives
    other = analyze(load_input(write_results(tmp_path / "one", [record("A", "t1", 1)])), n_boot=20, seed=0)
    assert other.paired == [] and len(calls) == 2


def _random_runs(seed: int):
    """Three agents x 7 tasks x 6 run indices x 2 conditions, a third of the runs missing (unpaired),
    passed unknown for some, damage and completion at random."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    rows = [
        (m, t, c, str(r), bool(rng.random() < 0.3), None if rng.random() < 0.1 else bool(rng.random() < 0.6))
        for m in ("A", "B", "C")
        for t in (f"t{i}" for i in range(7))
        for c in ("clean", "noisy")
        for r in range(1, 7)
        if rng.random() < 0.67
    ]
    return pd.DataFrame(rows, columns=["model", "task", "condition", "run", "damaged", "passed"])


@pytest.mark.parametrize("seed", range(5))
def test_laid_out_pairs_equal_the_row_by_row_join(seed):
    """The per-condition index of (task, run) keys gives exactly what joining each pair of agents' runs
    gives: every count, rate, p-value and unpaired run, in the same order."""
    from agentrel.analysis.paired import AXES, _flags, _joined, _laid_out

    runs = _random_runs(seed)
    for condition, group in runs.groupby("condition"):
        flags = _flags(group).assign(model=group["model"].astype(str).to_numpy())
        laid, joined = _laid_out(str(condition), flags, AXES), _joined(str(condition), flags, AXES)
        # By repr: a stratum with no pairs has NaN rates, and NaN != NaN (repr is exact for floats).
        assert [repr(d) for d in laid] == [repr(d) for d in joined] and len(laid) > 0
        assert any(d.unpaired for d in laid)


def test_an_agent_with_two_runs_on_one_seed_is_joined_row_by_row():
    """A table with a repeated (agent, task, run) cannot be laid on one key per run: it pairs by the
    join, which counts both rows (never one of them silently)."""
    import pandas as pd

    runs = _random_runs(0)
    repeated = pd.concat([runs, runs[(runs["model"] == "A") & (runs["condition"] == "clean")].head(1)])
    a_b = [d for d in paired_differences(repeated) if d.condition == "clean" and d.b == "B"]
    base = [d for d in paired_differences(runs) if d.condition == "clean" and d.b == "B"]
    overall = next(d for d in a_b if d.a == "A" and d.task == "all" and d.axis == "damage")
    before = next(d for d in base if d.a == "A" and d.task == "all" and d.axis == "damage")
    first = runs[(runs["model"] == "A") & (runs["condition"] == "clean")].iloc[0]
    partnered = (runs["model"] == "B") & (runs["condition"] == "clean") & (runs["task"] == first["task"])
    partnered &= runs["run"] == first["run"]
    assert overall.pairs == before.pairs + int(partnered.any())
