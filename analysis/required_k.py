"""How many repeats an audit needs to see damage at least once with probability 1 - alpha.

Three versions: the plug-in (smallest k with (1 - p)^k <= alpha), the conservative one that plugs
in the one-sided Clopper–Pearson lower bound of p, and the heterogeneity-aware one in which p
varies across tasks as Beta(a, b), so P(k runs all clean) = E[(1 - p)^k] = B(a, b + k) / B(a, b).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Literal

import numpy as np

from agentrel.analysis.intervals import cp_lower, cp_upper

Number = float | int | str | Decimal | Fraction

# Near-ties beyond this many repeats are decided in log space: the exact rational power gets expensive,
# and a tie that close at such k is far below any meaningful precision of p.
EXACT_K_LIMIT = 5_000
K_SEARCH_LIMIT = 2**62


def _fraction(value: Number, name: str) -> Fraction:
    """The exact rational the user meant: floats are read through their shortest repr (0.01 -> 1/100)."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value}")
        return Fraction(repr(value))
    return Fraction(str(value))


def _holds(q: Fraction, alpha: Fraction, k: int) -> bool:
    """(1 - p)^k <= alpha. Decided in log space when the margin dwarfs rounding error; only near-ties
    (where floats could decide wrongly, e.g. exact powers) are settled in exact rationals."""
    margin = k * math.log(q) - math.log(alpha)
    if abs(margin) > 1e-9 * (1.0 + abs(math.log(alpha))) or k > EXACT_K_LIMIT:
        return margin <= 0.0
    return bool(q.numerator**k * alpha.denominator <= alpha.numerator * q.denominator**k)


def required_k(p: Number, alpha: Number) -> int | None:
    """Smallest integer k >= 1 with (1 - p)^k <= alpha; None when p = 0 (no finite k).

    k = ceil(log(alpha) / log(1 - p)) in exact arithmetic. The log ratio is only a starting point:
    the inequality is then checked in rationals, so exact powers (p = 0.01, alpha = 0.9801 -> k = 2)
    are not pushed one step up by rounding.
    """
    pf, af = _fraction(p, "p"), _fraction(alpha, "alpha")
    if not 0 <= pf <= 1:
        raise ValueError(f"p must be in [0, 1], got {p}")
    if not 0 < af < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if pf == 0:
        return None
    if pf == 1:
        return 1
    q = 1 - pf
    guess = math.log(af) / math.log(q)
    k = max(1, math.ceil(guess))
    while k > 1 and _holds(q, af, k - 1):
        k -= 1
    while not _holds(q, af, k):
        k += 1
    return k


@dataclass(frozen=True)
class RequiredK:
    """The answer for one cell: k (None when no finite k exists) and the p it was computed from."""

    k: int | None
    p_used: float
    basis: Literal["point", "cp_lower", "none"]
    p_upper: float | None = None  # for x = 0: the one-sided upper bound on p instead of a k


def required_k_from_counts(
    x: int, n: int, alpha: Number, *, conservative: bool = False, confidence: float = 0.95
) -> RequiredK:
    """Repeats needed for a cell with x damaging runs out of n.

    point: p = x / n (exact rational), k = required_k(p, alpha).
    conservative: p_L = B^{-1}(1 - confidence; x, n - x + 1), the one-sided Clopper–Pearson lower
    bound, and k = required_k(p_L, alpha); with confidence 1 - gamma, p >= p_L, so k repeats detect
    damage with probability >= 1 - alpha.
    x = 0: no finite k; p_upper = 1 - (1 - confidence)^(1/n) is reported instead (damage below it
    cannot be excluded).
    """
    if n < 1 or not 0 <= x <= n:
        raise ValueError(f"need 0 <= x <= n and n >= 1, got x={x}, n={n}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if x == 0:
        upper = float(cp_upper(0, n, 1.0 - confidence))
        return RequiredK(k=None, p_used=0.0, basis="none", p_upper=upper)
    if conservative:
        p_low = float(cp_lower(x, n, 1.0 - confidence))
        return RequiredK(k=required_k(p_low, alpha), p_used=p_low, basis="cp_lower")
    return RequiredK(k=required_k(Fraction(x, n), alpha), p_used=x / n, basis="point")


def all_clean_probability_beta(a: float, b: float, k: int | np.ndarray) -> np.ndarray:
    """P(k runs all clean | p ~ Beta(a, b)) = E[(1 - p)^k] = B(a, b + k) / B(a, b)."""
    from scipy import special  # 0.2 s to import: not at the start of every command

    kk = np.asarray(k, dtype=np.float64)
    return np.asarray(np.exp(special.betaln(a, b + kk) - special.betaln(a, b)), dtype=np.float64)


def required_k_beta(a: float, b: float, alpha: float) -> int | None:
    """Smallest k with B(a, b + k) / B(a, b) <= alpha, p ~ Beta(a, b) across tasks.

    The ratio decreases in k like Gamma(a + b)/Gamma(b) * k^(-a), so a small a (mass near p = 0)
    demands many repeats. Found by doubling then integer bisection on the log ratio. None when
    a = 0 (point mass at p = 0) or the answer exceeds 2^62.
    """
    from scipy import special  # 0.2 s to import: not at the start of every command

    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not (a >= 0 and b >= 0) or not math.isfinite(a + b):
        raise ValueError(f"need finite a, b >= 0, got a={a}, b={b}")
    if a == 0:
        return None
    if b == 0:
        return 1
    target = math.log(alpha)
    base = special.betaln(a, b)

    def holds(k: int) -> bool:
        return bool(special.betaln(a, b + k) - base <= target)

    hi = 1
    while not holds(hi):
        hi *= 2
        if hi > K_SEARCH_LIMIT:
            return None
    lo = hi // 2  # holds(lo) is false unless lo == 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid
    return hi


def detection_probability(p: float | np.ndarray, k: int | np.ndarray) -> np.ndarray:
    """P(at least one damaging run in k) = 1 - (1 - p)^k, computed as -expm1(k log1p(-p))."""
    pa = np.asarray(p, dtype=np.float64)
    ka = np.asarray(k, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return -np.expm1(ka * np.log1p(-pa))
