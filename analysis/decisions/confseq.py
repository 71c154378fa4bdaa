"""An anytime-valid confidence sequence for a Bernoulli rate: the Robbins beta-binomial mixture.

Neither maintained PyPI package fits here: ``confseq`` 0.0.11 needs a C++/Boost build that fails on
this platform, and ``expectation`` has no installable release (only 0.0.2, unusable). So this is the
classical construction, written from its published definition.

**Construction** (Robbins 1970, "Statistical methods related to the law of the iterated logarithm";
Howard, Ramdas, McAuliffe & Sekhon 2021, "Time-uniform, nonparametric, nonasymptotic confidence
sequences", Ann. Statist., the beta-binomial mixture). With S_n damaging runs among the first n and a
Beta(a, b) mixing distribution, the mixture likelihood ratio against the rate p is

    M_n(p) = [B(a + S_n, b + n - S_n) / B(a, b)] / [p^S_n (1 - p)^(n - S_n)]

M_n(p) is a nonnegative martingale with M_0 = 1 under the rate p, so by Ville's inequality
P_p(exists n: M_n(p) >= 1/alpha) <= alpha, and

    C_n = { p : M_n(p) < 1/alpha }

covers p at every n simultaneously with probability at least 1 - alpha. The running intersection
of C_1..C_n keeps the guarantee. Hence the coverage at any stopping time, including "stop when the
half-width is at most W", is at least 1 - alpha; a fixed-n interval has no such guarantee.

**Known answers** (uniform mixing, a = b = 1, where B(1 + S, 1 + n - S) = 1 / ((n + 1) C(n, S))):
C_n = { p : (n + 1) C(n, S) p^S (1 - p)^(n - S) > alpha }; with S = 0 the upper end is
1 - (alpha / (n + 1))^(1/n), and with S = n the lower end is (alpha / (n + 1))^(1/n).

log M_n(p) is convex in p (minus a log-concave likelihood) and at p = S/n it is at most 0 (a mixture
never exceeds the maximum likelihood), so C_n is a nonempty interval found by bisection on each side.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

BISECTION_STEPS = 64  # each halves the bracket: 2^-64 is below double precision on [0, 1]


def _log_m(
    p: NDArray[np.float64], s: NDArray[np.float64], n: NDArray[np.float64], mix: NDArray[np.float64]
) -> NDArray[np.float64]:
    """log M_n(p), given the p-free mixture term log B(a + S, b + n - S) - log B(a, b)."""
    from scipy import special  # 0.2 s to import: not at the start of every command

    lik = special.xlogy(s, p) + special.xlog1py(n - s, -p)
    return np.asarray(mix - lik, dtype=np.float64)


def _check(alpha: float, a: float, b: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not (a > 0 and b > 0):
        raise ValueError(f"the mixing Beta needs a, b > 0, got a={a}, b={b}")


def bounds(
    s: ArrayLike, n: ArrayLike, alpha: float = 0.05, a: float = 1.0, b: float = 1.0
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """C_n = [lower, upper] for counts (S_n, n), vectorized; n = 0 gives [0, 1]."""
    _check(alpha, a, b)
    sa = np.asarray(s, dtype=np.float64)
    na = np.asarray(n, dtype=np.float64)
    sa, na = np.broadcast_arrays(sa, na)
    if np.any(na < 0) or np.any(sa < 0) or np.any(sa > na):
        raise ValueError("need 0 <= S <= n")
    from scipy import special

    cut = np.log(1.0 / alpha)
    mix = np.asarray(special.betaln(a + sa, b + na - sa) - special.betaln(a, b), dtype=np.float64)
    centre = np.divide(sa, na, out=np.full(sa.shape, 0.5), where=na > 0)
    # Lower end: log M decreases on (0, centre]; find where it falls below the cut.
    lo_out, lo_in = np.zeros(sa.shape), centre.copy()  # lo_out outside the set, lo_in inside
    hi_in, hi_out = centre.copy(), np.ones(sa.shape)
    for _ in range(BISECTION_STEPS):
        mid = 0.5 * (lo_out + lo_in)
        inside = _log_m(mid, sa, na, mix) < cut
        lo_in = np.where(inside, mid, lo_in)
        lo_out = np.where(inside, lo_out, mid)
        mid = 0.5 * (hi_in + hi_out)
        inside = _log_m(mid, sa, na, mix) < cut
        hi_in = np.where(inside, mid, hi_in)
        hi_out = np.where(inside, hi_out, mid)
    # An end reached by the bracket is closed: with S = 0 every small p is in the set.
    lower = np.where(sa == 0, 0.0, lo_out)
    upper = np.where(sa == na, 1.0, hi_out)
    return lower, upper


@dataclass(frozen=True)
class ConfidenceSequence:
    """The running-intersection confidence sequence along one stream of runs (index n - 1 = after n)."""

    lower: NDArray[np.float64]
    upper: NDArray[np.float64]

    def half_width(self) -> NDArray[np.float64]:
        return np.asarray((self.upper - self.lower) / 2.0, dtype=np.float64)


def sequence(outcomes: ArrayLike, alpha: float = 0.05, a: float = 1.0, b: float = 1.0) -> ConfidenceSequence:
    """C_1, ..., C_N for a 0/1 stream (1 = damaging run), each intersected with those before it."""
    x = np.asarray(outcomes, dtype=np.int64).ravel()
    if np.any((x != 0) & (x != 1)):
        raise ValueError("outcomes must be 0 or 1")
    n = np.arange(1, x.size + 1)
    lo, hi = bounds(np.cumsum(x), n, alpha, a, b)
    return ConfidenceSequence(np.maximum.accumulate(lo), np.minimum.accumulate(hi))


def stop_at_half_width(seq: ConfidenceSequence, half_width: float) -> int | None:
    """The first n whose interval has half-width <= W, or None when the stream ends before it."""
    if not half_width > 0:
        raise ValueError(f"half-width must be positive, got {half_width}")
    hit = np.flatnonzero(seq.half_width() <= half_width)
    return int(hit[0]) + 1 if hit.size else None


def precision_decision(s: int, n: int, half_width: float, alpha: float = 0.05) -> str:
    """The per-cell rule for ``--until precision``: "done" once C_n has half-width <= W, else
    "continue". (Without the running intersection: coverage holds either way; this can only stop
    later.)"""
    if not half_width > 0:
        raise ValueError(f"half-width must be positive, got {half_width}")
    lo, hi = bounds(s, n, alpha)
    return "done" if float(hi - lo) / 2.0 <= half_width else "continue"
