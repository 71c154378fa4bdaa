"""Intervals are never narrower than the data allow (issue 22, section 6).

The attacks: a cluster bootstrap over one or two tasks has one or three distinct resamples, so 4/6 read
`0.667 [0.667, 0.667]`, 0/2 read `[0, 0]`, and a comparison whose every per-cell McNemar p is 1 printed
`+38.9% [+33.3, +44.4]`. A headline or comparison interval must hold the exact one for the same counts.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from agentrel.analysis.doc import fmt_ci
from agentrel.analysis.inputs import load_input
from agentrel.analysis.intervals import paired_difference_interval, rate_interval
from agentrel.analysis.pipeline import analyze
from agentrel.analysis.report_findings import finding_row, shown_pools
from agentrel.harness.publication.compare_stats import PairedRun, cell_tests, rate_differences
from tests.analysis.conftest import event, record, write_results


def _exact(x: int, n: int, level: float = 0.95) -> tuple[float, float]:
    ci = binomtest(x, n).proportion_ci(level, method="exact")  # scipy: independent of intervals.py
    return ci.low, ci.high


def _pool_row(tmp_path, hits: dict[str, list[bool]]):
    recs = [
        record("m1", task, i, "FAIL_DAMAGE" if hit else "PASS", events=[event("10.00")] if hit else None)
        for task, runs in hits.items()
        for i, hit in enumerate(runs)
    ]
    result = analyze(load_input(write_results(tmp_path / "results", recs)), n_boot=500, seed=1)
    (pool,) = [p for p in shown_pools(result) if p.spec.model == "m1"]
    return pool, finding_row(result, pool)


@pytest.mark.parametrize(
    "hits",
    [
        {"t1": [True, True, True, True, False, False]},  # 4/6, one task: every resample is the same
        {"t1": [True, True, False], "t2": [True, True, False]},  # 4/6, two tasks with equal rates
    ],
    ids=["one-task", "two-tasks"],
)
def test_four_of_six_shows_at_least_the_exact_interval(tmp_path, hits):
    pool, row = _pool_row(tmp_path, hits)
    lo, hi = _exact(4, 6)
    boot = pool.bootstrap["damage_rate"].percentile
    assert boot[0] == pytest.approx(boot[1])  # the degenerate bootstrap the attack relied on
    assert pool.damage_rate_ci == pytest.approx((lo, hi))
    assert row[2] == f"0.667 {fmt_ci(lo, hi)}" and "[0.667, 0.667]" not in row[2]
    assert row[2] == "0.667 [0.223, 0.957]"  # by hand: Beta quantiles of 4/6 at 2.5% / 97.5%


def test_zero_of_two_never_shows_an_upper_bound_of_zero(tmp_path):
    pool, row = _pool_row(tmp_path, {"t1": [False, False]})
    assert pool.damage_rate_ci is not None
    assert pool.damage_rate_ci[1] == pytest.approx(_exact(0, 2)[1]) == pytest.approx(1 - 0.025**0.5)
    # Findings states a zero count in words with its exact one-sided bound (issue 26), never "[0, 0]".
    assert row[2] == "none in 2 runs: below 77.7% at 95% (exact one-sided)"


def test_a_zero_count_over_many_runs_does_not_print_as_zero():
    lo, hi = rate_interval(0, 100_000, (0.0, 0.0))
    assert lo == 0.0 and 0 < hi < 5e-5
    assert fmt_ci(lo, hi) == "[0.000, 0.001]"
    assert fmt_ci(0.25, 0.5) == "[0.250, 0.500]"  # ordinary endpoints round as before


def test_the_floor_never_narrows_a_wider_bootstrap():
    lo, hi = _exact(5, 20)
    assert rate_interval(5, 20, (0.01, 0.9)) == (0.01, 0.9)
    assert rate_interval(5, 20, (lo + 0.01, hi - 0.01)) == pytest.approx((lo, hi))
    assert rate_interval(5, 20, (float("nan"), float("nan"))) == pytest.approx((lo, hi))


# -- the paired difference ----------------------------------------------------------------------------------


def test_the_exact_paired_interval_against_scipy():
    for a_only, b_only, n in [(7, 0, 18), (0, 0, 5), (3, 9, 40), (18, 0, 18)]:
        e10 = _exact(a_only, n, 0.975)
        e01 = _exact(b_only, n, 0.975)
        want = (max(-1.0, e10[0] - e01[1]), min(1.0, e10[1] - e01[0]))
        assert paired_difference_interval(a_only, b_only, n) == pytest.approx(want)


@pytest.mark.parametrize(("p10", "p01", "n"), [(0.3, 0.05, 18), (0.1, 0.1, 12), (0.02, 0.0, 30)])
def test_the_exact_paired_interval_covers_by_simulation(p10, p01, n):
    """Coverage >= 95% at each (p10, p01): 4,000 multinomial draws (3 sd of MC error is ~1%)."""
    rng = np.random.default_rng(7)
    draws = rng.multinomial(n, [p10, p01, 1 - p10 - p01], size=4000)
    truth = p10 - p01
    cache: dict[tuple[int, int], tuple[float, float]] = {}
    covered = 0
    for a_only, b_only, _ in draws:
        key = (int(a_only), int(b_only))
        if key not in cache:
            cache[key] = paired_difference_interval(*key, n)
        lo, hi = cache[key]
        covered += lo <= truth <= hi
    assert covered / len(draws) >= 0.94


def _degenerate_pairs() -> list[tuple[PairedRun, PairedRun]]:
    """Two tasks, 9 pairs each, in seven cells with one discordant pair each (every McNemar p = 1):
    A damages in 3 of t1's pairs and 4 of t2's, B never. The bootstrap over two tasks is {3/9, 7/18, 4/9}."""
    pairs = []
    layout = {"t1": [3, 3, 3], "t2": [3, 2, 2, 2]}  # pairs per cell; each cell's first pair is discordant
    for task, sizes in layout.items():
        for c, size in enumerate(sizes):
            for i in range(size):

                def run(damaged: bool, task=task, c=c, i=i) -> PairedRun:
                    return PairedRun(
                        task=task, condition=f"c{c}", fault=None, run_index=i + 1, seed=f"{task}{c}{i}",
                        damaged=damaged, passed=not damaged,
                    )  # fmt: skip

                pairs.append((run(i == 0), run(False)))
    return pairs


def test_the_issue_comparison_is_not_read_as_proof():
    pairs = _degenerate_pairs()
    assert len(pairs) == 18
    assert {t.p_value for t in cell_tests(pairs) if t.axis == "damage"} == {1.0}
    (d,) = [x for x in rate_differences(pairs, seed=0, n_boot=2000, level=0.95) if x.stratum == "all"][:1]
    assert d.axis == "damage" and d.difference == pytest.approx(7 / 18)
    assert d.percentile == pytest.approx((3 / 9, 4 / 9))  # the attack's +33.3 .. +44.4
    assert (d.a_only, d.b_only) == (7, 0)
    assert d.exact == pytest.approx(paired_difference_interval(7, 0, 18))
    assert d.interval[0] <= d.exact[0] < 0.0 < 3 / 9  # the exact interval does not exclude no difference
    assert d.interval[1] >= d.exact[1] > 4 / 9


def test_the_view_does_not_print_a_zero_upper_bound():
    from agentrel.harness.view.html import ci_pct

    lo, hi = rate_interval(0, 100_000, None)
    assert ci_pct(lo, hi) == "[0.0%, 0.1%]"
    assert ci_pct(0.25, 0.5) == "[25.0%, 50.0%]"
