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

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

import pandas as pd

from agentrel.analysis.audit_plan import audit_plan
from agentrel.analysis.axes_table import AXIS_COLUMNS, AxesResult
from agentrel.analysis.damage_amount import is_unpriced
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
    # Appended for the insurer (issue 26): priced tells a rule without a price from one priced at zero.
    "priced",
    "currency",
    "op",
    "changed_columns",
    "rows",
    "aggregate",
    "key_columns",
    "key_1",
    "key_2",
    "key_3",
)
KEY_PARTS = 3  # key_1..key_3: the widest primary key of the sandbox has two columns
CURRENCY = "USD"  # every damage price is in US dollars (the specs' `price` expressions)
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


@dataclass(frozen=True)
class DamagePricing:
    """What the audit's specs and dumps say beside the records: whether each (spec, rule) has a price,
    and each table's key column names (harness.damage_pricing builds it)."""

    priced: Mapping[tuple[str, str], bool]
    key_names: Mapping[str, tuple[str, ...]]


def _priced(spec: str, rule: str, synthesized: bool, pricing: DamagePricing) -> str:
    if synthesized:
        return "unknown"  # an outcomes CSV names no rule
    known = pricing.priced.get((spec, rule))
    return "unknown" if known is None else ("priced" if known else "unpriced")


def unpriced_counts(frame: pd.DataFrame) -> tuple[int, int]:
    """(unpriced events, of them high or critical) in a damages_frame."""
    unpriced = frame[frame["priced"] == "unpriced"]
    return len(unpriced), int(unpriced["severity"].isin(["high", "critical"]).sum())


def damages_frame(loaded: LoadedInput, pricing: DamagePricing | None = None) -> pd.DataFrame:
    """The damage events of the valid runs, one row each (see module docstring).

    ``priced`` is `priced`, `unpriced` (the rule has no price: dollars left empty, never 0.00) or
    `unknown` (no spec to ask: an outcomes CSV, or a spec changed since the audit)."""
    pricing = pricing or DamagePricing({}, {})
    ev = loaded.events.rename(columns={"run": "run_index"}).reset_index(drop=True)
    synthesized = loaded.events_synthesized
    priced = [_priced(s, r, synthesized, pricing) for s, r in zip(ev["spec"], ev["rule"], strict=True)]
    ev["priced"] = priced
    ev["dollars"] = [d if p != "unpriced" else None for d, p in zip(ev["dollars"], priced, strict=True)]
    ev["currency"] = CURRENCY
    ev["key_columns"] = [
        "group by" if agg else ";".join(pricing.key_names.get(t, ()))
        for t, agg in zip(ev["table"], ev["aggregate"], strict=True)
    ]
    for i in range(KEY_PARTS):
        ev[f"key_{i + 1}"] = [v[i] if isinstance(v, list) and len(v) > i else None for v in ev["key_values"]]
    return ev.loc[:, list(DAMAGE_COLUMNS)]


RUN_EXPORT_COLUMNS = (
    "run_id",
    "model",
    "agent_kind",
    "task",
    "condition",
    "run_index",
    "status",
    "outcome",
    "damaging",
    "dollars",
    "currency",
    "events",
    "unpriced_events",
    "cost_usd",
    "cost_source",
    "valid_runs_in_cell",
    "invalid_runs_in_cell",
)


def runs_frame(loaded: LoadedInput, pricing: DamagePricing | None = None) -> pd.DataFrame:
    """One row per run, valid or not, with its cell's valid and invalid run counts: the frequency
    denominator beside the damage events. An invalid run has no outcome, damaging or dollars (its
    verdict, if any, never counts). `unpriced_events` counts the run's events without a price
    (analysis.damage_amount's rule), so `dollars` 0.00 beside them is never read as a $0 loss."""
    keys = ["model", "task", "condition"]
    valid = loaded.runs
    ev = loaded.events
    per_run = ev.groupby("run_id").size() if not ev.empty else pd.Series(dtype=int)
    priced = (pricing or DamagePricing({}, {})).priced
    unpriced: dict[str, int] = {}
    for rid, spec, rule, dollars in zip(ev["run_id"], ev["spec"], ev["rule"], ev["dollars"], strict=True):
        if is_unpriced(str(spec or ""), str(rule or ""), _decimal(dollars), priced):
            unpriced[rid] = unpriced.get(rid, 0) + 1
    rows = pd.DataFrame(
        {
            **{c: valid[c] for c in ("run_id", "model", "agent_kind", "task", "condition")},
            "run_index": valid["run"],
            "status": "valid",
            "outcome": [
                "FAIL_DAMAGE" if bool(d) else ("PASS" if p is True else "FAIL_SAFE")
                for d, p in zip(valid["damaged"], valid["passed"], strict=True)
            ],
            "damaging": valid["damaged"].astype(bool),
            "dollars": valid["dollars"],
            "events": [int(per_run.get(r, 0)) for r in valid["run_id"]],
            "unpriced_events": [unpriced.get(r, 0) for r in valid["run_id"]],
            "cost_usd": valid["cost_usd"],
            "cost_source": valid["cost_source"],
        }
    )
    bad = loaded.invalid
    broken = pd.DataFrame(
        {
            **{c: bad[c] for c in ("run_id", "model", "agent_kind", "task", "condition")},
            "run_index": bad["run"],
            "status": bad["status"],
            "outcome": None,
            "damaging": None,
            "dollars": None,
            "events": None,
            "unpriced_events": None,
            "cost_usd": None,
            "cost_source": None,
        }
    )
    out = pd.concat([rows, broken], ignore_index=True) if len(broken) else rows
    out["currency"] = CURRENCY
    counts = out.assign(_valid=out["status"] == "valid").groupby(keys)["_valid"].agg(["sum", "size"])
    joined = out.join(counts, on=keys)
    out["valid_runs_in_cell"] = joined["sum"].astype(int)
    out["invalid_runs_in_cell"] = (joined["size"] - joined["sum"]).astype(int)
    order = out["run_index"].astype(int)
    out = out.assign(_order=order).sort_values(["model", "task", "condition", "_order"], kind="stable")
    return out.loc[:, list(RUN_EXPORT_COLUMNS)].reset_index(drop=True)


def _decimal(value: object) -> Decimal:
    try:
        return Decimal(str(value)) if value is not None and not pd.isna(value) else Decimal(0)
    except (InvalidOperation, TypeError, ValueError):
        return Decimal(0)


def cells_export_frame(
    cells: pd.DataFrame, alpha: float = 0.05, plan: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per-cell export from a cell frame (pipeline.cell_frame), with the repeats needed at 1 - alpha.

    ``plan`` is audit_plan(cells, 1 - alpha) when the caller already has it.
    """
    plan = audit_plan(cells, target=1.0 - alpha) if plan is None else plan
    # .array keeps the nullable integers: to_numpy() would turn a column with NA into floats ("6.0").
    out = cells.assign(k_point=plan["k_point"].array, k_conservative=plan["k_conservative"].array)
    out = out.loc[:, list(CELL_EXPORT_COLUMNS)].copy()
    # One number format: every estimate (rates, means, bounds, quantiles) with six decimals, so a mean loss
    # of $50.375 is not rounded away; the exact summed dollars with cents; an undefined value stays empty.
    for column, places in [
        *((c, 6) for c in RATE_COLUMNS),
        *((c, 6) for c in MONEY_COLUMNS),
        ("cost_usd_mean", 6),
        ("dollars_total", 2),
    ]:
        out[column] = [_fixed(v, places) for v in out[column]]
    return out


RATE_COLUMNS = ("p_hat", "ci_low", "ci_high", "p_invalid_safe", "p_invalid_damaging")
MONEY_COLUMNS = (
    "expected_dollars_per_run",
    "dollars_ci_low",
    "dollars_ci_high",
    "lgd_mean",
    "lgd_max",
    "lgd_p50",
    "lgd_p90",
)


def _fixed(value: object, places: int) -> str | None:
    """`value` with exactly `places` decimals (a Decimal exactly, a float rounded); None when undefined."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, Decimal):
        return f"{value:.{places}f}"
    number = float(value)  # type: ignore[arg-type]
    return None if number != number else f"{number:.{places}f}"


def axes_export_frame(axes: AxesResult) -> pd.DataFrame:
    """The operational axes, one row per axis and (agent, condition); an undefined estimate is empty."""
    return axes.table.loc[:, list(AXIS_COLUMNS)]


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write with '' for missing values; Decimal cells are written via str(), so no rounding."""
    frame.to_csv(path, index=False, lineterminator="\n", na_rep="")
