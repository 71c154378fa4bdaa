"""The one normalized form every input becomes: a per-run table, the damage events and the failures.

Two sources produce it: the harness's results directory (runs.jsonl + manifest.json, see
load_results) and the generic outcomes CSV (see load_csv). Both give the same per-run columns:

    run_id, model, agent_kind, task, condition, run, damaged, passed, errored, mutated,
    dollars, severity, irreversibility, cost_usd, protocol_hash

damaged is bool; passed / errored / mutated are nullable booleans (NA when the source lacks them);
dollars holds Decimal (None when unknown); severity and irreversibility are lower-case strings or
None (several irreversibility classes are joined with ';'); cost_usd is float (NaN when unknown).
Only valid runs are in the table: infrastructure failures are listed separately.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Literal

import pandas as pd

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
    "protocol_hash",
)
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
)
FAILURE_COLUMNS = ("run_id", "model", "task", "condition", "run", "message")
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
    """A loaded input: valid runs, damage events, infrastructure failures and provenance."""

    source: Path
    kind: Literal["results", "csv"]
    runs: pd.DataFrame
    events: pd.DataFrame
    failures: pd.DataFrame
    protocol_hashes: list[str] = field(default_factory=list)
    events_synthesized: bool = False  # CSV: one pseudo-event per damaged run, rule/table/key empty
    has_dollars: bool = True  # False when the source carries no dollar figures at all
    notes: list[str] = field(default_factory=list)

    @property
    def agents(self) -> dict[str, str]:
        """Agent name -> kind (model / reference / scripted), over valid runs and failures."""
        pairs = self.runs[["model", "agent_kind"]].drop_duplicates()
        return dict(zip(pairs["model"], pairs["agent_kind"], strict=True))


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
    return out


def usd(value: object) -> float:
    """A money cell as float for statistics: Decimal -> float, missing -> 0."""
    return float(value) if isinstance(value, Decimal) else 0.0


def money_sum(values: Iterable[object]) -> Decimal:
    """Exact sum of the Decimal amounts among values (missing ones skipped)."""
    return sum((v for v in values if isinstance(v, Decimal)), Decimal(0))


def empty_frame(columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=object) for c in columns})


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


def load_input(path: Path, *, allow_mixed_protocols: bool = False) -> LoadedInput:
    """Load a results directory, a runs.jsonl file, or an outcomes CSV."""
    from analysis.load_csv import load_outcomes_csv
    from analysis.load_results import load_results

    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.is_dir() or path.name.endswith(".jsonl"):
        return load_results(path, allow_mixed_protocols=allow_mixed_protocols)
    if path.suffix.lower() == ".csv":
        return load_outcomes_csv(path)
    raise InputError(f"{path}: expected a results directory (runs.jsonl + manifest.json) or an outcomes .csv")
