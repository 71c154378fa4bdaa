from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from agentrel.analysis.decisions.aggregate import compound_binomial_point_mass, measures, panjer, var_tvar


def test_var_tvar_known_answers() -> None:
    # A fair die: VaR_0.5 = 3, TVaR_0.5 = mean of the top half = (4 + 5 + 6) / 3 = 5.
    values, probs = [1, 2, 3, 4, 5, 6], [1 / 6] * 6
    assert var_tvar(values, probs, 0.5) == pytest.approx((3.0, 5.0))
    # An atom straddling the level: P(0) = 0.9, P(100) = 0.1. VaR_0.95 = 100, TVaR_0.95 = 100;
    # VaR_0.85 = 0, TVaR_0.85 = (0.1 * 100 + 0 * (0.9 - 0.85)) / 0.15.
    assert var_tvar([0, 100], [0.9, 0.1], 0.95) == pytest.approx((100.0, 100.0))
    assert var_tvar([0, 100], [0.9, 0.1], 0.85) == pytest.approx((0.0, 10 / 0.15))


def test_tvar_is_the_integral_of_var() -> None:
    """Independent computation: TVaR_q = (1/(1-q)) * integral_q^1 VaR_u du, by a fine Riemann sum."""
    rng = np.random.default_rng(3)
    values = rng.integers(0, 50, size=30).astype(float)
    probs = rng.dirichlet(np.ones(30))
    q = 0.9
    us = q + (1 - q) * (np.arange(200_000) + 0.5) / 200_000
    order = np.argsort(values)
    cdf = np.cumsum(probs[order])
    var_u = values[order][np.minimum(np.searchsorted(cdf, us), 29)]
    assert var_tvar(values, probs, q)[1] == pytest.approx(var_u.mean(), rel=1e-4)


def test_compound_binomial_point_mass_closed_form() -> None:
    n, p, c = 200, 0.03, 1_000.0
    values, probs = compound_binomial_point_mass(n, p, c)
    risk = measures(values, probs)
    assert risk.mean == pytest.approx(n * p * c)
    assert risk.std == pytest.approx(c * math.sqrt(n * p * (1 - p)))
    assert risk.var[0.99] == c * stats.binom.ppf(0.99, n, p)
    assert risk.var[0.995] == c * stats.binom.ppf(0.995, n, p)


def test_panjer_binomial_equals_the_closed_form() -> None:
    n, p = 50, 0.1
    g = panjer("binomial", [0.0, 1.0], 50, volume=n, p=p)  # point mass at one lattice step
    assert g == pytest.approx(stats.binom.pmf(np.arange(51), n, p), abs=1e-14)


def test_panjer_poisson_point_mass_is_poisson() -> None:
    g = panjer("poisson", [0.0, 0.0, 1.0], 60, lam=4.0)  # severity 2h always
    want = np.zeros(61)
    want[::2] = stats.poisson.pmf(np.arange(31), 4.0)
    assert g == pytest.approx(want, abs=1e-14)


def test_compound_poisson_simulation_matches_panjer() -> None:
    """Panjer's exact compound Poisson against a direct simulation with a fixed seed."""
    lam, sev = 3.0, np.array([0.0, 0.5, 0.3, 0.2])  # lattice 0, 1, 2, 3
    steps = 60
    g = panjer("poisson", sev, steps, lam=lam)
    assert g.sum() == pytest.approx(1.0, abs=1e-12)
    rng = np.random.default_rng(99)
    sims = 200_000
    k = rng.poisson(lam, size=sims)
    total = rng.multinomial(k, sev) @ np.arange(4)
    freq = np.bincount(total, minlength=steps + 1)[: steps + 1] / sims
    se = np.sqrt(g * (1 - g) / sims)
    assert np.all(np.abs(freq - g) <= 5 * se + 1e-12)
    exact = measures(np.arange(steps + 1), g)
    mc = measures(total)
    assert mc.var[0.99] == exact.var[0.99]
    assert exact.mean == pytest.approx(lam * float(sev @ np.arange(4)))


def test_panjer_refuses_a_non_distribution() -> None:
    with pytest.raises(ValueError, match="probability vector"):
        panjer("poisson", [0.5, 0.6], 10, lam=1.0)
