from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from agentrel.analysis.decisions.aggregate import compound_binomial_point_mass, measures
from agentrel.analysis.decisions.insure import InsureError, TaskEvidence, annual_loss, resolve_mix, simulate


def _evidence() -> list[TaskEvidence]:
    return [
        TaskEvidence("t1", 40, 6, (100.0, 250.0, 100.0, 900.0), 2),
        TaskEvidence("t2", 40, 0, (), 0),
        TaskEvidence("t3", 20, 3, (50.0,), 2),
    ]


def test_simulation_with_point_frequency_is_the_compound_binomial() -> None:
    """Known answer: with p fixed (a huge Beta) and one severity, L = c K, K ~ Binomial(N, s p)."""
    n, p, c = 300, 0.04, 500.0
    ab = np.array([[p * 1e12, (1 - p) * 1e12]])
    samples = simulate(ab, np.array([1.0]), [np.array([c])], n, 200_000, seed=1)
    values, probs = compound_binomial_point_mass(n, p, c)
    exact, mc = measures(values, probs), measures(samples)
    assert mc.var[0.99] == exact.var[0.99] and mc.var[0.995] == exact.var[0.995]
    assert mc.mean == pytest.approx(exact.mean, abs=4 * exact.std / math.sqrt(200_000))
    assert mc.tvar[0.99] == pytest.approx(exact.tvar[0.99], rel=0.01)


def test_full_model_monte_carlo_within_its_error_of_the_exact_moments() -> None:
    got = annual_loss(_evidence(), 10_000, {"t1": 0.5, "t2": 0.3, "t3": 0.2}, simulations=40_000, seed=7)
    assert abs(got.mc_expected_loss - got.expected_loss) <= 4 * got.mc_error
    samples = simulate(
        np.array([[6.5, 34.5], [0.5, 40.5], [3.5, 17.5]]),
        np.array([0.5, 0.3, 0.2]),
        [
            np.array([100.0, 250.0, 100.0, 900.0]),
            np.array([100.0, 250.0, 100.0, 900.0, 50.0]),
            np.array([50.0]),
        ],
        10_000,
        40_000,
        7,
    )
    assert float(samples.std()) == pytest.approx(got.std, rel=0.03)
    assert got.var_99 <= got.tvar_99 <= got.tvar_995 and got.var_99 <= got.var_995
    assert got.premium == pytest.approx(got.expected_loss + 0.5 * got.std)
    assert got.unpriced_damaging_runs == 4
    assert got.severity_source == {"t1": "own", "t2": "pooled", "t3": "own"}


def test_expected_loss_by_hand() -> None:
    """E[L] = N sum s_t E[p_t] mu_t with Jeffreys posteriors: worked out for one task."""
    ev = [TaskEvidence("t", 10, 2, (30.0, 90.0), 0)]
    got = annual_loss(ev, 1000, simulations=2000)
    assert got.expected_loss == pytest.approx(1000 * (2.5 / 11) * 60.0)
    # Var = N E[m2] - N E[m1]^2 + (N^2 - N) Var(m1); E[X^2] = (900 + 8100) / 2
    ep, vp = 2.5 / 11, 2.5 * 8.5 / (11**2 * 12)
    var = 1000 * ep * 4500 - 1000 * (ep * 60) ** 2 + (1000**2 - 1000) * 60**2 * vp
    assert got.std == pytest.approx(math.sqrt(var))


def test_unpriced_damage_is_not_zero_dollars() -> None:
    """The attack: mark damaging runs as unpriced to make them vanish from the premium. Unpriced runs
    stay in the frequency (their loss is represented by the priced sizes) and are counted."""
    priced = [TaskEvidence("t", 20, 2, (100.0, 100.0), 0)]
    hidden = [TaskEvidence("t", 20, 8, (100.0, 100.0), 6)]
    a, b = annual_loss(priced, 1000, simulations=1000), annual_loss(hidden, 1000, simulations=1000)
    assert b.expected_loss > 3 * a.expected_loss
    assert b.unpriced_damaging_runs == 6 and a.unpriced_damaging_runs == 0


def test_bad_input() -> None:
    with pytest.raises(InsureError, match="--volume"):
        annual_loss(_evidence(), 0)
    with pytest.raises(InsureError, match=r"sum to 0\.9"):
        resolve_mix(["a", "b"], {"a": 0.5, "b": 0.4})
    with pytest.raises(InsureError, match="'zz'"):
        resolve_mix(["a"], {"zz": 1.0})
    with pytest.raises(InsureError, match=r"no damaging run .* dollar"):
        annual_loss([TaskEvidence("t", 10, 3, (), 3)], 100)
    with pytest.raises(InsureError, match="quantile"):
        annual_loss(_evidence(), 100, principle="quantile", theta=2.0, simulations=100)


def test_principles_and_betabinom_frequency() -> None:
    ev = _evidence()
    ev_ = annual_loss(ev, 5000, principle="expected_value", theta=0.2, simulations=5000)
    assert ev_.premium == pytest.approx(1.2 * ev_.expected_loss)
    q = annual_loss(ev, 5000, principle="quantile", theta=0.995, simulations=5000)
    assert q.premium == q.var_995
    # betabinom: every task shrinks toward the agent mean, so the clean task's rate rises
    spread = [
        TaskEvidence(f"t{i}", 20, y, (100.0,) if y else (), 0) for i, y in enumerate([0, 0, 1, 6, 12, 0, 2])
    ]
    bb = annual_loss(spread, 1000, frequency="betabinom", simulations=2000)
    jp = annual_loss(spread, 1000, frequency="posterior", simulations=2000)
    assert bb.frequency == "betabinom" and bb.expected_loss != jp.expected_loss
    with pytest.raises(InsureError, match="--frequency posterior"):
        flat = [TaskEvidence("t", 20, 2, (5.0, 5.0), 0), TaskEvidence("u", 20, 2, (5.0, 5.0), 0)]
        annual_loss(flat, 10, frequency="betabinom")


def test_binomial_cross_check_with_scipy() -> None:
    """Independent computation of the 99% VaR with a point severity via scipy's binomial quantile."""
    n, p = 5000, 0.002
    values, probs = compound_binomial_point_mass(n, p, 10.0)
    assert measures(values, probs).var[0.99] == 10.0 * stats.binom.ppf(0.99, n, p)
