"""Run every estimator over a loaded input: data in, an Analysis out (no files, no console).

Randomness is seeded per purpose, so a number does not change when another is added: cell dollar
intervals use the generator seeded [seed, 1], pool i's cluster bootstrap [seed, 2, i], pool i's
dollar classes [seed, 3, i], and the operational axes' group i [seed, 4, i] (efficiency) and
[seed, 5, i] (pass^k consistency).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from agentrel.analysis.audit_plan import audit_plan
from agentrel.analysis.axes_table import AxesResult, operational_axes
from agentrel.analysis.cells import cell_table, rated
from agentrel.analysis.dollars import cell_dollars, loss_by_class
from agentrel.analysis.normalized import LoadedInput
from agentrel.analysis.paired import PairedDifference, paired_differences
from agentrel.analysis.pools import PoolResult, compute_pool, pool_cells, pool_specs

Progress = Callable[[str], None]
CLASS_DIMENSIONS = ("severity", "irreversibility")


@dataclass
class Analysis:
    loaded: LoadedInput
    cells: pd.DataFrame  # cell_table columns + cell_dollars columns; all-invalid cells have n = 0
    pools: list[PoolResult]
    dollar_classes: pd.DataFrame  # pool, condition, dimension, class, ... (loss_by_class columns)
    plan: pd.DataFrame  # audit_plan at target 1 - alpha
    n_boot: int
    seed: int
    alpha: float
    axes: AxesResult  # the operational axes per (agent, condition)

    @functools.cached_property
    def paired(self) -> list[PairedDifference]:
        """Every paired comparison of the loaded runs (analysis.paired), computed once: the report's
        section and the command's power lines both read it (at 100,000 runs, 0.8 s each time)."""
        return paired_differences(self.loaded.runs)


def _quiet(_: str) -> None:
    return None


def core_statistics(cells: pd.DataFrame, n_boot: int, seed: int, alpha: float = 0.05) -> list[PoolResult]:
    """Every pool's estimates: rates, miss rates, ICCs, beta-binomial fit, cluster bootstrap."""
    return [
        compute_pool(pool_cells(cells, spec), spec, n_boot, np.random.default_rng([seed, 2, i]), alpha)
        for i, spec in enumerate(pool_specs(cells))
    ]


def dollar_classes(
    loaded: LoadedInput,
    cells: pd.DataFrame,
    pools: list[PoolResult],
    n_boot: int,
    seed: int,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Loss by severity and by irreversibility class for every pool (empty without dollars)."""
    if not loaded.has_dollars or loaded.events.empty:
        return pd.DataFrame()
    frames = []
    for i, pool in enumerate(pools):
        spec = pool.spec
        rng = np.random.default_rng([seed, 3, i])
        table = loss_by_class(
            loaded.events, rated(pool_cells(cells, spec)), CLASS_DIMENSIONS, n_boot, rng, 1.0 - alpha
        )
        if len(table):
            frames.append(table.assign(pool=spec.model, condition=spec.condition))
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    lead = ["pool", "condition", "dimension", "class"]
    return out[lead + [c for c in out.columns if c not in lead]]


def cell_frame(loaded: LoadedInput, n_boot: int, seed: int, alpha: float = 0.05) -> pd.DataFrame:
    """The cell table with each cell's dollars (expected loss per run, interval, loss given damage)."""
    cells = cell_table(loaded.runs, loaded.invalid, alpha, loaded.superseded)
    money = cell_dollars(loaded.runs, cells, n_boot, np.random.default_rng([seed, 1]), 1.0 - alpha)
    return pd.concat([cells, money], axis=1)


def analyze(
    loaded: LoadedInput,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
    progress: Progress | None = None,
) -> Analysis:
    """Every estimate the reports show, from one loaded input."""
    say = progress or _quiet
    if n_boot < 0:
        raise ValueError("n_boot must be >= 0")
    say(f"cells: {len(loaded.runs)} valid runs, {len(loaded.invalid)} invalid")
    cells = cell_frame(loaded, n_boot, seed, alpha)
    say(f"pools: beta-binomial fits and {n_boot}-resample cluster bootstrap")
    pools = core_statistics(cells, n_boot, seed, alpha)
    say("dollars by severity and irreversibility")
    classes = dollar_classes(loaded, cells, pools, n_boot, seed, alpha)
    say("audit plan")
    plan = audit_plan(cells, target=1.0 - alpha)
    say("operational axes")
    axes = operational_axes(loaded, alpha=alpha, n_boot=n_boot, seed=seed)
    return Analysis(loaded, cells, pools, classes, plan, n_boot, seed, alpha, axes)
