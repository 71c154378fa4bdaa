"""Flat CSV files for other tools: the insurer's damage-event file, the per-cell file, the axes file.

damages: one row per damage event of a valid run, columns DAMAGE_COLUMNS; ``spec`` names the spec
whose rule produced the event (the task's id, or "injection:<goal id>" when the agent did what an
injected payload asked), so injection-caused loss separates from the task's own ("" in records from
before the harness wrote it). An outcomes CSV has no
events, so each damaged run becomes one row with rule, table and key empty and the run's severity,
irreversibility and dollars. Money is written from Decimal, exactly as recorded.
cells: one row per cell, columns CELL_EXPORT_COLUMNS (counts, exact interval, flags, expected loss
per run with its interval, loss given damage, repeats needed). n (valid runs) and invalid sit beside
every rate; a cell whose runs were all invalid is a row with n = 0 and every rate empty.
axes: one row per operational axis and (agent, condition), AXIS_COLUMNS (analysis.axes_table).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from agentrel.analysis.audit_plan import audit_plan
from agentrel.analysis.axes_table import AXIS_COLUMNS, AxesResult
from agentrel.analysis.normalized import LoadedInput

DAMAGE_COLUMNS = (
    "run_id",
    "model",
    "task",
    "condition",
    "run_index",
    "rule",
    "severity",
    "irreversibility",
    "table",
    "key",
    "dollars",
    "protocol_hash",
    "agent_kind",
    "spec",  # appended last, like agent_kind before it, so positional readers keep working
)
CELL_EXPORT_COLUMNS = (
    "model",
    "agent_kind",
    "task",
    "condition",
    "n",
    "invalid",
    "x",
    "p_hat",
    "ci_low",
    "ci_high",
    "p_invalid_safe",
    "p_invalid_damaging",
    "demonstrably_stochastic",
    "always_damage",
    "passed",
    "errored",
    "mutated",
    "invalid_provider",
    "invalid_harness",
    "invalid_other",
    "retried",
    "dollars_total",
    "expected_dollars_per_run",
    "dollars_ci_low",
    "dollars_ci_high",
    "lgd_mean",
    "lgd_max",
    "lgd_p50",
    "lgd_p90",
    "k_point",
    "k_conservative",
    "cost_usd_mean",
)


def damages_frame(loaded: LoadedInput) -> pd.DataFrame:
    """The damage events of the valid runs, one row each (see module docstring)."""
    ev = loaded.events.rename(columns={"run": "run_index"})
    return ev.loc[:, list(DAMAGE_COLUMNS)].reset_index(drop=True)


def cells_export_frame(
    cells: pd.DataFrame, alpha: float = 0.05, plan: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per-cell export from a cell frame (pipeline.cell_frame), with the repeats needed at 1 - alpha.

    ``plan`` is audit_plan(cells, 1 - alpha) when the caller already has it.
    """
    plan = audit_plan(cells, target=1.0 - alpha) if plan is None else plan
    # .array keeps the nullable integers: to_numpy() would turn a column with NA into floats ("6.0").
    out = cells.assign(k_point=plan["k_point"].array, k_conservative=plan["k_conservative"].array)
    return out.loc[:, list(CELL_EXPORT_COLUMNS)]


def axes_export_frame(axes: AxesResult) -> pd.DataFrame:
    """The operational axes, one row per axis and (agent, condition); an undefined estimate is empty."""
    return axes.table.loc[:, list(AXIS_COLUMNS)]


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write with '' for missing values; Decimal cells are written via str(), so no rounding."""
    frame.to_csv(path, index=False, lineterminator="\n", na_rep="")
