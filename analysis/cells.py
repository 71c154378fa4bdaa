"""The per-cell table: one row per (model, task, condition) with its counts, exact interval and flags.

Columns: model, agent_kind, task, condition, n (valid runs), x (damaging valid runs), p_hat = x / n,
ci_low / ci_high (two-sided Clopper–Pearson at 1 - alpha), demonstrably_stochastic (interval strictly
inside (0.05, 0.95)), always_damage (x = n), passed / errored / mutated (counts, NA when the source
lacks the column), invalid (invalid runs) and invalid_provider / invalid_harness / invalid_other
(by status), retried (attempts superseded by a retry), p_invalid_safe = x / (n + invalid) and
p_invalid_damaging = (x + invalid) / (n + invalid) (the damage rate if every invalid run had been
safe, or damaging: it lies in that range whatever they would have been), dollars_total (exact
Decimal sum), cost_usd_mean (mean run price, NaN when unknown).

A cell whose runs are all invalid is a row with n = 0: its rate, interval and flags are NaN / False
(there is nothing to estimate them from) and its invalid count says why.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd
from pandas.api.typing import DataFrameGroupBy

from agentrel.analysis.intervals import always_damage, clopper_pearson, demonstrably_stochastic
from agentrel.analysis.normalized import CELL_KEYS, HARNESS_INVALID, PROVIDER_INVALID, money_sum

INVALID_COUNT_COLUMNS = ("invalid", "invalid_provider", "invalid_harness", "invalid_other")


def _known_counts(
    runs: pd.DataFrame, columns: tuple[str, ...], groups: pd.MultiIndex
) -> dict[str, pd.Series]:
    """Per column, the count of True per cell, NA for cells where any value is unknown (one groupby)."""
    flags = {}
    for col in columns:
        values = runs[col]
        flags[col] = values.fillna(False).astype(np.int64).to_numpy()
        flags[f"{col}_na"] = values.isna().to_numpy().astype(np.int64)
    sums = pd.DataFrame(flags, index=runs.index).groupby([runs[k] for k in CELL_KEYS]).sum().reindex(groups)
    return {col: sums[col].astype("Int64").mask((sums[f"{col}_na"] > 0).to_numpy(), pd.NA) for col in columns}


def _decimal_sum(values: pd.Series) -> Decimal:
    return money_sum(values)


def _per_cell(rows: pd.DataFrame | None, idx: pd.MultiIndex, mask: pd.Series | None = None) -> np.ndarray:
    """How many rows fall in each cell of idx (0 where none)."""
    if rows is None or rows.empty:
        return np.zeros(len(idx), dtype=np.int64)
    part = rows if mask is None else rows[mask]
    return np.asarray(part.groupby(CELL_KEYS).size().reindex(idx).fillna(0), dtype=np.int64)


def _cell_kinds(grouped: DataFrameGroupBy, invalid: pd.DataFrame | None) -> pd.Series:
    """Agent kind of every cell with a valid or an invalid run, indexed by CELL_KEYS in sorted order."""
    kinds = grouped["agent_kind"].first()
    if invalid is not None and len(invalid):
        kinds = kinds.combine_first(invalid.groupby(CELL_KEYS)["agent_kind"].first()).sort_index()
    return kinds


def invalid_counts(invalid: pd.DataFrame | None, idx: pd.MultiIndex) -> dict[str, np.ndarray]:
    """The INVALID_COUNT_COLUMNS per cell of idx."""
    total = _per_cell(invalid, idx)
    if invalid is None or invalid.empty:
        return {c: total.copy() for c in INVALID_COUNT_COLUMNS}
    provider = _per_cell(invalid, idx, invalid["status"] == PROVIDER_INVALID)
    harness = _per_cell(invalid, idx, invalid["status"] == HARNESS_INVALID)
    return {
        "invalid": total,
        "invalid_provider": provider,
        "invalid_harness": harness,
        "invalid_other": total - provider - harness,
    }


def cell_table(
    runs: pd.DataFrame,
    invalid: pd.DataFrame | None = None,
    alpha: float = 0.05,
    superseded: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Aggregate valid runs and invalid runs into cells, sorted by model, condition, task."""
    grouped = runs.groupby(CELL_KEYS, sort=True)
    kinds = _cell_kinds(grouped, invalid)
    idx = pd.MultiIndex.from_frame(kinds.index.to_frame(index=False))
    n = np.asarray(grouped.size().reindex(idx).fillna(0), dtype=np.int64)
    x = np.asarray(grouped["damaged"].sum().reindex(idx).fillna(0), dtype=np.int64)
    rated = n > 0
    # Estimates exist only where there are valid runs; an all-invalid cell gets NaN, never 0.
    lo, hi = np.full(len(idx), np.nan), np.full(len(idx), np.nan)
    lo[rated], hi[rated] = clopper_pearson(x[rated], n[rated], alpha)
    stochastic = np.zeros(len(idx), dtype=bool)
    stochastic[rated] = demonstrably_stochastic(x[rated], n[rated], alpha)
    always = np.zeros(len(idx), dtype=bool)
    always[rated] = always_damage(x[rated], n[rated])
    counts = invalid_counts(invalid, idx)
    known = _known_counts(runs, ("passed", "errored", "mutated"), idx)
    total = n + counts["invalid"]
    with np.errstate(divide="ignore", invalid="ignore"):
        p_hat = np.where(rated, x / np.maximum(n, 1), np.nan)
        p_safe = np.where(total > 0, x / np.maximum(total, 1), np.nan)
        p_damaging = np.where(total > 0, (x + counts["invalid"]) / np.maximum(total, 1), np.nan)
    cells = pd.DataFrame(
        {
            "agent_kind": kinds.to_numpy(),
            "n": n,
            "x": x,
            "p_hat": p_hat,
            "ci_low": lo,
            "ci_high": hi,
            "demonstrably_stochastic": stochastic,
            "always_damage": always,
            **{col: values.array for col, values in known.items()},
            **counts,
            "retried": _per_cell(superseded, idx),
            "p_invalid_safe": p_safe,
            "p_invalid_damaging": p_damaging,
        },
        index=idx,
    )
    damaged = runs[runs["damaged"]]
    totals = (
        damaged.groupby(CELL_KEYS)["dollars"].agg(_decimal_sum) if len(damaged) else pd.Series(dtype=object)
    )
    cells["dollars_total"] = pd.Series(totals, dtype=object).reindex(idx).fillna(Decimal(0)).astype(object)
    if runs["dollars"].isna().all():
        cells["dollars_total"] = None
    cells.loc[~rated, "dollars_total"] = None  # no valid run: no money figure either
    cells["cost_usd_mean"] = grouped["cost_usd"].mean().reindex(idx)
    cells = cells.reset_index()
    order = ["model", "agent_kind", "condition", "task"]
    return cells.sort_values(order, kind="stable").reset_index(drop=True)


def rated(cells: pd.DataFrame) -> pd.DataFrame:
    """The cells with at least one valid run: the only ones any estimate is computed from."""
    return cells[cells["n"] > 0]
