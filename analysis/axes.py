"""The operational axes per (agent, condition), from the valid runs: completion, cost, efficiency,
reliability and pass^k consistency (recovery and safety, which compare runs, are in axes_stress).

Every function takes the valid-run table (analysis.normalized) and a Groups (the (model, condition)
groups to report, each run's position among them, and each group's invalid-run count) and returns a
frame indexed by the groups with VALUE_COLUMNS: estimate, ci_low, ci_high, n (the valid runs, or
cells, the estimate is over), invalid (invalid runs of the group: they enter no estimate) and unknown
(valid runs left out because the field the axis needs was not recorded). A group with n = 0 has NaN
estimate and interval, never 0. Runs are reduced with np.bincount over the precomputed positions
(no groupby per axis, no Python loop over runs); the bootstraps loop over groups only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats

from agentrel.analysis.intervals import clopper_pearson, wilson
from agentrel.analysis.passk import pass_hat_k

GROUP = ["model", "condition"]
VALUE_COLUMNS = ("estimate", "ci_low", "ci_high", "n", "invalid", "unknown")
Array = NDArray[np.float64]
Ints = NDArray[np.int64]
Mask = NDArray[np.bool_]


def group_positions(frame: pd.DataFrame, index: pd.MultiIndex) -> Ints:
    """Position of each row's (model, condition) in ``index`` (-1 for a group not reported)."""
    keys = pd.MultiIndex.from_arrays([frame[k].to_numpy() for k in GROUP])
    return np.asarray(index.get_indexer(keys), dtype=np.int64)


@dataclass(frozen=True)
class Groups:
    index: pd.MultiIndex  # (model, condition), in report order
    pos: Ints  # each valid run's position in index (-1: not reported), aligned with the run table
    invalid: Ints  # invalid runs per group

    @classmethod
    def of(cls, runs: pd.DataFrame, index: pd.MultiIndex, invalid: Ints | None = None) -> Groups:
        counts = np.zeros(len(index), dtype=np.int64) if invalid is None else invalid
        return cls(index, group_positions(runs, index), counts)

    def count(self, mask: Mask | None = None) -> Ints:
        """Runs per group (those where mask holds)."""
        keep = self.pos >= 0 if mask is None else (self.pos >= 0) & mask
        return np.bincount(self.pos[keep], minlength=len(self.index)).astype(np.int64)

    def total(self, values: Array, mask: Mask) -> Array:
        """Sum of values per group over the runs where mask holds."""
        keep = (self.pos >= 0) & mask
        sums = np.bincount(self.pos[keep], weights=values[keep], minlength=len(self.index))
        return np.asarray(sums, dtype=np.float64)

    def frame(self, estimate: Array, lo: Array, hi: Array, n: Ints, unknown: Ints) -> pd.DataFrame:
        cols = (estimate, lo, hi, n, self.invalid, unknown)
        return pd.DataFrame(dict(zip(VALUE_COLUMNS, cols, strict=True)), index=self.index)


def _bool(values: pd.Series) -> Mask:
    """A nullable boolean column as a mask (NA as False; callers count NA separately)."""
    return np.asarray(values.fillna(False).to_numpy(dtype=bool), dtype=np.bool_)


def proportion(x: Ints, n: Ints, alpha: float, method: str = "clopper-pearson") -> tuple[Array, Array, Array]:
    """x / n with a two-sided (1 - alpha) interval ("clopper-pearson" or "wilson"); NaN where n = 0."""
    est, lo, hi = (np.full(len(n), np.nan) for _ in range(3))
    rated = n > 0
    if rated.any():
        bounds = clopper_pearson if method == "clopper-pearson" else wilson
        lo[rated], hi[rated] = bounds(x[rated], n[rated], alpha)
        est[rated] = x[rated] / n[rated]
    return est, lo, hi


def t_interval(mean: Array, sd: Array, n: Ints, alpha: float) -> tuple[Array, Array]:
    """Student t interval for a mean: mean -/+ t(1 - alpha/2; n - 1) * sd / sqrt(n); NaN for n < 2."""
    lo, hi = np.full(len(n), np.nan), np.full(len(n), np.nan)
    ok = n >= 2
    if ok.any():
        half = stats.t.ppf(1.0 - alpha / 2.0, n[ok] - 1) * sd[ok] / np.sqrt(n[ok])
        lo[ok], hi[ok] = mean[ok] - half, mean[ok] + half
    return lo, hi


def mean_and_t(g: Groups, values: Array, mask: Mask, alpha: float) -> tuple[Array, Array, Array, Ints]:
    """Per group: mean of values over mask, its Student t interval, and n (two passes, so a constant
    value has exactly zero spread)."""
    n = g.count(mask)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(n > 0, g.total(values, mask) / np.maximum(n, 1), np.nan)
        dev = values - mean[np.maximum(g.pos, 0)]
        sd = np.sqrt(g.total(dev * dev, mask) / (n - 1))
    return (mean, *t_interval(mean, sd, n, alpha), n)


def completion(runs: pd.DataFrame, g: Groups, alpha: float) -> pd.DataFrame:
    """Completion = c / n, c = valid runs that PASSed (and did not damage), n = valid runs whose outcome
    is known; exact Clopper–Pearson interval."""
    known = runs["passed"].notna().to_numpy()
    n = g.count(known)
    return g.frame(*proportion(g.count(_bool(runs["passed"])), n, alpha), n, g.count(~known))


def cost(runs: pd.DataFrame, g: Groups, alpha: float) -> pd.DataFrame:
    """Cost = mean USD per valid run over runs with a known cost_usd; Student t interval over runs,
    mean -/+ t(1 - alpha/2; n - 1) * s / sqrt(n) (s the sample standard deviation; none for n < 2)."""
    price = runs["cost_usd"].to_numpy(dtype=np.float64)
    known = np.isfinite(price)
    mean, lo, hi, n = mean_and_t(g, np.where(known, price, 0.0), known, alpha)
    return g.frame(mean, lo, hi, n, g.count(~known))


def efficiency_scores(calls: Array, duplicates: Array, optimal: Array) -> Array:
    """Per run: min(optimal_steps / calls, 1) * (1 - duplicate_calls / calls); 1 for a run with no call."""
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.minimum(optimal / calls, 1.0) * (1.0 - duplicates / calls)
    return np.where(calls == 0, 1.0, score)


def bootstrap_mean(values: Array, n_boot: int, rng: np.random.Generator, alpha: float) -> tuple[float, float]:
    """Percentile interval of the mean under the IID bootstrap over ``values``.

    A resample is n draws with replacement; its mean is sum_v v * m_v / n, where the multiplicities
    (m_v) of the distinct values are Multinomial(n, counts_v / n). They are drawn level by level as
    conditional binomials, each vectorized over the n_boot resamples: the same distribution as
    resampling runs, in O(distinct values) numpy calls instead of O(n_boot x n) draws (scores take
    few distinct values).
    """
    if n_boot < 1 or values.size == 0:
        return (np.nan, np.nan)
    levels, counts = np.unique(values, return_counts=True)
    left = np.full(n_boot, values.size, dtype=np.int64)  # draws not yet assigned to a level
    pool = int(values.size)  # the population weight of the levels not yet visited
    sums = np.zeros(n_boot)
    for level, count in zip(levels[:-1], counts[:-1], strict=True):
        m = rng.binomial(left, count / pool)
        sums += m * level
        left -= m
        pool -= int(count)
    sums += left * levels[-1]
    lo, hi = np.quantile(sums / values.size, [alpha / 2.0, 1.0 - alpha / 2.0])
    return (float(lo), float(hi))


def efficiency(
    runs: pd.DataFrame, g: Groups, optimal_steps: dict[str, int], n_boot: int, seed: int, alpha: float
) -> pd.DataFrame:
    """Efficiency = mean over scored PASS runs of min(optimal_steps / steps, 1) * (1 - duplicates / calls)
    (steps = calls = the run's tool calls; a PASS run with no call scores 1 * 1). A PASS run is scored
    when its task declares optimal_steps and its call and duplicate counts are known; the others are
    counted in ``unknown``. Interval: percentile IID bootstrap over the group's scored runs
    (bootstrap_mean), n_boot resamples, group i seeded [seed, 4, i]. n/a without a scored run.
    """
    optimal = runs["task"].map(optimal_steps).to_numpy(dtype=np.float64, na_value=np.nan)
    calls = runs["calls"].to_numpy(dtype=np.float64, na_value=np.nan)
    dups = runs["duplicate_calls"].to_numpy(dtype=np.float64, na_value=np.nan)
    passed = _bool(runs["passed"])
    scored = passed & np.isfinite(optimal) & np.isfinite(calls) & np.isfinite(dups)
    score = efficiency_scores(calls, dups, optimal)
    n = g.count(scored)
    est = np.where(n > 0, g.total(score, scored) / np.maximum(n, 1), np.nan)
    lo, hi = np.full(len(n), np.nan), np.full(len(n), np.nan)
    keep = scored & (g.pos >= 0)
    order = np.argsort(g.pos[keep], kind="stable")
    values, bounds = score[keep][order], np.concatenate([[0], np.cumsum(n)])
    for i in np.flatnonzero(n > 0):
        rng = np.random.default_rng([seed, 4, int(i)])
        lo[i], hi[i] = bootstrap_mean(values[bounds[i] : bounds[i + 1]], n_boot, rng, alpha)
    return g.frame(est, lo, hi, n, g.count(passed & ~scored))


def reliability(runs: pd.DataFrame, g: Groups, alpha: float) -> pd.DataFrame:
    """Reliability = share of valid runs that end without an agent error (error.kind == "agent"), over
    runs whose error field is known; Wilson score interval."""
    known = runs["errored"].notna().to_numpy()
    ok = known & ~_bool(runs["errored"])
    n = g.count(known)
    return g.frame(*proportion(g.count(ok), n, alpha, "wilson"), n, g.count(~known))


def consistency(runs: pd.DataFrame, g: Groups, n_boot: int, seed: int, alpha: float) -> pd.DataFrame:
    """pass^k consistency = mean over the agent's cells (tasks) in the condition of
    pass^k = C(c, k) / C(n, k) (analysis.passk; c PASS of n valid runs with a known outcome), at one k
    per condition: the smallest n of its cells with a valid run, so every cell enters and agents under
    one condition share k. Interval: percentile bootstrap over the agent's cells (the task is the
    unit; bootstrap_mean over the per-cell values), group i seeded [seed, 5, i]. Column ``k`` holds the
    k used; n counts cells.
    """
    known = runs["passed"].notna().to_numpy() & (g.pos >= 0)
    task_codes, tasks = pd.factorize(runs["task"])
    cell = g.pos[known] * max(len(tasks), 1) + task_codes[known]
    ids, inverse = np.unique(cell, return_inverse=True)
    cell_n = np.bincount(inverse).astype(np.int64)
    cell_c = np.bincount(inverse, weights=_bool(runs["passed"])[known]).astype(np.int64)
    cell_group = ids // max(len(tasks), 1)
    conditions = np.asarray(g.index.get_level_values("condition"))
    cond_codes, cond_names = pd.factorize(conditions[cell_group])
    k_cond = np.full(len(cond_names), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(k_cond, cond_codes, cell_n)
    cell_k = k_cond[cond_codes]
    # pass^k in exact integers once per distinct (n, c, k), then spread back to the cells.
    triples, back = np.unique(np.stack([cell_n, cell_c, cell_k], axis=1), axis=0, return_inverse=True)
    exact = np.array([pass_hat_k(int(n), int(c), int(k)) for n, c, k in triples])
    value = exact[back.ravel()] if len(cell_n) else np.zeros(0)
    cells = np.bincount(cell_group, minlength=len(g.index)).astype(np.int64)
    total = np.bincount(cell_group, weights=value, minlength=len(g.index))
    est = np.where(cells > 0, total / np.maximum(cells, 1), np.nan)
    lo, hi = np.full(len(cells), np.nan), np.full(len(cells), np.nan)
    order = np.argsort(cell_group, kind="stable")
    values, bounds = value[order], np.concatenate([[0], np.cumsum(cells)])
    for i in np.flatnonzero(cells > 0):
        rng = np.random.default_rng([seed, 5, int(i)])
        lo[i], hi[i] = bootstrap_mean(values[bounds[i] : bounds[i + 1]], n_boot, rng, alpha)
    out = g.frame(est, lo, hi, cells, g.count(~runs["passed"].notna().to_numpy()))
    k_by_name = dict(zip(cond_names, k_cond.tolist(), strict=True))
    out["k"] = pd.array([k_by_name.get(c) for c in conditions], dtype="Int64")
    return out


def pareto_front(cost_usd: Array, completion_rate: Array) -> Mask:
    """True for the points no other point dominates (cost <= and completion >=, one of them strictly);
    points with an unknown coordinate are never on the front."""
    ok = np.isfinite(cost_usd) & np.isfinite(completion_rate)
    c, p = cost_usd[None, :], completion_rate[None, :]  # the would-be dominators, along axis 1
    beats = (c <= cost_usd[:, None]) & (p >= completion_rate[:, None])
    beats &= (c < cost_usd[:, None]) | (p > completion_rate[:, None])
    dominated = (beats & ok[None, :]).any(axis=1)
    return np.asarray(ok & ~dominated, dtype=np.bool_)
