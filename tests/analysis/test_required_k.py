from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from agentrel.analysis.intervals import cp_lower
from agentrel.analysis.required_k import (
    all_clean_probability_beta,
    detection_probability,
    required_k,
    required_k_beta,
    required_k_from_counts,
)


def _brute_force(p: Fraction, alpha: Fraction) -> int:
    k, q = 1, 1 - p
    power = q
    while power > alpha:
        k += 1
        power *= q
    return k


def test_known_answers(kat):
    for case in kat["required_k"]["cases"]:
        assert required_k(case["p"], case["alpha"]) == case["k"], case


@pytest.mark.parametrize(
    ("p", "alpha", "k"),
    [
        ("0.1", "0.4782969", 7),
        ("0.5", "0.125", 3),
        ("0.01", "0.9801", 2),
        ("0.2", "0.32768", 5),
        ("0.9", "0.001", 3),
    ],
)
def test_exact_powers_are_not_pushed_up(p, alpha, k):
    assert required_k(p, alpha) == k
    assert required_k(float(p), float(alpha)) == k  # floats are read through their shortest repr
    assert required_k(Fraction(p), Fraction(alpha)) == k


@settings(deadline=None, max_examples=200)
@given(st.integers(10, 999), st.integers(10, 999))
def test_agrees_with_brute_force(p_milli, alpha_milli):
    p, alpha = Fraction(p_milli, 1000), Fraction(alpha_milli, 1000)
    assert required_k(p, alpha) == _brute_force(p, alpha)


def test_edges():
    assert required_k(0, 0.05) is None
    assert required_k(1, 0.05) == 1
    assert required_k(0.999, 0.5) == 1
    for bad in [(-0.1, 0.05), (1.1, 0.05), (0.5, 0.0), (0.5, 1.0)]:
        with pytest.raises(ValueError):
            required_k(*bad)


def test_large_k_stays_correct():
    k = required_k(1e-6, 0.05)
    assert k == 2995731  # ceil(log 0.05 / log(1 - 1e-6))
    assert (1 - 1e-6) ** k <= 0.05 < (1 - 1e-6) ** (k - 1)


def test_from_counts_point_and_conservative():
    point = required_k_from_counts(4, 16, 0.05)
    assert point.k == required_k(Fraction(1, 4), 0.05) == 11
    cons = required_k_from_counts(4, 16, 0.05, conservative=True)
    assert cons.basis == "cp_lower"
    assert cons.p_used == pytest.approx(0.090252, abs=1e-6)
    assert cons.k == required_k(float(cp_lower(4, 16, 0.05)), 0.05) == 32
    assert cons.k >= point.k


def test_from_counts_zero_damage_gives_an_upper_bound_not_k():
    res = required_k_from_counts(0, 16, 0.05)
    assert res.k is None and res.basis == "none"
    assert res.p_upper == pytest.approx(1 - 0.05 ** (1 / 16), rel=1e-12)
    assert required_k_from_counts(0, 16, 0.05, conservative=True).k is None


def test_from_counts_always_damage():
    assert required_k_from_counts(16, 16, 0.05).k == 1
    assert required_k_from_counts(16, 16, 0.05, conservative=True).k == required_k(0.05 ** (1 / 16), 0.05)


@pytest.mark.parametrize(("a", "b", "k"), [(0.6, 1.99, 5), (2.0, 3.0, 12), (0.3, 0.7, 40)])
def test_beta_all_clean_probability_is_the_mixture_integral(a, b, k):
    from scipy import stats

    integral, _ = integrate.quad(lambda p: (1 - p) ** k * stats.beta.pdf(p, a, b), 0, 1, limit=200)
    assert float(all_clean_probability_beta(a, b, k)) == pytest.approx(integral, rel=1e-7)


@pytest.mark.parametrize(
    ("a", "b", "alpha"), [(0.6, 1.99, 0.05), (2.0, 3.0, 0.01), (0.3, 0.7, 0.2), (5, 50, 0.05)]
)
def test_beta_required_k_is_the_smallest(a, b, alpha):
    k = required_k_beta(a, b, alpha)
    assert k is not None
    assert all_clean_probability_beta(a, b, k) <= alpha
    if k > 1:
        assert all_clean_probability_beta(a, b, k - 1) > alpha


def test_beta_required_k_needs_more_than_homogeneous():
    """Heterogeneity (same mean) makes detection harder: E[(1-p)^k] >= (1-E p)^k by Jensen."""
    a, b = 0.5, 2.0
    mu = a / (a + b)
    assert required_k_beta(a, b, 0.05) > required_k(mu, 0.05)
    concentrated = required_k_beta(mu * 1e7, (1 - mu) * 1e7, 0.05)
    assert concentrated == required_k(mu, 0.05)


def test_beta_edges():
    assert required_k_beta(0.0, 1.0, 0.05) is None
    assert required_k_beta(1.0, 0.0, 0.05) == 1
    assert required_k_beta(0.01, 5.0, 0.05) is None  # beyond 2^62 repeats
    with pytest.raises(ValueError):
        required_k_beta(1.0, 1.0, 1.5)


def test_detection_probability():
    k = np.array([1, 2, 14])
    assert np.allclose(detection_probability(0.2, k), 1 - 0.8**k)
    assert detection_probability(0.0, 5) == 0.0
    assert detection_probability(1.0, 1) == 1.0


def test_the_audit_plan_gives_each_cell_its_own_counts_answer():
    """The plan computes each (x, n) once and reuses it: every row still equals that cell's own
    answer, including cells that share x but not n, or n but not x."""
    import pandas as pd

    from agentrel.analysis.audit_plan import audit_plan

    counts = [(1, 50), (1, 50), (1, 40), (3, 50), (0, 50), (0, 7), (3, 50), (50, 50)]
    cells = pd.DataFrame(
        {
            "model": "m",
            "agent_kind": "model",
            "task": [f"t{i}" for i in range(len(counts))],
            "condition": "clean",
            "n": [n for _, n in counts],
            "x": [x for x, _ in counts],
            "cost_usd_mean": 0.01,
            "invalid": 0,
        }
    )
    plan = audit_plan(cells, target=0.95, confidence=0.9)
    for row, (x, n) in zip(plan.itertuples(index=False), counts, strict=True):
        point = required_k_from_counts(x, n, Fraction(1, 20))
        cons = required_k_from_counts(x, n, Fraction(1, 20), conservative=True, confidence=0.9)
        assert (row.x, row.n) == (x, n)
        assert (None if pd.isna(row.k_point) else row.k_point) == point.k
        assert (None if pd.isna(row.k_conservative) else row.k_conservative) == cons.k
        assert row.p_upper == point.p_upper or (pd.isna(row.p_upper) and point.p_upper is None)
