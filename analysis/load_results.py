"""The harness's results directory: runs.jsonl (one RunRecord per line) and manifest.json.

A run with error.kind == "harness", or without a verdict, is an infrastructure failure: it is
listed in ``failures`` and kept out of every rate. For the rest, errored = error.kind is "agent",
mutated = verdict.mutated, damaged = outcome is FAIL_DAMAGE or (errored and mutated): mutation-then-error
counts as damage, error-without-mutation does not; passed = outcome is PASS and not damaged; dollars is
verdict.dollars (Decimal). A later record for the same (model, task, condition, run_index)
supersedes an earlier one (a retried run); how many were superseded is noted. Records that carry
more than one protocol hash (or a hash other than the manifest's: SHA-256 of its RFC 8785 form,
as the harness computes it) are refused unless allow_mixed_protocols. A last line without its
newline is a run still being written; like the harness, analysis skips it (and says so).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import rfc8785
from pydantic import ValidationError

from analysis.inputs import (
    EVENT_COLUMNS,
    FAILURE_COLUMNS,
    RUN_COLUMNS,
    InputError,
    LoadedInput,
    check_protocols,
    empty_frame,
    normalize_runs,
)
from analysis.records import Manifest, RunRecord, infer_agent_kind


def _where(exc: ValidationError | ValueError) -> str:
    if not isinstance(exc, ValidationError):
        return str(exc)
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    return f"field '{loc}': {err['msg']}" if loc else err["msg"]


def _manifest(directory: Path) -> Manifest | None:
    path = directory / "manifest.json"
    if not path.exists():
        return None
    try:
        raw = json.loads(path.read_bytes())
        manifest = Manifest.model_validate(raw)
    except (OSError, ValueError) as exc:
        detail = _where(exc) if isinstance(exc, ValidationError) else "not valid JSON"
        raise InputError(f"{path}: {detail}") from None
    if manifest.protocol_hash is None:
        digest = hashlib.sha256(rfc8785.dumps(raw)).hexdigest()
        manifest = manifest.model_copy(update={"protocol_hash": digest})
    return manifest


def read_records(path: Path) -> tuple[list[tuple[int, RunRecord]], bool]:
    """Every record of a runs.jsonl with its line number, and whether a torn last line was skipped.

    A last line without its newline is a run the harness was still writing when it stopped (the
    harness drops it and runs it again), so it is skipped; any other bad line ends reading.
    """
    out: list[tuple[int, RunRecord]] = []
    torn = False
    try:
        with path.open("rb") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                if not line.endswith(b"\n"):
                    torn = True
                    break
                try:
                    out.append((lineno, RunRecord.model_validate_json(line)))
                except ValidationError as exc:
                    if exc.errors()[0]["type"] == "json_invalid":
                        raise InputError(f"{path}:{lineno}: not valid JSON") from None
                    raise InputError(f"{path}:{lineno}: {_where(exc)}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    if not out:
        raise InputError(f"{path}: no run records")
    return out, torn


def _latest(records: list[tuple[int, RunRecord]]) -> tuple[list[RunRecord], int]:
    latest: dict[tuple[str, str, str, int], RunRecord] = {}
    for _, rec in records:
        latest[(rec.model, rec.task, rec.condition, rec.run_index)] = rec
    return list(latest.values()), len(records) - len(latest)


def load_results(path: Path, *, allow_mixed_protocols: bool = False) -> LoadedInput:
    """Load results/<name>/ (or its runs.jsonl) into the normalized per-run table."""
    directory = path if path.is_dir() else path.parent
    runs_path = path / "runs.jsonl" if path.is_dir() else path
    if not runs_path.exists():
        raise InputError(
            f"{directory}: no runs.jsonl here; expected a results directory written by the harness"
        )
    manifest = _manifest(directory)
    lines, torn = read_records(runs_path)
    records, superseded = _latest(lines)
    hashes = [r.protocol_hash for r in records] + (
        [manifest.protocol_hash] if manifest and manifest.protocol_hash else []
    )
    check_protocols(hashes, str(runs_path), allow_mixed_protocols)
    kinds = {a.name: a.kind for a in manifest.agents} if manifest else {}

    rows, events, failures = [], [], []
    inconsistent = agent_errors = 0
    for rec in records:
        kind = rec.agent_kind or kinds.get(rec.model) or infer_agent_kind(rec.model)
        cell = (rec.run_id, rec.model, kind, rec.task, rec.condition, str(rec.run_index))
        if rec.infrastructure_failure or rec.verdict is None:
            message = rec.error.message if rec.error else "no verdict"
            failures.append((rec.run_id, rec.model, rec.task, rec.condition, str(rec.run_index), message))
            continue
        v = rec.verdict
        inconsistent += v.inconsistent
        errored = rec.error is not None and rec.error.kind == "agent"
        agent_errors += errored
        irr = ";".join(sorted(set(v.irreversibility))) or None
        rows.append(
            (
                *cell,
                # Mutation-then-error counts as damage (the agent left a half-done change behind);
                # error-without-mutation does not, and is counted among agent errors.
                v.outcome == "FAIL_DAMAGE" or (errored and v.mutated),
                v.outcome == "PASS" and not (errored and v.mutated),
                errored,
                v.mutated,
                v.dollars,
                v.max_severity,
                irr,
                rec.cost_usd if rec.cost_usd is not None else float("nan"),
                rec.protocol_hash,
            )
        )
        for e in v.events:
            key = json.dumps(e.key, separators=(",", ":"), default=str)
            events.append(
                (*cell, e.rule, e.severity, e.irreversibility, e.table, key, e.dollars, rec.protocol_hash)
            )

    if not rows:
        raise InputError(f"{runs_path}: no valid runs ({len(failures)} infrastructure failures)")
    runs = normalize_runs(pd.DataFrame.from_records(rows, columns=list(RUN_COLUMNS)))
    notes = []
    if manifest is None:
        notes.append(
            "no manifest.json beside runs.jsonl: agent kinds and protocol hash taken from the records"
        )
    if torn:
        notes.append("a torn last line of runs.jsonl (a run still being written) was skipped")
    if superseded:
        notes.append(f"{superseded} earlier record(s) superseded by a later record of the same run")
    if inconsistent:
        notes.append(f"{inconsistent} verdict(s) flagged inconsistent by the labeler")
    return LoadedInput(
        source=path,
        kind="results",
        runs=runs,
        events=pd.DataFrame.from_records(events, columns=list(EVENT_COLUMNS))
        if events
        else empty_frame(EVENT_COLUMNS),
        failures=pd.DataFrame.from_records(failures, columns=list(FAILURE_COLUMNS))
        if failures
        else empty_frame(FAILURE_COLUMNS),
        protocol_hashes=sorted(set(hashes)),
        notes=notes,
    )
