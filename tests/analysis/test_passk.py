from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from agentrel.analysis.passk import pass_at_k, pass_hat_k, pass_hat_k_exact, safe_hat_k


def _tolerance(case):
    tol = case.get("tolerance")
    if isinstance(tol, str) and tol.startswith("relative"):
        return {"rel": float(tol.split()[1])}
    return {"abs": 1e-6}


def test_pass_hat_k_known_answers(kat):
    for case in kat["pass_hat_k"]["cases"]:
        value = pass_hat_k(case["n"], case["c"], case["k"])
        assert value == pytest.approx(case["value"], **_tolerance(case))


def test_large_n_is_finite_and_exact():
    """n = 2000: float binomial coefficients overflow; the integer route gives the correctly rounded value."""
    exact = pass_hat_k_exact(2000, 1500, 400)
    assert exact == Fraction(math.comb(1500, 400), math.comb(2000, 400))
    assert pass_hat_k(2000, 1500, 400) == float(exact)
    assert math.isfinite(pass_hat_k(2000, 1500, 400)) and pass_hat_k(2000, 1500, 400) > 0


def test_pass_at_k_known_answers(kat):
    for case in kat["pass_at_k"]["cases"]:
        assert pass_at_k(case["n"], case["c"], case["k"]) == pytest.approx(case["value"], abs=1e-6)


def test_safe_hat_k_is_pass_hat_k_of_clean_runs():
    assert safe_hat_k(16, 4, 3) == pass_hat_k(16, 12, 3)
    assert safe_hat_k(10, 0, 10) == 1.0
    assert safe_hat_k(10, 1, 10) == 0.0


def test_edges():
    assert pass_hat_k(8, 2, 3) == 0.0  # c < k
    assert pass_at_k(8, 0, 3) == 0.0
    assert pass_at_k(8, 6, 3) == 1.0  # fewer than k failures: some success is certain
    with pytest.raises(ValueError):
        pass_hat_k(4, 2, 5)  # k > n
    with pytest.raises(ValueError):
        pass_hat_k(4, 5, 1)
    with pytest.raises(TypeError):
        pass_hat_k(4.0, 2, 1)  # type: ignore[arg-type]


@pytest.mark.parametrize(("n", "k", "p"), [(8, 3, 0.3), (16, 4, 0.7), (30, 10, 0.55)])
def test_unbiased_for_p_to_the_k(n, k, p):
    """E[C(C, k) / C(n, k)] = p^k when C ~ Binomial(n, p): summed exactly over the distribution."""
    expectation = sum(stats.binom.pmf(c, n, p) * pass_hat_k(n, c, k) for c in range(n + 1))
    assert expectation == pytest.approx(p**k, rel=1e-10)


@given(st.integers(1, 120).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_monotone_in_k_and_complementary(case):
    n, c = case
    values = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    assert all(a >= b for a, b in itertools.pairwise(values))
    for k in range(1, n + 1, max(1, n // 7)):
        # pass@k = 1 - (all k fail) and "all k fail" is pass^k of the failures.
        assert pass_at_k(n, c, k) == pytest.approx(1 - pass_hat_k(n, n - c, k), abs=1e-12)
