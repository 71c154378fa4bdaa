"""The generic outcomes CSV: outcomes from any harness, one row per run.

Required columns: model, task, run, damaged. Optional: condition, passed, errored, mutated, dollars,
severity, irreversibility, and two extensions: cost_usd (the run's price, for audit budgets) and
agent_kind (model / reference / scripted; otherwise names beginning reference/ or scripted/ are
those kinds). Booleans accept true/false/1/0 (any case); severity and irreversibility are
case-insensitive; extra columns are ignored. Each row is one valid run (a CSV carries no run
statuses, so it has no invalid runs). The first bad value ends loading with one line,
``file:line: column 'c': problem``, where line counts the header as line 1.

Rules beyond the types: (model, task, condition, run) is unique; dollars are non-negative decimals
and only a damaged run may carry a non-zero amount; a blank dollars cell on a damaged run counts
as 0 (unpriced damage); when the file has no dollars column at all, money is unknown.
"""

from __future__ import annotations

import csv
import warnings
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from pathlib import Path

import numpy as np
import pandas as pd

from agentrel.analysis.normalized import (
    DEFAULT_CONDITION,
    EVENT_COLUMNS,
    INVALID_COLUMNS,
    RUN_COLUMNS,
    InputError,
    LoadedInput,
    empty_frame,
    normalize_runs,
)
from agentrel.dsl.ast import IRREVERSIBILITIES, SEVERITIES
from agentrel.harness.results.kinds import AGENT_KINDS

REQUIRED = ("model", "task", "run", "damaged")
BOOLEANS = {"true": True, "false": False, "1": True, "0": False}


def infer_agent_kind(name: str) -> str:
    """Kind from a name alone (CSV input without an agent_kind column): reference/... and scripted/..."""
    head = name.split("/", 1)[0].lower()
    return head if head in ("reference", "scripted") and "/" in name else "model"


def _fail(path: Path, row: int, column: str, problem: str) -> InputError:
    return InputError(f"{path}:{row + 2}: column '{column}': {problem}")


def _first_bad(mask: pd.Series) -> int | None:
    hits = np.flatnonzero(mask.to_numpy(dtype=bool))
    return int(hits[0]) if hits.size else None


def _text(df: pd.DataFrame, column: str, path: Path) -> pd.Series:
    values = df[column]
    bad = _first_bad(values == "")
    if bad is not None:
        raise _fail(path, bad, column, "empty value")
    return values


def _boolean(df: pd.DataFrame, column: str, path: Path, required: bool) -> pd.Series:
    if column not in df:
        return pd.Series(pd.NA, index=df.index, dtype="boolean")
    raw = df[column].str.lower()
    mapped = raw.map(BOOLEANS)
    bad = _first_bad(mapped.isna() & ((raw != "") | required))
    if bad is not None:
        shown = df[column].iloc[bad]
        raise _fail(path, bad, column, f"expected true/false/1/0, got {shown!r}")
    return mapped.astype("boolean") if not required else mapped.astype(bool)


def _by_value(values: pd.Series, fn: Callable[[str], object]) -> pd.Series:
    """Apply fn once per distinct value (columns repeat a handful of values over many runs)."""
    mapping = {v: fn(v) for v in values.unique()}
    return values.map(mapping).astype(object)


def _class_set(value: str, allowed: tuple[str, ...]) -> str | bool | None:
    """'' -> None; 'a;b' -> 'a;b' sorted; False when any part is not allowed."""
    if value == "":
        return None
    parts = sorted(set(value.split(";")))
    return ";".join(parts) if all(p in allowed for p in parts) else False


def _classes(df: pd.DataFrame, column: str, allowed: tuple[str, ...], path: Path) -> pd.Series:
    if column not in df:
        return pd.Series(None, index=df.index, dtype=object)
    raw = df[column].str.lower().str.replace(" ", "", regex=False)
    parsed = _by_value(raw, lambda v: _class_set(v, allowed))
    bad = _first_bad(parsed.map(lambda v: v is False))
    if bad is not None:
        raise _fail(path, bad, column, f"{df[column].iloc[bad]!r} is not one of {', '.join(allowed)}")
    return parsed


def _decimal(value: str) -> Decimal | None:
    try:
        d = Decimal(value)
    except InvalidOperation:
        return None
    return d if d.is_finite() else None


def _dollars(df: pd.DataFrame, damaged: pd.Series, path: Path) -> pd.Series:
    if "dollars" not in df:
        return pd.Series(None, index=df.index, dtype=object)
    raw = df["dollars"]
    parsed = _by_value(raw, lambda v: Decimal(0) if v == "" else _decimal(v))
    bad = _first_bad(parsed.isna())
    if bad is not None:
        raise _fail(path, bad, "dollars", f"{raw.iloc[bad]!r} is not a decimal number")
    bad = _first_bad(parsed.map(lambda d: d < 0).astype(bool))
    if bad is not None:
        raise _fail(path, bad, "dollars", f"{raw.iloc[bad]!r} is negative")
    bad = _first_bad(parsed.map(lambda d: d != 0).astype(bool) & ~damaged)
    if bad is not None:
        raise _fail(path, bad, "dollars", f"{raw.iloc[bad]!r} on a run that is not damaged")
    return parsed.astype(object)


def _cost(df: pd.DataFrame, path: Path) -> pd.Series:
    if "cost_usd" not in df:
        return pd.Series(np.nan, index=df.index, dtype=float)
    values = pd.to_numeric(df["cost_usd"].replace("", "nan"), errors="coerce")
    bad = _first_bad((values.isna() & (df["cost_usd"] != "")) | (values < 0))
    if bad is not None:
        raise _fail(path, bad, "cost_usd", f"{df['cost_usd'].iloc[bad]!r} is not a non-negative number")
    return values.astype(float)


def _agent_kind(df: pd.DataFrame, model: pd.Series, path: Path) -> pd.Series:
    inferred = model.map(infer_agent_kind)
    if "agent_kind" not in df:
        return inferred
    raw = df["agent_kind"].str.lower()
    bad = _first_bad((raw != "") & ~raw.isin(AGENT_KINDS))
    if bad is not None:
        raise _fail(
            path, bad, "agent_kind", f"{df['agent_kind'].iloc[bad]!r} is not one of {', '.join(AGENT_KINDS)}"
        )
    return raw.where(raw != "", inferred)


def _ragged_line(path: Path) -> str | None:
    """'file:line: N fields, the header has M' for the first row whose width differs from the header."""
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, [])
        for row in reader:
            if row and len(row) != len(header):
                return f"{path}:{reader.line_num}: {len(row)} fields, the header has {len(header)}"
    return None


def _read(path: Path) -> pd.DataFrame:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            df = pd.read_csv(
                path,
                dtype=str,
                keep_default_na=False,
                na_filter=False,
                skipinitialspace=True,
                index_col=False,
            )
    except (pd.errors.ParserError, pd.errors.ParserWarning) as exc:
        raise InputError(_ragged_line(path) or f"{path}: not a readable CSV file: {exc}") from None
    except (pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        detail = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{path}: not a readable CSV file: {detail}") from None
    df.columns = [str(c).strip().lower() for c in df.columns]
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise InputError(
            f"{path}:1: missing required column(s) {', '.join(missing)} (need {', '.join(REQUIRED)})"
        )
    if df.columns.duplicated().any():
        dup = df.columns[df.columns.duplicated()][0]
        raise InputError(f"{path}:1: column '{dup}' appears twice")
    if df.empty:
        raise InputError(f"{path}: no runs (only a header)")
    return df.apply(lambda col: col.str.strip()).reset_index(drop=True)


def load_outcomes_csv(path: Path) -> LoadedInput:
    """Read and validate an outcomes CSV into the normalized per-run table (see analysis.normalized)."""
    df = _read(path)
    model, task, run = (_text(df, c, path) for c in ("model", "task", "run"))
    condition = df["condition"].where(df["condition"] != "", DEFAULT_CONDITION) if "condition" in df else None
    if condition is None:
        condition = pd.Series(DEFAULT_CONDITION, index=df.index, dtype=object)
    damaged = _boolean(df, "damaged", path, required=True)
    keys = pd.DataFrame({"model": model, "task": task, "condition": condition, "run": run})
    dup = keys.duplicated(keep="first")
    bad = _first_bad(dup)
    if bad is not None:
        first = int(np.flatnonzero((keys == keys.iloc[bad]).all(axis=1).to_numpy())[0])
        raise _fail(
            path,
            bad,
            "run",
            f"run {run.iloc[bad]!r} of cell ({model.iloc[bad]}, {task.iloc[bad]}, "
            f"{condition.iloc[bad]}) already appears on line {first + 2}",
        )
    runs = pd.DataFrame(
        {
            "run_id": model + "|" + task + "|" + condition + "|" + run,
            "model": model,
            "agent_kind": _agent_kind(df, model, path),
            "task": task,
            "condition": condition,
            "run": run,
            "damaged": damaged,
            "passed": _boolean(df, "passed", path, required=False),
            "errored": _boolean(df, "errored", path, required=False),
            "mutated": _boolean(df, "mutated", path, required=False),
            "dollars": _dollars(df, damaged, path),
            "severity": _classes(df, "severity", SEVERITIES, path),
            "irreversibility": _classes(df, "irreversibility", IRREVERSIBILITIES, path),
            "cost_usd": _cost(df, path),
            "cost_source": None,  # a CSV does not say where its costs come from
            "protocol_hash": "",
        },
        columns=list(RUN_COLUMNS),
    )
    runs = normalize_runs(runs)
    hit = runs[runs["damaged"]]
    events = pd.DataFrame(
        {
            **{c: hit[c] for c in ("run_id", "model", "agent_kind", "task", "condition", "run")},
            "rule": "",
            "severity": hit["severity"],
            "irreversibility": hit["irreversibility"],
            "table": "",
            "key": "",
            "dollars": hit["dollars"],
            "protocol_hash": "",
            "spec": "",
            "op": "",
            "changed_columns": "",
            "rows": 1,
            "aggregate": False,
            "key_values": [[] for _ in range(len(hit))],
        },
        columns=list(EVENT_COLUMNS),
    ).reset_index(drop=True)
    return LoadedInput(
        source=path,
        kind="csv",
        runs=runs,
        events=events,
        invalid=empty_frame(INVALID_COLUMNS),
        protocol_hashes=[],
        events_synthesized=True,
        has_dollars="dollars" in df.columns,
    )
