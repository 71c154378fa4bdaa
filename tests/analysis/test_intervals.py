from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from agentrel.analysis.intervals import (
    always_damage,
    clopper_pearson,
    cp_lower,
    cp_upper,
    demonstrably_stochastic,
)


def test_two_sided_known_answers(kat):
    for case in kat["clopper_pearson_two_sided_95"]:
        lo, hi = clopper_pearson(case["x"], case["n"])
        assert lo == pytest.approx(case["lower"], abs=1e-6)
        assert hi == pytest.approx(case["upper"], abs=1e-6)


def test_one_sided_lower_known_answer(kat):
    for case in kat["clopper_pearson_one_sided_lower_95"]:
        lo, hi = clopper_pearson(case["x"], case["n"], side="lower")
        assert lo == pytest.approx(case["lower"], abs=1e-6)
        assert hi == 1.0


def test_demonstrably_stochastic_known_answers(kat):
    for case in kat["demonstrably_stochastic"]["cases"]:
        n = case["n"]
        flags = demonstrably_stochastic(np.arange(n + 1), np.full(n + 1, n))
        assert np.flatnonzero(flags).tolist() == case["qualifying_x"]


@pytest.mark.parametrize("n", [1, 2, 5, 16, 50, 400])
def test_matches_beta_quantile_definition(n):
    x = np.arange(n + 1)
    lo, hi = clopper_pearson(x, np.full(n + 1, n), alpha=0.1)
    inner = (x > 0) & (x < n)
    assert np.allclose(lo[1:], stats.beta.ppf(0.05, x[1:], n - x[1:] + 1), rtol=1e-10, atol=1e-14)
    assert np.allclose(hi[:-1], stats.beta.ppf(0.95, x[:-1] + 1, n - x[:-1]), rtol=1e-10, atol=1e-14)
    assert lo[0] == 0.0 and hi[-1] == 1.0
    assert np.all(lo[inner] > 0) and np.all(hi[inner] < 1)


@pytest.mark.parametrize("n", [3, 16, 60])
def test_matches_binomial_tail_definition(n):
    """The bounds solve P(X >= x | lo) = alpha/2 and P(X <= x | hi) = alpha/2 (an independent route)."""
    x = np.arange(n + 1)
    lo, hi = clopper_pearson(x, np.full(n + 1, n))
    assert np.allclose(stats.binom.sf(x[1:] - 1, n, lo[1:]), 0.025, atol=1e-9)
    assert np.allclose(stats.binom.cdf(x[:-1], n, hi[:-1]), 0.025, atol=1e-9)


def test_one_sided_edges():
    lo, _ = clopper_pearson(0, 16, side="lower")
    _, hi = clopper_pearson(16, 16, side="upper")
    assert lo == 0.0 and hi == 1.0
    _, up0 = clopper_pearson(0, 16, side="upper")
    assert up0 == pytest.approx(1 - 0.05 ** (1 / 16), rel=1e-12)  # the x = 0 closed form
    assert cp_lower(16, 16, 0.05) == pytest.approx(0.05 ** (1 / 16), rel=1e-12)
    assert cp_upper(0, 16, 0.025) == pytest.approx(0.205907, abs=1e-6)


def test_exact_coverage_at_n16():
    n = 16
    x = np.arange(n + 1)
    lo, hi = clopper_pearson(x, np.full(n + 1, n))
    for p in np.linspace(0.001, 0.999, 999):
        covered = (lo <= p) & (p <= hi)
        assert stats.binom.pmf(x, n, p)[covered].sum() >= 0.95 - 1e-12, p


def test_simulated_coverage_at_n16():
    n = 16
    x = np.arange(n + 1)
    lo, hi = clopper_pearson(x, np.full(n + 1, n))
    rng = np.random.default_rng(2024)
    for p in np.round(np.arange(0.02, 1.0, 0.04), 2):
        draws = rng.binomial(n, p, size=40_000)
        coverage = np.mean((lo[draws] <= p) & (p <= hi[draws]))
        assert coverage >= 0.95, (p, coverage)


def test_always_damage_and_flags_vectorized():
    x = np.array([0, 3, 16, 8])
    n = np.array([16, 16, 16, 16])
    assert always_damage(x, n).tolist() == [False, False, True, False]
    assert demonstrably_stochastic(x, n).tolist() == [False, False, False, True]


@pytest.mark.parametrize(("x", "n"), [(-1, 5), (6, 5), (1, 0), (1.5, 4)])
def test_rejects_bad_counts(x, n):
    with pytest.raises(ValueError):
        clopper_pearson(x, n)


def test_rejects_bad_alpha():
    with pytest.raises(ValueError):
        clopper_pearson(1, 4, alpha=1.5)


@given(st.integers(1, 300).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_interval_brackets_estimate_and_nests(case):
    x, n = case
    lo, hi = clopper_pearson(x, n)
    lo90, hi90 = clopper_pearson(x, n, alpha=0.10)
    assert 0.0 <= lo <= x / n <= hi <= 1.0
    assert lo <= lo90 and hi90 <= hi  # the 95% interval contains the 90% one
