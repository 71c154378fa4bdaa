"""Pools of cells and what is estimated over each: rates, miss rates, ICCs, beta-binomial fit,
cluster-bootstrap intervals, mean pass^k / safe^k and the heterogeneity-aware required k.

Pools are formed per condition: one per agent, and "all", which holds every agent of kind model
(reference and scripted agents calibrate the harness and are not pooled with models), or every
agent when there is no model. In a bootstrap the resampling unit is the task: a task's cells for
every agent in the pool travel together.

Only cells with a valid run enter an estimate. A pool also counts its invalid runs (those of its
cells with no valid run included), so that every pooled rate is shown beside them, with the range
[d / (N + u), (d + u) / (N + u)] the pooled damage rate would lie in whatever the u invalid runs
had been (d damaging of N valid runs). A pool is formed only where some cell has a valid run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from agentrel.analysis.betabinom import BetaBinomialFit, fit_beta_binomial
from agentrel.analysis.bootstrap import BootstrapInterval, cluster_bootstrap
from agentrel.analysis.intervals import rate_interval
from agentrel.analysis.normalized import usd
from agentrel.analysis.passk import pass_hat_k, safe_hat_k
from agentrel.analysis.pooled import FEATURES, POOL_STATISTICS, cell_features, pool_statistics_from_sums
from agentrel.analysis.required_k import all_clean_probability_beta, required_k, required_k_beta

K_VALUES = (1, 2, 4, 8, 16)
BOOTSTRAP_STATISTICS = (*POOL_STATISTICS, "expected_dollars_per_run")


@dataclass(frozen=True)
class PoolSpec:
    model: str  # an agent name, or "all"
    agent_kind: str  # the agent's kind; for "all": "model" (models only) or "mixed"
    condition: str
    agents: tuple[str, ...]


@dataclass(frozen=True)
class PoolResult:
    spec: PoolSpec
    cells: int
    damage_cells: int
    always_damage_cells: int
    stochastic_cells: int
    runs: int
    damaged_runs: int
    invalid: int  # invalid runs of the pool's agents under its condition
    unrated_cells: int  # cells whose runs were all invalid (in no estimate)
    damage_rate_bounds: tuple[float, float]  # if every invalid run had been safe / damaging
    # The damage rate's shown interval: the bootstrap's, never narrower than the exact one for the
    # pooled counts (intervals.rate_interval); None when the pool has no valid run.
    damage_rate_ci: tuple[float, float] | None
    stats: dict[str, float]  # the POOL_STATISTICS point estimates
    fit: BetaBinomialFit
    bootstrap: dict[str, BootstrapInterval]
    safe_hat_k: dict[int, float]
    pass_hat_k: dict[int, float]
    required_k_beta: int | None  # repeats for detection probability 1 - alpha under the fitted beta
    detection_beta: dict[int, float]  # 1 - B(a, b + k) / B(a, b) at K_VALUES
    expected_dollars_per_run: float | None


def pool_specs(cells: pd.DataFrame) -> list[PoolSpec]:
    """'all' then one pool per agent, for each condition in sorted order.

    An agent with no valid run under a condition forms no pool of its own, but it stays a member of
    "all", so that pool's invalid count includes its runs.
    """
    specs = []
    for condition, group in cells.groupby("condition", sort=True):
        by_agent = group.groupby("model", sort=True)
        kinds, rated = by_agent["agent_kind"].first(), by_agent["n"].sum() > 0
        if not rated.any():
            continue
        models = kinds[kinds == "model"]
        pool_models = bool(rated[models.index].any())
        members = tuple(models.index) if pool_models else tuple(kinds.index)
        specs.append(PoolSpec("all", "model" if pool_models else "mixed", str(condition), members))
        specs.extend(
            PoolSpec(str(name), str(kind), str(condition), (str(name),))
            for name, kind in kinds.items()
            if rated[name]
        )
    return specs


def pool_cells(cells: pd.DataFrame, spec: PoolSpec) -> pd.DataFrame:
    mask = (cells["condition"] == spec.condition) & cells["model"].isin(spec.agents)
    return cells[mask]


def invalid_bounds(damaged: int, valid: int, invalid: int) -> tuple[float, float]:
    """[d / (N + u), (d + u) / (N + u)]: the damage rate if every invalid run had been safe, or
    damaging (NaN when there is no run at all)."""
    total = valid + invalid
    if total == 0:
        return (math.nan, math.nan)
    return (damaged / total, (damaged + invalid) / total)


def _dollar_amounts(cells: pd.DataFrame) -> np.ndarray | None:
    if cells["dollars_total"].isna().all():
        return None
    return np.asarray(cells["dollars_total"].map(usd).to_numpy(dtype=np.float64), dtype=np.float64)


def task_features(cells: pd.DataFrame) -> np.ndarray:
    """Per-task sums of the cell features plus dollars (T x (F + 1)), tasks in sorted order."""
    feats = cell_features(cells["x"].to_numpy(), cells["n"].to_numpy())
    money = _dollar_amounts(cells)
    feats = np.column_stack([feats, money if money is not None else np.zeros(len(cells))])
    codes, _ = pd.factorize(cells["task"], sort=True)
    out = np.zeros((codes.max() + 1, feats.shape[1]))
    np.add.at(out, codes, feats)
    return out


def _statistics_with_dollars(sums: np.ndarray) -> np.ndarray:
    base = pool_statistics_from_sums(sums[..., : len(FEATURES)])
    with np.errstate(divide="ignore", invalid="ignore"):
        per_run = sums[..., len(FEATURES)] / sums[..., FEATURES.index("n")]
    return np.concatenate([base, per_run[..., None]], axis=-1)


def _mean_k(n: np.ndarray, c: pd.Series, k: int, fn: Callable[[int, int, int], float]) -> float:
    """Unweighted mean of fn(n_i, c_i, k) over cells with n_i >= k and c_i known (once per distinct pair)."""
    known = (~pd.isna(c)).to_numpy() & (n >= k)
    if not known.any():
        return math.nan
    pairs, counts = np.unique(
        np.stack([n[known], c[known].to_numpy(dtype=np.int64)], axis=1), axis=0, return_counts=True
    )
    values = [fn(int(ni), int(ci), k) for ni, ci in pairs]
    return math.fsum(v * w for v, w in zip(values, counts.tolist(), strict=True)) / int(counts.sum())


def _required_k_beta(fit: BetaBinomialFit, alpha: float) -> int | None:
    if fit.degenerate:
        return 1 if fit.mu == 1.0 else None
    if fit.boundary:
        return required_k(fit.mu, alpha)
    return required_k_beta(fit.a, fit.b, alpha)


def _detection_beta(fit: BetaBinomialFit) -> dict[int, float]:
    if fit.degenerate or fit.boundary:
        return {k: 1.0 - (1.0 - fit.mu) ** k for k in K_VALUES}
    return {k: float(1.0 - all_clean_probability_beta(fit.a, fit.b, k)) for k in K_VALUES}


def compute_pool(
    cells: pd.DataFrame, spec: PoolSpec, n_boot: int, rng: np.random.Generator, alpha: float = 0.05
) -> PoolResult:
    """Every pooled estimate for one pool (``cells`` already restricted to it; cells without a valid
    run are counted, not estimated from)."""
    invalid = int(cells["invalid"].sum()) if "invalid" in cells else 0
    unrated = int((cells["n"] == 0).sum())
    cells = cells[cells["n"] > 0]
    x = cells["x"].to_numpy()
    n = cells["n"].to_numpy()
    feats = task_features(cells)
    sums = feats.sum(axis=0)
    point = _statistics_with_dollars(sums)
    stats = dict(zip(POOL_STATISTICS, (float(v) for v in point[: len(POOL_STATISTICS)]), strict=True))
    fit = fit_beta_binomial(x, n, level=1.0 - alpha)
    boot = cluster_bootstrap(feats, _statistics_with_dollars, n_boot, rng, 1.0 - alpha) if n_boot > 0 else []
    has_money = _dollar_amounts(cells) is not None
    return PoolResult(
        spec=spec,
        cells=len(cells),
        damage_cells=int(np.count_nonzero(x)),
        always_damage_cells=int(cells["always_damage"].sum()),
        stochastic_cells=int(cells["demonstrably_stochastic"].sum()),
        runs=int(n.sum()),
        damaged_runs=int(x.sum()),
        invalid=invalid,
        unrated_cells=unrated,
        damage_rate_bounds=invalid_bounds(int(x.sum()), int(n.sum()), invalid),
        damage_rate_ci=rate_interval(
            int(x.sum()),
            int(n.sum()),
            boot[BOOTSTRAP_STATISTICS.index("damage_rate")].percentile if boot else None,
            alpha,
        )
        if n.sum() > 0
        else None,
        stats=stats,
        fit=fit,
        bootstrap={
            k: v
            for k, v in zip(BOOTSTRAP_STATISTICS, boot, strict=False)
            if has_money or k != "expected_dollars_per_run"
        },
        safe_hat_k={k: _mean_k(n, cells["x"], k, safe_hat_k) for k in K_VALUES},
        pass_hat_k={k: _mean_k(n, cells["passed"], k, pass_hat_k) for k in K_VALUES},
        required_k_beta=_required_k_beta(fit, alpha),
        detection_beta=_detection_beta(fit),
        expected_dollars_per_run=float(point[-1]) if has_money and math.isfinite(point[-1]) else None,
    )
