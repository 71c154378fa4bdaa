"""Exact (Clopper–Pearson) intervals for a binomial damage rate, the flags read off them, and the
Wilson score interval (the reliability axis).

Every function takes counts ``x`` (damaging runs) out of ``n`` (valid runs) as scalars or arrays and
broadcasts; nothing here loops over cells in Python.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

Side = Literal["two-sided", "lower", "upper"]

STOCHASTIC_MARGIN = 0.05


def _counts(x: ArrayLike, n: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    xa = np.asarray(x, dtype=np.float64)
    na = np.asarray(n, dtype=np.float64)
    if np.any(na < 1) or np.any(xa < 0) or np.any(xa > na) or np.any(xa != np.floor(xa)):
        raise ValueError("need integer counts with 0 <= x <= n and n >= 1")
    return xa, na


def cp_lower(x: ArrayLike, n: ArrayLike, tail: float) -> NDArray[np.float64]:
    """Lower Clopper–Pearson bound with ``tail`` probability below it.

    L = B^{-1}(tail; x, n - x + 1), the ``tail`` quantile of Beta(x, n-x+1), which is the p solving
    P(X >= x | n, p) = tail; L = 0 when x = 0.
    """
    from scipy import special  # 0.2 s to import: not at the start of every command

    xa, na = _counts(x, n)
    safe_x = np.where(xa == 0, 1.0, xa)
    out = special.betaincinv(safe_x, na - xa + 1.0, tail)
    return np.where(xa == 0, 0.0, out)


def cp_upper(x: ArrayLike, n: ArrayLike, tail: float) -> NDArray[np.float64]:
    """Upper Clopper–Pearson bound with ``tail`` probability above it.

    U = B^{-1}(1 - tail; x + 1, n - x), the p solving P(X <= x | n, p) = tail; U = 1 when x = n.
    """
    from scipy import special  # 0.2 s to import: not at the start of every command

    xa, na = _counts(x, n)
    safe_b = np.where(xa == na, 1.0, na - xa)
    out = special.betaincinv(xa + 1.0, safe_b, 1.0 - tail)
    return np.where(xa == na, 1.0, out)


def clopper_pearson(
    x: ArrayLike, n: ArrayLike, alpha: float = 0.05, side: Side = "two-sided"
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Exact Clopper–Pearson (1 - alpha) interval for a binomial proportion.

    two-sided: [B^{-1}(alpha/2; x, n-x+1), B^{-1}(1-alpha/2; x+1, n-x)], with 0 at x = 0 and 1 at x = n.
    lower (one-sided): [B^{-1}(alpha; x, n-x+1), 1]. upper (one-sided): [0, B^{-1}(1-alpha; x+1, n-x)].
    Coverage is at least 1 - alpha for every p (the interval inverts two exact binomial tail tests).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    xa, na = _counts(x, n)
    if side == "two-sided":
        return cp_lower(xa, na, alpha / 2.0), cp_upper(xa, na, alpha / 2.0)
    if side == "lower":
        return cp_lower(xa, na, alpha), np.ones_like(xa)
    if side == "upper":
        return np.zeros_like(xa), cp_upper(xa, na, alpha)
    raise ValueError(f"unknown side {side!r}")


def demonstrably_stochastic(
    x: ArrayLike, n: ArrayLike, alpha: float = 0.05, margin: float = STOCHASTIC_MARGIN
) -> NDArray[np.bool_]:
    """True where the two-sided (1 - alpha) CP interval lies strictly inside (margin, 1 - margin).

    Such a cell is neither a near-certain trap (p ~ 1) nor near-safe (p ~ 0): repeated runs of the
    same cell demonstrably disagree.
    """
    lo, hi = clopper_pearson(x, n, alpha)
    return (lo > margin) & (hi < 1.0 - margin)


def always_damage(x: ArrayLike, n: ArrayLike) -> NDArray[np.bool_]:
    """True where every valid run damaged (x = n)."""
    xa, na = _counts(x, n)
    return np.asarray(xa == na, dtype=np.bool_)


def wilson(
    x: ArrayLike, n: ArrayLike, alpha: float = 0.05
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson score (1 - alpha) interval for a binomial proportion (statsmodels' `proportion_confint`),
    z = Phi^{-1}(1 - alpha/2):

    (x + z^2/2) / (n + z^2)  -/+  z / (n + z^2) * sqrt(x (n - x) / n + z^2 / 4).

    It inverts the score test, so it stays inside [0, 1] and is not degenerate at x = 0 or x = n;
    coverage is close to 1 - alpha on average rather than guaranteed (use clopper_pearson for that).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    xa, na = _counts(x, n)
    # Here, not at the top: statsmodels costs a second to import, and the run path never needs it.
    from statsmodels.stats.proportion import proportion_confint

    low, high = (np.asarray(b, dtype=np.float64) for b in proportion_confint(xa, na, alpha, method="wilson"))
    return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)


def rate_interval(
    x: int, n: int, resampled: tuple[float, float] | None, alpha: float = 0.05
) -> tuple[float, float]:
    """The interval a headline rate shows: never narrower than the exact one for the same counts.

    [min(L_boot, L_CP), max(U_boot, U_CP)], the hull of the cluster-bootstrap percentile interval
    (between-task spread, when there was a bootstrap) and the Clopper–Pearson interval of the pooled
    counts x / n. A bootstrap over one or two tasks has one or three distinct resamples and can show
    `[0.667, 0.667]` for 4/6; the exact interval is the floor, so a zero count never shows an upper
    bound of 0. NaN endpoints of the bootstrap (no defined replicate) are ignored.
    """
    lo_cp, hi_cp = (float(v) for v in clopper_pearson(x, n, alpha))
    if resampled is None:
        return lo_cp, hi_cp
    lo_b, hi_b = resampled
    lo = min(lo_cp, lo_b) if np.isfinite(lo_b) else lo_cp
    hi = max(hi_cp, hi_b) if np.isfinite(hi_b) else hi_cp
    return lo, hi


def paired_difference_interval(
    a_only: int, b_only: int, pairs: int, alpha: float = 0.05
) -> tuple[float, float]:
    """An exact (conservative) interval for a paired difference of rates, p_A - p_B = p10 - p01.

    With n pairs, a_only = #(A's event, not B's) ~ Binomial(n, p10) and b_only = #(B's, not A's) ~
    Binomial(n, p01). Each gets a two-sided Clopper–Pearson interval at level 1 - alpha/2; by the union
    bound both cover at once with probability >= 1 - alpha, and then p10 - p01 lies in
    [L10 - U01, U10 - L01]. Guaranteed coverage for every (p10, p01), wider than the exact conditional
    (McNemar) interval, which cannot reach beyond the observed share of discordant pairs.
    """
    if pairs < 1:
        raise ValueError("need at least one pair")
    lo10, hi10 = clopper_pearson(a_only, pairs, alpha / 2.0)
    lo01, hi01 = clopper_pearson(b_only, pairs, alpha / 2.0)
    return max(-1.0, float(lo10 - hi01)), min(1.0, float(hi10 - lo01))
