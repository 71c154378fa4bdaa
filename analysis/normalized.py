"""The one normalized form every input becomes: a per-run table of valid runs, the damage events,
the invalid runs and the attempts that a retry superseded.

Two sources produce it: the harness's results directory (runs.jsonl + manifest.json, see
load_results) and the generic outcomes CSV (see load_csv). Both give the same per-run columns:

    run_id, model, agent_kind, task, condition, run, damaged, passed, errored, mutated,
    dollars, severity, irreversibility, cost_usd, protocol_hash,
    calls, duplicate_calls, exposure, fault, canary_echo, injected_goal,
    text_tool_call, echoed_tool_error

damaged is bool; passed / errored / mutated are nullable booleans (NA when the source lacks them);
dollars holds Decimal (None when unknown); severity and irreversibility are lower-case strings or
None (several irreversibility classes are joined with ';'); cost_usd is float (NaN when unknown).
The operational columns feed analysis.axes: calls (tool calls in the run) and duplicate_calls (calls
repeating an earlier call's tool and args_digest) are nullable integers, NA when the source does not
record them (a CSV; duplicate_calls also when a call lacks its digest); exposure is "exposed",
"not_exposed", another string (unknown) or None (nothing injected); fault / canary_echo say whether the
run has an event of that kind; injected_goal whether a damage event's spec starts with "injection:";
text_tool_call / echoed_tool_error whether the run ended on a tool call written as text or an echo of a
tool error (the run stays valid and is judged by its state; the report counts them).

Only valid runs are in ``runs``. A run the harness or the provider broke says nothing about the
agent: it is in ``invalid`` (INVALID_COLUMNS, one row per run, with its status name), stays in its
cell's counts and is shown beside every rate, but never enters one. ``superseded`` lists every
attempt that a later attempt of the same run replaced (SUPERSEDED_COLUMNS).

This module imports no loader, so the loaders and the dispatcher (inputs.py) all depend on it and
never on each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from agentrel.analysis.faults import FaultReport
from agentrel.harness.results.status import HARNESS_INVALID, PROVIDER_INVALID, VALID

__all__ = ["HARNESS_INVALID", "PROVIDER_INVALID", "VALID"]  # re-exported for the table's users

# The operational columns a source may lack: they are filled with "unknown" / False (see above).
OPERATIONAL_COLUMNS = (
    "calls",
    "duplicate_calls",
    "exposure",
    "fault",
    "canary_echo",
    "injected_goal",
    "text_tool_call",
    "echoed_tool_error",
)
RUN_COLUMNS = (
    "run_id",
    "model",
    "agent_kind",
    "task",
    "condition",
    "run",
    "damaged",
    "passed",
    "errored",
    "mutated",
    "dollars",
    "severity",
    "irreversibility",
    "cost_usd",
    "cost_source",
    "protocol_hash",
    *OPERATIONAL_COLUMNS,
)
FINAL_TEXT_EVENTS = ("text_tool_call", "echoed_tool_error")
EVENT_COLUMNS = (
    "run_id",
    "model",
    "agent_kind",
    "task",
    "condition",
    "run",
    "rule",
    "severity",
    "irreversibility",
    "table",
    "key",
    "dollars",
    "protocol_hash",
    "spec",  # the task id, "injection:<goal>" for an injected goal's damage, "" when not recorded
    # For the damage export: the row operation ("" when unknown), changed columns joined with ";", the
    # changes an aggregate event groups (1 for a row event), whether it is one, and the key's values.
    "op",
    "changed_columns",
    "rows",
    "aggregate",
    "key_values",
)
# outcome: the verdict an invalid attempt carried (kept for inspection, never counted), or None.
INVALID_COLUMNS = (
    "run_id",
    "model",
    "agent_kind",
    "task",
    "condition",
    "run",
    "status",
    "attempts",
    "outcome",
    "message",
)
# damaged: whether the superseded attempt's state showed damage (the cell's damage evidence: a cell with
# damage in any attempt is never certified clean).
SUPERSEDED_COLUMNS = ("run_id", "model", "task", "condition", "run", "attempt", "status", "damaged")
CELL_KEYS = ["model", "task", "condition"]
DEFAULT_CONDITION = "default"


class InputError(ValueError):
    """An input that cannot be used; the message is one line naming the file, row and column."""


class MixedProtocolsError(InputError):
    """Records carry more than one protocol hash and pooling them was not allowed."""

    def __init__(self, message: str, hashes: list[str]) -> None:
        super().__init__(message)
        self.hashes = hashes


@dataclass
class LoadedInput:
    """A loaded input: valid runs, damage events, invalid runs, superseded attempts, provenance."""

    source: Path
    kind: Literal["results", "csv"]
    runs: pd.DataFrame
    events: pd.DataFrame
    invalid: pd.DataFrame
    superseded: pd.DataFrame = field(default_factory=lambda: empty_frame(SUPERSEDED_COLUMNS))
    protocol_hashes: list[str] = field(default_factory=list)
    events_synthesized: bool = False  # CSV: one pseudo-event per damaged run, rule/table/key empty
    has_dollars: bool = True  # False when the source carries no dollar figures at all
    notes: list[str] = field(default_factory=list)
    optimal_steps: dict[str, int] = field(default_factory=dict)  # task -> optimal tool calls (manifest)
    conditions: list[str] = field(default_factory=list)  # declared condition names, in manifest order
    faults: FaultReport | None = None  # the fault scores, when the manifest scheduled faults
    stopping: dict[str, Any] | None = None  # the manifest's `stopping` entry: an `--until` audit's rule
    # (events whose rule names no price, of them high or critical): set by a caller that can read the
    # audit's specs (harness.damage_pricing); None when unknown. The report says it beside the loss.
    unpriced: tuple[int, int] | None = None
    error_budget: float | None = None  # the manifest's maximum share of invalid attempts per cell

    @property
    def agents(self) -> dict[str, str]:
        """Agent name -> kind (model / reference / scripted), over valid and invalid runs."""
        both = pd.concat([self.runs[["model", "agent_kind"]], self.invalid[["model", "agent_kind"]]])
        pairs = both.drop_duplicates("model")
        return dict(zip(pairs["model"].astype(str), pairs["agent_kind"].astype(str), strict=True))

    @property
    def cell_count(self) -> int:
        """Cells with a valid or an invalid run."""
        keys = pd.concat([self.runs[CELL_KEYS], self.invalid[CELL_KEYS]])
        return len(keys.drop_duplicates())

    def invalid_by_status(self) -> dict[str, int]:
        """Invalid runs per status name, sorted by name."""
        counts = self.invalid["status"].value_counts()
        return {str(k): int(v) for k, v in sorted(counts.items())}


def describe_invalid(by_status: dict[str, int]) -> str:
    """'3 invalid (provider_invalid 2, harness_invalid 1)', or '0 invalid'."""
    total = sum(by_status.values())
    if not total:
        return "0 invalid"
    return f"{total} invalid (" + ", ".join(f"{k} {v}" for k, v in by_status.items()) + ")"


TEXT_COLUMNS = ("run_id", "model", "agent_kind", "task", "condition", "run", "protocol_hash")


def normalize_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Give the per-run table its canonical column order and dtypes (both loaders end here)."""
    out = runs.loc[:, list(RUN_COLUMNS)].reset_index(drop=True)
    for col in TEXT_COLUMNS:
        out[col] = out[col].astype(str)
    out["damaged"] = out["damaged"].astype(bool)
    for col in ("passed", "errored", "mutated"):
        out[col] = out[col].astype("boolean")
    for col in ("dollars", "severity", "irreversibility"):
        out[col] = out[col].astype(object)
    out["cost_usd"] = out["cost_usd"].astype(float)
    # "measured", "reported" (only the agent program's own usage file said it) or None (unknown, or a CSV)
    out["cost_source"] = out["cost_source"].astype(object).where(out["cost_source"].notna(), None)
    for col in ("calls", "duplicate_calls"):
        out[col] = out[col].astype("Int64")
    out["exposure"] = out["exposure"].astype(object).where(out["exposure"].notna(), None)
    for col in ("fault", "canary_echo", "injected_goal", *FINAL_TEXT_EVENTS):
        # A source without events has no such event (never NaN, which astype(bool) would make True).
        out[col] = out[col].astype("boolean").fillna(False).astype(bool)
    return out


def usd(value: object) -> float:
    """A money cell as float for statistics: Decimal -> float, missing -> 0."""
    return float(value) if isinstance(value, Decimal) else 0.0


def money_sum(values: Iterable[object]) -> Decimal:
    """Exact sum of the Decimal amounts among values (missing ones skipped)."""
    return sum((v for v in values if isinstance(v, Decimal)), Decimal(0))


def empty_frame(columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=object) for c in columns})


def frame(rows: Sequence[tuple[object, ...]], columns: tuple[str, ...]) -> pd.DataFrame:
    """Rows as a frame with the given columns (an empty frame of object columns when there are none)."""
    if not rows:
        return empty_frame(columns)
    return pd.DataFrame.from_records(rows, columns=list(columns))


BUILTIN_ENVIRONMENT = "agentrel-enterprise"  # what records from before environments were audited on


def check_environments(names: list[str | None], where: str) -> None:
    """Refuse records of two environments, always: their rates measure different systems, so unlike
    two protocols of one environment there is no --allow-mixed-protocols reading under which they pool."""
    distinct = sorted({n or BUILTIN_ENVIRONMENT for n in names})
    if len(distinct) > 1:
        raise InputError(
            f"{where}: records come from {len(distinct)} environments ({', '.join(distinct)}); runs of "
            "different environments are never pooled: analyze each environment's results on their own"
        )


def check_protocols(hashes: list[str], where: str, allow_mixed: bool) -> None:
    """Refuse to pool records from different protocols unless told to."""
    distinct = sorted({h for h in hashes if h})
    if len(distinct) > 1 and not allow_mixed:
        shown = ", ".join(h[:12] for h in distinct[:4]) + (" ..." if len(distinct) > 4 else "")
        raise MixedProtocolsError(
            f"{where}: records carry {len(distinct)} different protocol hashes ({shown}); "
            "results from different protocols are not pooled",
            distinct,
        )
