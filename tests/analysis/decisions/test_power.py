from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_effectsize

from agentrel.analysis.decisions.power import (
    PowerError,
    clustered,
    design_effect,
    mcnemar_pairs,
    mcnemar_power,
    unpaired_runs,
)


@pytest.mark.parametrize(("p1", "p2"), [(0.1, 0.2), (0.05, 0.15), (0.3, 0.5), (0.02, 0.08)])
def test_unpaired_matches_statsmodels(p1: float, p2: float) -> None:
    h = proportion_effectsize(p1, p2)
    want = NormalIndPower().solve_power(effect_size=h, alpha=0.05, power=0.8, ratio=1.0)
    got = unpaired_runs(p1, p2, 0.05, 0.8)
    assert got - 1 <= want <= got  # statsmodels adds the far tail, which can only lower n


def test_connor_known_answer() -> None:
    # By hand: psi = 0.3, delta = 0.1: n = (1.959964 sqrt(0.3) + 0.841621 sqrt(0.29))^2 / 0.01
    want = math.ceil((1.959964 * math.sqrt(0.3) + 0.841621 * math.sqrt(0.29)) ** 2 / 0.01)
    assert mcnemar_pairs(0.3, 0.2, 0.05, 0.8, discordant=0.3) == want
    assert mcnemar_power(want, 0.3, 0.2, discordant=0.3) == pytest.approx(0.8, abs=0.005)


def _mcnemar_rejects(b: np.ndarray, c: np.ndarray, alpha: float) -> np.ndarray:
    d = b + c
    z = np.divide(b - c, np.sqrt(d), out=np.zeros(b.shape), where=d > 0)
    return np.abs(z) > stats.norm.ppf(1 - alpha / 2)


@pytest.mark.parametrize(("p1", "p2"), [(0.1, 0.25), (0.05, 0.15)])
def test_mcnemar_power_by_simulation(p1: float, p2: float) -> None:
    """Simulate paired runs (independent within a pair) at the computed n: McNemar rejects ~80%."""
    n = mcnemar_pairs(p1, p2, 0.05, 0.8)
    rng = np.random.default_rng(17)
    sims = 6000
    p10, p01 = p1 * (1 - p2), p2 * (1 - p1)
    counts = rng.multinomial(n, [p10, p01, 1 - p10 - p01], size=sims)
    power = _mcnemar_rejects(counts[:, 0], counts[:, 1], 0.05).mean()
    # At least the power asked for (within MC error), and not wastefully more: the asymptotic test is
    # a little liberal when the discordant counts are small.
    assert 0.77 <= power <= 0.86
    # and one pair fewer than half the n is clearly underpowered (the computation is not vacuous)
    half = rng.multinomial(n // 2, [p10, p01, 1 - p10 - p01], size=sims)
    assert _mcnemar_rejects(half[:, 0], half[:, 1], 0.05).mean() < 0.6


def test_pairing_with_correlated_runs_needs_fewer_runs() -> None:
    indep = mcnemar_pairs(0.1, 0.2)
    corr = mcnemar_pairs(0.1, 0.2, discordant=0.14)  # shared seeds make the agents agree more often
    assert corr < indep


def test_design_effect_by_simulation() -> None:
    """Clustered runs: T tasks x m runs with ICC rho. The two agents' per-task rates are compared with a
    Welch t-test over tasks (an independent analysis that knows nothing of the design effect)."""
    p1, p2, rho, tasks = 0.1, 0.2, 0.05, 40
    n = unpaired_runs(p1, p2, 0.05, 0.8)
    plan = clustered(n, rho, tasks)
    assert plan.design_effect == pytest.approx(design_effect(rho, plan.runs_per_task))
    assert plan.tasks * plan.runs_per_task / plan.design_effect >= n
    rng = np.random.default_rng(23)
    s = (1 - rho) / rho
    sims = 3000
    rates = []
    for p in (p1, p2):
        task_p = rng.beta(p * s, (1 - p) * s, size=(sims, tasks))
        rates.append(rng.binomial(plan.runs_per_task, task_p) / plan.runs_per_task)
    t = stats.ttest_ind(rates[0], rates[1], axis=1, equal_var=False)
    power = float(np.mean(t.pvalue < 0.05))
    assert power == pytest.approx(0.8, abs=0.05)


def test_bad_input() -> None:
    with pytest.raises(PowerError, match="--p1 must be in"):
        mcnemar_pairs(0.0, 0.2)
    with pytest.raises(PowerError, match="--alpha"):
        unpaired_runs(0.1, 0.2, alpha=1.0)
    with pytest.raises(PowerError, match="zero difference"):
        mcnemar_pairs(0.2, 0.2)
    with pytest.raises(PowerError, match="at least 5 tasks"):
        clustered(100, 0.04, 4)
    with pytest.raises(PowerError, match="--icc"):
        clustered(100, 1.0, 40)
    with pytest.raises(PowerError, match="discordant"):
        mcnemar_pairs(0.1, 0.3, discordant=0.1)
