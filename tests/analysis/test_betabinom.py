from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from agentrel.analysis.betabinom import betabinom_loglik, fit_beta_binomial


@pytest.fixture(scope="module")
def kat_fit(kat):
    bb = kat["beta_binomial"]
    return bb, fit_beta_binomial(bb["x"], bb["n"])


def test_mle_known_answers(kat_fit):
    bb, fit = kat_fit
    mle, tol = bb["mle"], bb["mle"]["tolerance"]
    assert fit.mu == pytest.approx(mle["mu"], abs=tol)
    assert fit.rho == pytest.approx(mle["rho_icc"], abs=tol)
    assert fit.a == pytest.approx(mle["alpha"], abs=tol)
    assert fit.b == pytest.approx(mle["beta"], abs=tol)
    assert fit.loglik == pytest.approx(mle["loglik_with_binomial_coefficients"], abs=tol)


def test_loglik_is_scipy_betabinom(kat_fit):
    bb, fit = kat_fit
    x, n = np.array(bb["x"]), np.array(bb["n"])
    for mu, rho in [(fit.mu, fit.rho), (0.1, 0.5), (0.7, 0.01)]:
        s = (1 - rho) / rho
        direct = stats.betabinom.logpmf(x, n, mu * s, (1 - mu) * s).sum()
        assert betabinom_loglik(x, n, mu, rho) == pytest.approx(direct, rel=1e-12)
    assert betabinom_loglik(x, n, 0.2, 0.0) == pytest.approx(stats.binom.logpmf(x, n, 0.2).sum(), rel=1e-12)


def _grid_loglik(x, n, mu, rho):
    s = (1 - rho) / rho
    a, b = (mu * s)[..., None], ((1 - mu) * s)[..., None]
    return stats.betabinom.logpmf(x, n, a, b).sum(axis=-1)


def test_mle_beats_a_fine_grid(kat_fit):
    bb, fit = kat_fit
    x, n = np.array(bb["x"]), np.array(bb["n"])
    coarse = np.linspace(0.005, 0.995, 199)
    mu, rho = np.meshgrid(coarse, coarse, indexing="ij")
    ll = _grid_loglik(x, n, mu, rho)
    i, j = np.unravel_index(np.argmax(ll), ll.shape)
    fine_mu = np.linspace(coarse[i] - 0.01, coarse[i] + 0.01, 201)
    fine_rho = np.linspace(coarse[j] - 0.01, coarse[j] + 0.01, 201)
    mu, rho = np.meshgrid(fine_mu, fine_rho, indexing="ij")
    ll_fine = _grid_loglik(x, n, mu, rho)
    best = np.unravel_index(np.argmax(ll_fine), ll_fine.shape)
    assert fit.loglik >= max(ll.max(), ll_fine.max()) - 1e-9
    assert fit.mu == pytest.approx(fine_mu[best[0]], abs=2e-4)
    assert fit.rho == pytest.approx(fine_rho[best[1]], abs=2e-4)


def test_profile_interval_endpoints_sit_on_the_cutoff(kat_fit):
    bb, fit = kat_fit
    x, n = np.array(bb["x"]), np.array(bb["n"])
    cut = fit.loglik - stats.chi2.ppf(0.95, 1) / 2
    for rho in fit.rho_ci:
        res = optimize.minimize_scalar(
            lambda m, r=rho: -betabinom_loglik(x, n, m, r),
            bounds=(1e-6, 1 - 1e-6),
            method="bounded",
            options={"xatol": 1e-10},
        )
        assert -res.fun == pytest.approx(cut, abs=1e-4)
    assert fit.rho_ci[0] < fit.rho < fit.rho_ci[1]


def test_boundary_corrected_lr_test(kat_fit):
    _, fit = kat_fit
    lr = 2 * (fit.loglik - fit.loglik_binomial)
    assert fit.lr_stat == pytest.approx(lr)
    assert fit.lr_pvalue == pytest.approx(0.5 * stats.chi2.sf(lr, 1))


def test_all_zero_data_does_not_crash():
    fit = fit_beta_binomial([0, 0, 0, 0], [8, 16, 8, 4])
    assert fit.degenerate and fit.boundary
    assert fit.mu == 0.0 and fit.rho == 0.0
    assert fit.rho_ci == (0.0, 1.0)
    assert fit.lr_pvalue == 1.0
    assert fit.loglik == 0.0


def test_all_damage_data_does_not_crash():
    fit = fit_beta_binomial([8, 4], [8, 4])
    assert fit.degenerate and fit.mu == 1.0


def test_underdispersed_data_sits_on_the_boundary():
    fit = fit_beta_binomial([4, 4, 4, 4, 4, 4], [8, 8, 8, 8, 8, 8])
    assert fit.boundary and not fit.degenerate
    assert fit.rho == 0.0 and fit.rho_ci[0] == 0.0 and 0.0 < fit.rho_ci[1] < 1.0
    assert fit.mu == pytest.approx(0.5)
    assert fit.lr_pvalue == 1.0


def test_single_run_cells_leave_rho_unidentified():
    fit = fit_beta_binomial([1, 0, 1, 1], [1, 1, 1, 1])
    assert fit.rho_ci == (0.0, 1.0)


def test_rejects_bad_input():
    with pytest.raises(ValueError):
        fit_beta_binomial([], [])
    with pytest.raises(ValueError):
        fit_beta_binomial([3], [2])


def test_known_rho_recovered_within_the_interval():
    """Seeded simulation: data with rho = 0.2 (mu = 0.3), 40 cells of 16 runs; the profile interval
    must contain the true rho in at least 90% of replications (nominal 95%)."""
    rng = np.random.default_rng(20260101)
    mu, rho, cells, runs, reps = 0.3, 0.2, 40, 16, 120
    s = (1 - rho) / rho
    hits = 0
    for _ in range(reps):
        p = rng.beta(mu * s, (1 - mu) * s, size=cells)
        x = rng.binomial(runs, p)
        lo, hi = fit_beta_binomial(x, np.full(cells, runs)).rho_ci
        hits += lo <= rho <= hi
    assert hits / reps >= 0.90, hits / reps
