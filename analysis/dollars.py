"""Dollars: expected loss per run with an interval, and loss given damage, per cell and per class.

Per cell, with d_j the dollars of run j (0 for a clean run) and n valid runs:
    expected loss per run  E = sum_j d_j / n
    interval               percentile bootstrap over the cell's runs (runs are IID within a cell)
    loss given damage      mean, max and empirical quantiles (type-7, linear) of d_j over damaged runs
A cell with no priced damage gets E = 0 and the degenerate interval [0, 0]: the data say nothing
about the size of losses it did not show (its damage *rate* bound is ci_high in the cell table).

Per class (severity or irreversibility) and pool: the class's dollars summed over events, divided
by the pool's valid runs, with a cluster bootstrap interval over tasks; loss given damage is over
the runs that had at least one event of the class (the run's dollars in that class).
Exact sums are Decimal; statistics are float.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from agentrel.analysis.bootstrap import cluster_bootstrap, draw_cluster_weights, weighted_sums
from agentrel.analysis.normalized import CELL_KEYS, money_sum, usd

QUANTILES = (0.5, 0.9)
LGD_COLUMNS = ("lgd_mean", "lgd_max", "lgd_p50", "lgd_p90")


def loss_given_damage(values: np.ndarray) -> dict[str, float]:
    """Mean, max, median and 90th percentile of the losses of damaged runs (NaN when none)."""
    if values.size == 0:
        return dict.fromkeys(LGD_COLUMNS, float("nan"))
    q50, q90 = np.quantile(values, QUANTILES)
    return {
        "lgd_mean": float(values.mean()),
        "lgd_max": float(values.max()),
        "lgd_p50": float(q50),
        "lgd_p90": float(q90),
    }


def _boot_means(block: np.ndarray, n_boot: int, rng: np.random.Generator, level: float) -> np.ndarray:
    """Percentile interval of the mean of each row of block (cells x n runs), shared resamples."""
    n = block.shape[1]
    weights = draw_cluster_weights(n, n_boot, rng).astype(np.float64)  # runs are the resampling unit
    means = weighted_sums(weights, block.T).T / n  # (cells, n_boot)
    a = (1.0 - level) / 2.0
    return np.asarray(np.quantile(means, [a, 1.0 - a], axis=1).T, dtype=np.float64)


def cell_dollars(
    runs: pd.DataFrame, cells: pd.DataFrame, n_boot: int, rng: np.random.Generator, level: float = 0.95
) -> pd.DataFrame:
    """Per cell (aligned with ``cells``): expected_dollars_per_run, its interval, loss given damage.

    All columns are NaN when the input carries no dollar figures, and for cells without a valid run;
    the interval is NaN for priced cells when n_boot = 0.
    """
    out = pd.DataFrame(
        index=cells.index,
        columns=["expected_dollars_per_run", "dollars_ci_low", "dollars_ci_high", *LGD_COLUMNS],
        dtype=float,
    )
    if runs["dollars"].isna().all():
        return out
    amounts = runs["dollars"].map(usd).to_numpy(dtype=np.float64)
    key = pd.MultiIndex.from_frame(runs[CELL_KEYS])
    pos = pd.MultiIndex.from_frame(cells[CELL_KEYS]).get_indexer(key)
    n = cells["n"].to_numpy()
    total = np.bincount(pos, weights=amounts, minlength=len(cells))
    # A cell with no valid run (all invalid) has no expected loss: NaN, not $0.
    unrated = n == 0
    out["expected_dollars_per_run"] = np.where(unrated, np.nan, total / np.maximum(n, 1))
    out["dollars_ci_low"] = np.where(unrated, np.nan, 0.0)
    out["dollars_ci_high"] = np.where(unrated, np.nan, 0.0)
    damaged = runs["damaged"].to_numpy()
    priced = np.flatnonzero(total > 0)
    out.loc[priced, ["dollars_ci_low", "dollars_ci_high"]] = np.nan
    if priced.size and n_boot > 0:
        order = np.argsort(pos, kind="stable")
        starts = np.searchsorted(pos[order], np.arange(len(cells)))
        by_n: dict[int, list[int]] = {}
        for c in priced:
            by_n.setdefault(int(n[c]), []).append(int(c))
        for size, members in sorted(by_n.items()):
            block = np.stack([amounts[order[starts[c] : starts[c] + size]] for c in members])
            ci = _boot_means(block, n_boot, rng, level)
            out.loc[members, "dollars_ci_low"] = ci[:, 0]
            out.loc[members, "dollars_ci_high"] = ci[:, 1]
    hit = pd.Series(amounts[damaged]).groupby(pos[damaged])
    lgd = pd.DataFrame(
        {
            "lgd_mean": hit.mean(),
            "lgd_max": hit.max(),
            "lgd_p50": hit.quantile(QUANTILES[0]),
            "lgd_p90": hit.quantile(QUANTILES[1]),
        }
    )
    out.loc[lgd.index, list(LGD_COLUMNS)] = lgd.to_numpy()
    return out


def loss_by_class(
    events: pd.DataFrame,
    pool_cells: pd.DataFrame,
    dimensions: tuple[str, ...],
    n_boot: int,
    rng: np.random.Generator,
    level: float = 0.95,
) -> pd.DataFrame:
    """Per class of each dimension (severity, irreversibility) over one pool (``pool_cells``: its cells).

    Columns: dimension, class, events, runs_hit, dollars_total (Decimal), expected_dollars_per_run,
    ci_low, ci_high (cluster bootstrap over tasks, percentile; one set of resamples for every class)
    and the loss-given-damage columns. Events without a class are reported under "unclassified".
    """
    conditions = set(pool_cells["condition"])
    mine = events["model"].isin(set(pool_cells["model"])) & events["condition"].isin(conditions)
    ev = events[mine]
    if ev.empty:
        return pd.DataFrame()
    ev = ev.assign(usd=ev["dollars"].map(usd))
    n_by_task = pool_cells.groupby("task", sort=True)["n"].sum()
    groups = [
        (dim, cls, group)
        for dim in dimensions
        for cls, group in ev.assign(cls=ev[dim].fillna("unclassified")).groupby("cls", sort=True)
    ]
    per_task = [
        group.groupby("task")["usd"].sum().reindex(n_by_task.index).fillna(0.0) for _, _, group in groups
    ]
    feats = np.column_stack([n_by_task.to_numpy(dtype=np.float64), *per_task])
    intervals = [(np.nan, np.nan)] * len(groups)
    if n_boot > 0:
        boot = cluster_bootstrap(feats, lambda s: s[..., 1:] / s[..., :1], n_boot, rng, level)
        intervals = [b.percentile for b in boot]
    rows = []
    for (dim, cls, group), ci, col in zip(groups, intervals, range(1, feats.shape[1]), strict=True):
        per_run = group.groupby("run_id")["usd"].sum()
        rows.append(
            {
                "dimension": dim,
                "class": cls,
                "events": len(group),
                "runs_hit": int(per_run.size),
                "dollars_total": money_sum(group["dollars"]),
                "expected_dollars_per_run": float(feats[:, col].sum() / feats[:, 0].sum()),
                "ci_low": ci[0],
                "ci_high": ci[1],
                **loss_given_damage(per_run.to_numpy()),
            }
        )
    return pd.DataFrame(rows)
