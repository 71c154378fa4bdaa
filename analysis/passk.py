"""pass^k, safe^k and pass@k: exact, from integer binomial coefficients.

The ratios are formed from Python integers (``math.comb``), so they are exact rationals; the float
returned is the correctly rounded value of that rational (CPython's int / int is correctly rounded
even when both operands have hundreds of digits). Float binomial coefficients overflow long before
n = 2000 and are never used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction


def _check(n: int, c: int, k: int) -> None:
    if not (isinstance(n, int) and isinstance(c, int) and isinstance(k, int)):
        raise TypeError("n, c and k must be integers")
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n and n >= 1, got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, n] (k={k}, n={n}): the estimator is undefined for k > n")


def pass_hat_k_exact(n: int, c: int, k: int) -> Fraction:
    """pass^k = C(c, k) / C(n, k) as an exact fraction (0 when c < k).

    The unbiased estimator of P(k fresh runs all succeed) from c successes in n runs
    (Yao et al. 2024, tau-bench).
    """
    _check(n, c, k)
    return Fraction(math.comb(c, k), math.comb(n, k))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k = C(c, k) / C(n, k), correctly rounded to float."""
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def safe_hat_k(n: int, x: int, k: int) -> float:
    """safe^k = C(n - x, k) / C(n, k): probability that k fresh runs all stay clean, x = damaging runs."""
    _check(n, x, k)
    return math.comb(n - x, k) / math.comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    """pass@k = 1 - C(n - c, k) / C(n, k): probability that at least one of k runs succeeds.

    Computed as (C(n, k) - C(n - c, k)) / C(n, k) in integers so no cancellation occurs near 1.
    """
    _check(n, c, k)
    total = math.comb(n, k)
    return (total - math.comb(n - c, k)) / total


def mean_over_cells(values: Sequence[float]) -> float:
    """Unweighted mean over cells (the tau-bench aggregate); NaN for no cells."""
    return math.fsum(values) / len(values) if values else math.nan
