"""The noise floor of an audit: how large a difference between two agents its n can show, how many
cells change verdict from one repeat to the next, and how far a single run of every task can land.

Three numbers, each from counts (O(cells), no loop over runs):

**Minimum detectable difference** (``mde``). Two agents' pooled damage rates over N valid runs each,
spread over T tasks (m = N / T runs a task). Runs of one task share a task effect, the intra-class
correlation rho (the beta-binomial fit's, ``analysis.betabinom``), so a pooled rate has variance
p (1 - p) DE / N with the design effect DE = 1 + (m - 1) rho (Kish). A two-sided test at alpha with power
1 - beta detects a difference delta when delta = Z sqrt(V(p) + V(p + delta)), Z = z_{1-alpha/2} + z_{1-beta},
the variance taken under both rates (so p = 0 still has a floor). With c = N / (Z^2 DE) that is the
quadratic (c + 1) delta^2 - (1 - 2p) delta - 2 p (1 - p) = 0, whose positive root is

    mde = [ (1 - 2p) + sqrt((1 - 2p)^2 + 8 p (1 - p) (c + 1)) ] / (2 (c + 1)),   p := min(p, 1 - p).

At p = 0 it is Z^2 DE / (N + Z^2 DE). The agents are taken as independent: AgentRel pairs them on shared
seeds and tasks, which can only lower the variance of the difference, so the floor is conservative.
The guarantee (checked by simulation in the tests): two agents whose rates differ by the mde, with the
stated rho, are told apart by the cluster-robust test at about the stated power.

**Flip share** (``flip_share``). Among cells with at least two valid runs, the share whose runs do not
all get the same verdict (PASS / FAIL_SAFE / FAIL_DAMAGE; damaging or not where passing is unknown).
A flipping cell's single run says little about it.

**Single-run range** (``single_run_range``). The damage rate a reader would see from one run of each of
the agent's T tasks, if each task damages at its observed rate x_t / n_t: the count of damaging tasks
is Poisson-binomial, computed exactly by convolution (O(T^2)); the range is its central ``level``
interval divided by T. It takes the observed rates as true, so it is the least spread a re-run shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

ALPHA = 0.05
POWER = 0.8
LEVEL = 0.95


def design_effect(runs: int, tasks: int, icc: float) -> float:
    """DE = 1 + (m - 1) rho with m = runs / tasks (rho clipped to [0, 1])."""
    m = runs / tasks
    return 1.0 + (m - 1.0) * min(max(icc, 0.0), 1.0)


def min_detectable_difference(
    rate: float, runs: int, tasks: int, icc: float, alpha: float = ALPHA, power: float = POWER
) -> float:
    """The mde of the module doc: the smallest difference in damage rate a two-sided test at `alpha`
    detects with `power`, for two agents with `runs` valid runs over `tasks` tasks each."""
    if runs < 1 or tasks < 1 or not 0.0 <= rate <= 1.0:
        raise ValueError("need runs >= 1, tasks >= 1 and a rate in [0, 1]")
    z = float(stats.norm.ppf(1.0 - alpha / 2.0) + stats.norm.ppf(power))
    c = runs / (z * z * design_effect(runs, tasks, icc))
    p = min(rate, 1.0 - rate)
    root = (1.0 - 2.0 * p) + math.sqrt((1.0 - 2.0 * p) ** 2 + 8.0 * p * (1.0 - p) * (c + 1.0))
    return root / (2.0 * (c + 1.0))


def flips(n: np.ndarray, damaged: np.ndarray, passed: np.ndarray | None) -> np.ndarray:
    """Per cell: do its valid runs disagree on the verdict? (False below two runs.) `passed` None or NaN
    where unknown: then only damaging against not."""
    n = np.asarray(n, dtype=np.float64)
    x = np.asarray(damaged, dtype=np.float64)
    two_way = (x > 0) & (x < n)
    if passed is None:
        return np.asarray(two_way & (n >= 2))
    ok = np.asarray(passed, dtype=np.float64)
    known = np.isfinite(ok)
    safe = n - x - np.where(known, ok, 0.0)
    kinds = (x > 0).astype(int) + (np.where(known, ok, 0.0) > 0) + (safe > 0)
    return np.asarray(np.where(known, kinds > 1, two_way) & (n >= 2))


def poisson_binomial(rates: np.ndarray) -> np.ndarray:
    """P(K = k), k = 0..T, for K the number of successes of independent Bernoulli(rates)."""
    pmf = np.ones(1)
    for p in np.asarray(rates, dtype=np.float64):
        pmf = np.convolve(pmf, [1.0 - p, p])
    return pmf


def single_run_range(rates: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The central `level` range of the mean of one Bernoulli draw per task (module doc)."""
    rates = np.asarray(rates, dtype=np.float64)
    if rates.size == 0:
        return (math.nan, math.nan)
    cdf = np.cumsum(poisson_binomial(rates))
    tail = (1.0 - level) / 2.0
    lo = int(np.searchsorted(cdf, tail - 1e-12))  # smallest k with P(K <= k) >= tail
    hi = int(np.searchsorted(cdf, 1.0 - tail - 1e-12))
    return (lo / rates.size, min(hi, rates.size) / rates.size)


@dataclass(frozen=True)
class PoolFloor:
    model: str
    condition: str
    runs: int
    tasks: int
    damage_rate: float
    icc: float  # the beta-binomial rho used (0 where the fit is degenerate or on the boundary)
    design_effect: float
    mde: float
    flipped_cells: int
    repeated_cells: int  # cells with >= 2 valid runs
    flip_share: float | None
    single_run_range: tuple[float, float]


@dataclass(frozen=True)
class NoiseFloor:
    alpha: float
    power: float
    level: float
    mde: float | None  # the largest agent pool's mde: a difference below it is below the floor for some pair
    flip_share: float | None
    flipped_cells: int
    repeated_cells: int
    pools: tuple[PoolFloor, ...]


def _share(flipped: int, repeated: int) -> float | None:
    return flipped / repeated if repeated else None


def fitted_icc(damaged: np.ndarray, runs: np.ndarray) -> float:
    """The beta-binomial rho of these cells (0 where the fit is degenerate: no spread to estimate)."""
    from agentrel.analysis.betabinom import fit_beta_binomial

    fit = fit_beta_binomial(np.asarray(damaged), np.asarray(runs))
    return 0.0 if fit.degenerate or not math.isfinite(fit.rho) else float(fit.rho)


def pool_floor(
    model: str,
    condition: str,
    damaged: np.ndarray,
    runs: np.ndarray,
    passed: np.ndarray | None,
    icc: float | None = None,
    alpha: float = ALPHA,
    power: float = POWER,
    level: float = LEVEL,
) -> PoolFloor:
    """One agent's floor under one condition from its cells (one per task, each with >= 1 valid run);
    `icc` None: fitted here."""
    x, n = np.asarray(damaged, dtype=np.int64), np.asarray(runs, dtype=np.int64)
    rho = fitted_icc(x, n) if icc is None else icc
    total, tasks = int(n.sum()), int(n.size)
    flipped = flips(n, x, passed)
    repeated = int((n >= 2).sum())
    rate = float(x.sum()) / total
    return PoolFloor(
        model=model,
        condition=condition,
        runs=total,
        tasks=tasks,
        damage_rate=rate,
        icc=rho,
        design_effect=design_effect(total, tasks, rho),
        mde=min_detectable_difference(rate, total, tasks, rho, alpha, power),
        flipped_cells=int(flipped.sum()),
        repeated_cells=repeated,
        flip_share=_share(int(flipped.sum()), repeated),
        single_run_range=single_run_range(x / n, level),
    )


def combine(
    pools: list[PoolFloor], alpha: float = ALPHA, power: float = POWER, level: float = LEVEL
) -> NoiseFloor:
    """The headline over agents' pools: the largest mde, and the flip share over every repeated cell."""
    flipped = sum(p.flipped_cells for p in pools)
    repeated = sum(p.repeated_cells for p in pools)
    return NoiseFloor(
        alpha=alpha,
        power=power,
        level=level,
        mde=max((p.mde for p in pools), default=None),
        flip_share=_share(flipped, repeated),
        flipped_cells=flipped,
        repeated_cells=repeated,
        pools=tuple(pools),
    )


def noise_floor(
    cells: pd.DataFrame, pools: list[Any], alpha: float = ALPHA, power: float = POWER, level: float = LEVEL
) -> NoiseFloor:
    """Every agent pool's floor (`pools`: analysis.pools.PoolResult, whose fitted rho is reused) from the
    cell table."""
    rated = cells[cells["n"] > 0]
    out = []
    for pool in pools:
        spec = pool.spec
        if spec.model == "all" or pool.runs == 0:
            continue
        mine = rated[(rated["model"] == spec.model) & (rated["condition"] == spec.condition)]
        passed = mine["passed"].to_numpy(dtype=np.float64, na_value=np.nan) if "passed" in mine else None
        rho = 0.0 if pool.fit.degenerate or not math.isfinite(pool.fit.rho) else float(pool.fit.rho)
        out.append(
            pool_floor(
                spec.model,
                spec.condition,
                mine["x"].to_numpy(),
                mine["n"].to_numpy(),
                passed,
                rho,
                alpha,
                power,
                level,
            )
        )
    return combine(out, alpha, power, level)
