"""How many runs a comparison of two agents' damage rates needs.

**Paired design** (what AgentRel runs: both agents meet the same per-run seeds, so runs pair up).
A pair is discordant when exactly one agent damages: p10 = P(agent 1 damages, agent 2 does not),
p01 the reverse, psi = p10 + p01, delta = p10 - p01 = p1 - p2. McNemar's test (z = (b - c)/sqrt(b + c)
on the discordant counts) needs (Connor 1987, Biometrics 43:207)

    n = ( z_{1-alpha/2} sqrt(psi) + z_{power} sqrt(psi - delta^2) )^2 / delta^2   pairs.

Without a declared psi the agents' outcomes within a pair are taken as independent,
psi = p1 (1 - p2) + p2 (1 - p1); a positive within-pair correlation lowers psi and the runs needed, so
this is conservative for the usual case.

**Unpaired design** (independent runs): with Cohen's h = 2 asin sqrt(p1) - 2 asin sqrt(p2),
n = 2 ((z_{1-alpha/2} + z_{power}) / h)^2 runs per agent (2 asin sqrt(p-hat) has variance about 1/n,
so the difference has 2/n; the normal approximation statsmodels' NormalIndPower solves, which it
refines with the far tail).

**Clustered runs** (runs of one task share a task effect, intra-class correlation rho). With m runs
in each of T tasks the variance is inflated by the design effect DE = 1 + (m - 1) rho (Kish 1965), so
T m / DE must reach the independent n:

    m = ceil( n (1 - rho) / (T - n rho) ),  possible only when T > n rho.

**The exact test's power** (what `analyze` and `compare` run: the two-sided exact McNemar test,
p = min(1, 2 P(Binomial(d, 1/2) <= min(b, c))), significant when p <= alpha). With n pairs the
discordant count is D ~ Binomial(n, psi) and, given D = d, b ~ Binomial(d, p10 / psi). The test rejects
when min(b, c) <= k*(d), the largest k with 2 P(Binomial(d, 1/2) <= k) <= alpha (none for small d), so

    power(n) = sum_d P(D = d) [ P(b <= k*(d) | d) + P(b >= d - k*(d) | d) ]

summed exactly over d = 0..n (vectorised; O(n)). It is a discrete test: power is not monotone in n (a
sawtooth) and sits below Connor's large-sample value near the target (issue 34: 0.77 where 0.80 was
asked). `mcnemar_exact_pairs` is the smallest n whose exact power reaches the target, searched upward
from Connor's n (or downward when Connor's n already reaches it).

Guarantee: the large-sample formulas are approximations; the tests check them against statsmodels where
it applies, and the exact power against a simulation of statsmodels' exact McNemar test.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from scipy import stats


class PowerError(ValueError):
    """Inputs no design can satisfy, or out of range; one line saying what to change."""


# The standard normal from the standard library: the same quantiles and probabilities as scipy.stats.norm
# to within 2e-15, at ~4 µs a call rather than scipy's ~100 (analyze computes the power of every paired
# comparison of every task: 18,000 calls at 100,000 runs).
_NORMAL = NormalDist()


def _z(q: float) -> float:
    return _NORMAL.inv_cdf(q)


def _check(p1: float, p2: float, alpha: float, power: float) -> None:
    for name, v in (("--p1", p1), ("--p2", p2), ("--alpha", alpha), ("--power", power)):
        if not 0.0 < v < 1.0:
            raise PowerError(f"{name} must be in (0, 1), got {v}")
    if p1 == p2:
        raise PowerError("--p1 equals --p2: no number of runs detects a zero difference")


def independent_discordance(p1: float, p2: float) -> float:
    """psi = p1 (1 - p2) + p2 (1 - p1): discordant pairs when the two agents' runs are independent."""
    return p1 * (1.0 - p2) + p2 * (1.0 - p1)


def mcnemar_pairs(
    p1: float, p2: float, alpha: float = 0.05, power: float = 0.8, discordant: float | None = None
) -> int:
    """Pairs for McNemar's test to detect p1 != p2 (two-sided alpha) with the given power (Connor)."""
    _check(p1, p2, alpha, power)
    delta = p1 - p2
    psi = independent_discordance(p1, p2) if discordant is None else discordant
    if not abs(delta) < psi <= 1.0:
        raise PowerError(f"the discordant share must be in (|p1 - p2|, 1], got {psi}")
    root = _z(1.0 - alpha / 2.0) * math.sqrt(psi) + _z(power) * math.sqrt(psi - delta**2)
    return math.ceil(root**2 / delta**2)


def mcnemar_power(
    n: int, p1: float, p2: float, alpha: float = 0.05, discordant: float | None = None
) -> float:
    """The power of McNemar's test with n pairs (Connor's formula solved for power)."""
    delta = p1 - p2
    psi = independent_discordance(p1, p2) if discordant is None else discordant
    z = (abs(delta) * math.sqrt(n) - _z(1.0 - alpha / 2.0) * math.sqrt(psi)) / math.sqrt(psi - delta**2)
    return _NORMAL.cdf(z)


def discordant_shares(p1: float, p2: float, discordant: float | None = None) -> tuple[float, float]:
    """(p10, p01): P(only agent 1 damages), P(only agent 2 damages); independent within a pair unless the
    discordant share psi is declared (then p10 = (psi + delta) / 2, p01 = (psi - delta) / 2)."""
    if discordant is None:
        return p1 * (1.0 - p2), p2 * (1.0 - p1)
    delta = p1 - p2
    if not abs(delta) < discordant <= 1.0:
        raise PowerError(f"the discordant share must be in (|p1 - p2|, 1], got {discordant}")
    return (discordant + delta) / 2.0, (discordant - delta) / 2.0


def exact_critical(d: np.ndarray, alpha: float) -> np.ndarray:
    """k*(d): the largest k with 2 P(Binomial(d, 1/2) <= k) <= alpha, -1 when even k = 0 is not."""
    k = stats.binom.ppf(alpha / 2.0, d, 0.5).astype(np.int64)  # smallest k with cdf(k) >= alpha / 2
    # Step back where that k's tail is above alpha / 2 (with a relative slack for float ties, so an
    # exact tie, which the p <= alpha rule rejects, is kept).
    over = 2.0 * stats.binom.cdf(k, d, 0.5) > alpha * (1.0 + 1e-12)
    return np.asarray(np.where(over, k - 1, k), dtype=np.int64)


def mcnemar_exact_power(
    n: int, p1: float, p2: float, alpha: float = 0.05, discordant: float | None = None
) -> float:
    """The power of the two-sided exact McNemar test (p <= alpha) with n pairs, exactly (module doc)."""
    if n < 1:
        return 0.0
    p10, p01 = discordant_shares(p1, p2, discordant)
    psi = p10 + p01
    d = np.arange(n + 1)
    k = exact_critical(d, alpha)
    q = p10 / psi
    low = np.where(k >= 0, stats.binom.cdf(k, d, q), 0.0)  # b <= k*
    high = np.where(k >= 0, stats.binom.sf(d - k - 1, d, q), 0.0)  # b >= d - k*
    return float(np.sum(stats.binom.pmf(d, n, psi) * np.minimum(low + high, 1.0)))


def mcnemar_exact_pairs(
    p1: float, p2: float, alpha: float = 0.05, power: float = 0.8, discordant: float | None = None
) -> int:
    """The smallest n whose exact McNemar power reaches `power` (see the module doc)."""
    start = mcnemar_pairs(p1, p2, alpha, power, discordant)
    n = start
    if mcnemar_exact_power(n, p1, p2, alpha, discordant) >= power:
        # Connor's n suffices: step down while the one below it still does.
        while n > 1 and mcnemar_exact_power(n - 1, p1, p2, alpha, discordant) >= power:
            n -= 1
        return n
    step = max(1, start // 200)  # far below the target the sawtooth is small: gallop, then walk back
    while mcnemar_exact_power(n + step, p1, p2, alpha, discordant) < power:
        n += step
        if n > 50 * start + 1000:
            raise PowerError("the exact test does not reach this power at any practical number of pairs")
    for m in range(n + 1, n + step + 1):
        if mcnemar_exact_power(m, p1, p2, alpha, discordant) >= power:
            return m
    return n + step


def observed_power(pairs: int, a_only: int, b_only: int, alpha: float = 0.05) -> float | None:
    """The power a paired comparison had for the difference it observed: `mcnemar_power` at the observed
    discordant shares p10 = a_only / pairs, p01 = b_only / pairs (so delta = p1 - p2 and psi = p10 + p01
    are the observed ones). None when there is no difference to have power for (no pairs, or
    a_only == b_only). A post-hoc figure: it says how likely a study of this size was to call a
    difference of this size significant, not how likely the observed difference is to be real."""
    if pairs <= 0 or a_only == b_only:
        return None
    psi = (a_only + b_only) / pairs
    delta = (a_only - b_only) / pairs
    if psi - delta**2 <= 0.0:  # every pair discordant, all one way: the test statistic has no spread
        return 1.0 if abs(delta) * math.sqrt(pairs) > _z(1.0 - alpha / 2.0) * math.sqrt(psi) else 0.0
    return mcnemar_power(pairs, delta, 0.0, alpha, discordant=psi)


def cohen_h(p1: float, p2: float) -> float:
    return 2.0 * math.asin(math.sqrt(p1)) - 2.0 * math.asin(math.sqrt(p2))


def unpaired_runs(p1: float, p2: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Runs per agent for two independent samples (arcsine normal approximation)."""
    _check(p1, p2, alpha, power)
    return math.ceil(2.0 * ((_z(1.0 - alpha / 2.0) + _z(power)) / cohen_h(p1, p2)) ** 2)


def design_effect(icc: float, runs_per_task: int) -> float:
    """DE = 1 + (m - 1) rho."""
    return 1.0 + (runs_per_task - 1) * icc


@dataclass(frozen=True)
class Clustered:
    tasks: int
    runs_per_task: int
    design_effect: float
    total_runs: int


def clustered(independent_n: int, icc: float, tasks: int) -> Clustered:
    """Runs per task so that T tasks of m runs carry the information of `independent_n` runs."""
    if not 0.0 <= icc < 1.0:
        raise PowerError(f"--icc must be in [0, 1), got {icc}")
    if tasks < 1:
        raise PowerError(f"--tasks must be at least 1, got {tasks}")
    if tasks <= independent_n * icc:
        need = math.floor(independent_n * icc) + 1
        raise PowerError(
            f"with ICC {icc:g}, {tasks} tasks cannot reach the power at any number of runs per task; "
            f"use at least {need} tasks"
        )
    m = max(1, math.ceil(independent_n * (1.0 - icc) / (tasks - independent_n * icc) - 1e-12))
    return Clustered(tasks, m, design_effect(icc, m), tasks * m)
