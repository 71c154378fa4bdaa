"""The noise floor (analysis/noise_floor.py): known answers for the mde, the flip share and the
single-run range, and simulations of the two guarantees (the mde is detected with the stated power; the
single-run range holds a single run at its level)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from agentrel.analysis.noise_floor import (
    design_effect,
    flips,
    min_detectable_difference,
    poisson_binomial,
    single_run_range,
)

Z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)  # 2.8016


def test_mde_known_answers() -> None:
    # p = 0, no clustering: Z^2 / (N + Z^2).
    assert min_detectable_difference(0.0, 100, 100, 0.0) == pytest.approx(Z**2 / (100 + Z**2))
    # p = 1/2: (c + 1) d^2 = 1/2, c = N / Z^2.
    assert min_detectable_difference(0.5, 400, 50, 0.0) == pytest.approx(math.sqrt(0.5 / (400 / Z**2 + 1)))
    # The root solves d = Z sqrt((p(1-p) + (p+d)(1-p-d)) DE / N) at p = 0.2, 8 runs of 40 tasks, rho 0.3.
    p, n, t, rho = 0.2, 320, 40, 0.3
    d = min_detectable_difference(p, n, t, rho)
    de = 1 + (n / t - 1) * rho
    assert design_effect(n, t, rho) == pytest.approx(3.1)
    assert d == pytest.approx(Z * math.sqrt((p * (1 - p) + (p + d) * (1 - p - d)) * de / n))
    # Symmetric in p <-> 1 - p, larger with clustering, smaller with more runs.
    assert min_detectable_difference(0.8, n, t, rho) == pytest.approx(d)
    assert min_detectable_difference(p, n, t, 0.0) < d < min_detectable_difference(p, n // 2, t, rho)


def test_mde_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        min_detectable_difference(0.1, 0, 1, 0.0)


def _simulate(p1: float, p2: float, tasks: int, m: int, rho: float, sims: int, rng) -> float:
    """Share of simulated pairs told apart by the two-sided cluster-robust z test at 0.05."""

    def agent(p: float) -> tuple[np.ndarray, np.ndarray]:
        s = 1 / rho - 1
        task_rates = rng.beta(p * s, (1 - p) * s, size=(sims, tasks))
        x = rng.binomial(m, task_rates)
        means = x / m
        return means.mean(axis=1), means.var(axis=1, ddof=1) / tasks

    r1, v1 = agent(p1)
    r2, v2 = agent(p2)
    z = np.abs(r2 - r1) / np.sqrt(v1 + v2)
    return float(np.mean(z > stats.norm.ppf(0.975)))


@pytest.mark.parametrize(
    ("p", "tasks", "m", "rho"), [(0.2, 60, 8, 0.2), (0.1, 80, 16, 0.1), (0.3, 50, 4, 0.4)]
)
def test_a_pair_at_the_mde_is_detected_with_the_stated_power(
    p: float, tasks: int, m: int, rho: float
) -> None:
    """The guarantee: two agents whose rates differ by the mde (clustered by task with the stated rho)
    are told apart at about 80% power; at half the mde, far less often."""
    rng = np.random.default_rng(34)
    d = min_detectable_difference(p, tasks * m, tasks, rho)
    got = _simulate(p, p + d, tasks, m, rho, 6000, rng)
    assert 0.76 <= got <= 0.86, (d, got)
    assert _simulate(p, p + d / 2, tasks, m, rho, 3000, rng) < 0.45


def test_flips_known_answers() -> None:
    n = np.array([4, 4, 4, 4, 1, 4])
    x = np.array([0, 4, 2, 0, 0, 0])
    passed = np.array([4, 0, 2, 2, 0, np.nan])
    # all pass | all damage | damage + pass | pass + fail-safe | one run | unknown passing, no damage
    assert list(flips(n, x, passed)) == [False, False, True, True, False, False]
    assert list(flips(n, x, None)) == [False, False, True, False, False, False]


def test_single_run_range_known_answers() -> None:
    assert list(poisson_binomial(np.array([0.5, 0.5]))) == pytest.approx([0.25, 0.5, 0.25])
    assert single_run_range(np.array([0.5, 0.5])) == (0.0, 1.0)
    assert single_run_range(np.array([0.0, 1.0, 1.0, 0.0])) == (0.5, 0.5)  # no randomness: one value
    # 20 tasks at 0.5: Binomial(20, 1/2), central 95%: [6, 14] -> [0.3, 0.7].
    assert single_run_range(np.full(20, 0.5)) == (0.3, 0.7)
    assert stats.binom.ppf(0.025, 20, 0.5) == 6 and stats.binom.ppf(0.975, 20, 0.5) == 14


def test_single_run_range_holds_a_single_run_at_its_level() -> None:
    rng = np.random.default_rng(7)
    rates = rng.beta(0.5, 2.0, size=30)
    lo, hi = single_run_range(rates)
    draws = (rng.random((20_000, rates.size)) < rates).mean(axis=1)
    inside = np.mean((draws >= lo - 1e-12) & (draws <= hi + 1e-12))
    assert inside >= 0.95 - 0.005


def test_summary_and_report_carry_the_floor(small_results) -> None:
    """summary.json's `noise_floor` (with `mde` and `flip_share`) equals the formulas on the audit's counts,
    and the report states it."""
    import json

    from agentrel.analysis.inputs import load_input
    from agentrel.analysis.pipeline import analyze
    from agentrel.analysis.render import to_markdown
    from agentrel.analysis.report_doc import build_document
    from agentrel.analysis.summary import build_summary

    a = analyze(load_input(small_results), n_boot=50)
    floor = json.loads(build_summary(a).to_json())["noise_floor"]
    assert {"mde", "flip_share", "pools"} <= set(floor)
    model = next(p for p in floor["pools"] if p["model"] == "model-a")
    # model-a: t1 damages 2 of 4 (the others fail safe), t2 passes 4 of 4, t3 fails safe 4 of 4.
    assert (model["runs"], model["tasks"], model["flipped_cells"], model["repeated_cells"]) == (12, 3, 1, 3)
    assert model["mde"] == pytest.approx(min_detectable_difference(2 / 12, 12, 3, model["icc"]))
    assert floor["mde"] == max(p["mde"] for p in floor["pools"])
    text = to_markdown(build_document(a, {}))
    assert "## Noise floor" in text and f"{100 * floor['mde']:.1f} pp" in text
    assert "## Attempts per cell" in text and "No error budget was frozen" in text
