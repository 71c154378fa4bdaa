"""The per-cell table: one row per (model, task, condition) with its counts, exact interval and flags.

Columns: model, agent_kind, task, condition, n (valid runs), x (damaging runs), p_hat = x / n,
ci_low / ci_high (two-sided Clopper–Pearson at 1 - alpha), demonstrably_stochastic (interval strictly
inside (0.05, 0.95)), always_damage (x = n), passed / errored / mutated (counts, NA when the source
lacks the column), infra_failures (excluded runs), dollars_total (exact Decimal sum), cost_usd_mean
(mean run price, NaN when unknown).
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd

from analysis.inputs import CELL_KEYS, money_sum
from analysis.intervals import always_damage, clopper_pearson, demonstrably_stochastic


def _count_known(runs: pd.DataFrame, column: str, groups: pd.MultiIndex) -> pd.Series:
    """Count of True per cell, NA for cells where any value of the column is unknown."""
    col = runs[column]
    grouped = runs.assign(_v=col.fillna(False).astype(int), _na=col.isna().astype(int)).groupby(CELL_KEYS)
    counts = grouped["_v"].sum().reindex(groups)
    unknown = grouped["_na"].sum().reindex(groups) > 0
    return counts.astype("Int64").mask(unknown.to_numpy(), pd.NA)


def _decimal_sum(values: pd.Series) -> Decimal:
    return money_sum(values)


def cell_table(runs: pd.DataFrame, failures: pd.DataFrame | None = None, alpha: float = 0.05) -> pd.DataFrame:
    """Aggregate the normalized per-run table into cells, sorted by model, condition, task."""
    grouped = runs.groupby(CELL_KEYS, sort=True)
    base = grouped.agg(agent_kind=("agent_kind", "first"), n=("damaged", "size"), x=("damaged", "sum"))
    idx = base.index
    n = base["n"].to_numpy(dtype=np.int64)
    x = base["x"].to_numpy(dtype=np.int64)
    lo, hi = clopper_pearson(x, n, alpha)
    cells = base.assign(
        p_hat=x / n,
        ci_low=lo,
        ci_high=hi,
        demonstrably_stochastic=demonstrably_stochastic(x, n, alpha),
        always_damage=always_damage(x, n),
        passed=_count_known(runs, "passed", idx),
        errored=_count_known(runs, "errored", idx),
        mutated=_count_known(runs, "mutated", idx),
    )
    damaged = runs[runs["damaged"]]
    totals = (
        damaged.groupby(CELL_KEYS)["dollars"].agg(_decimal_sum) if len(damaged) else pd.Series(dtype=object)
    )
    cells["dollars_total"] = pd.Series(totals, dtype=object).reindex(idx).fillna(Decimal(0)).astype(object)
    if runs["dollars"].isna().all():
        cells["dollars_total"] = None
    cells["cost_usd_mean"] = grouped["cost_usd"].mean().reindex(idx)
    if failures is not None and len(failures):
        fails = failures.groupby(CELL_KEYS).size().reindex(idx).fillna(0)
        cells["infra_failures"] = fails.astype(np.int64)
    else:
        cells["infra_failures"] = 0
    cells = cells.reset_index()
    cells["n"] = cells["n"].astype(np.int64)
    cells["x"] = cells["x"].astype(np.int64)
    order = ["model", "agent_kind", "condition", "task"]
    return cells.sort_values(order, kind="stable").reset_index(drop=True)
