"""The harness's results directory: runs.jsonl (one attempt of a run per line) and manifest.json.

Each run is decided by one attempt (analysis.attempts: its latest valid attempt, else its latest).
A run whose decisive attempt is not valid (status provider_invalid, harness_invalid, or any other
name; a record without a status is harness_invalid when error.kind is "harness" or it has no
verdict) is listed in ``invalid`` with its status and kept out of every rate, whatever verdict it
carries. For a valid run, errored = error.kind is "agent", mutated = verdict.mutated, damaged =
outcome is FAIL_DAMAGE or (errored and mutated): mutation-then-error counts as damage,
error-without-mutation does not; passed = outcome is PASS and not damaged; dollars is
verdict.dollars (Decimal). Superseded attempts are listed in ``superseded`` and noted. Records that
carry more than one protocol hash, or another hash than the directory's (protocol.json's, beside a
manifest it names; for an older directory, SHA-256 of the manifest's RFC 8785 form), are refused
unless allow_mixed_protocols. A last line without its newline is a run still being written; like the
harness, analysis skips it (and says so).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from pydantic import ValidationError

from agentrel.analysis.attempts import Decided, decide
from agentrel.analysis.faults import fault_report
from agentrel.analysis.load_csv import infer_agent_kind
from agentrel.analysis.normalized import (
    EVENT_COLUMNS,
    FINAL_TEXT_EVENTS,
    INVALID_COLUMNS,
    RUN_COLUMNS,
    SUPERSEDED_COLUMNS,
    InputError,
    LoadedInput,
    check_environments,
    check_protocols,
    describe_invalid,
    frame,
    normalize_runs,
)
from agentrel.harness.results import layout
from agentrel.harness.results.manifest import ManifestUnreadable, manifest_hash, read_manifest
from agentrel.harness.results.reading import (
    INJECTION_SPEC_PREFIX,
    ManifestReading,
    RunReading,
    VerdictReading,
)
from agentrel.harness.results.status import RECORD_ERROR, VALID

PROTOCOL_FIELDS = ("protocol_hash", "manifest_hash")


def _where(exc: ValidationError | ValueError) -> str:
    if not isinstance(exc, ValidationError):
        return str(exc)
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    return f"field '{loc}': {err['msg']}" if loc else err["msg"]


def _manifest(directory: Path) -> ManifestReading | None:
    try:
        raw = read_manifest(directory)  # the results owner's reader
    except ManifestUnreadable as exc:
        raise InputError(str(exc)) from None
    if raw is None:
        return None
    try:
        manifest = ManifestReading.model_validate(raw)
    except ValidationError as exc:
        raise InputError(f"{directory / layout.MANIFEST}: {_where(exc)}") from None
    if manifest.protocol_hash is None:
        digest = manifest_hash(raw)
        recorded = _recorded_protocol(directory, digest)
        manifest = manifest.model_copy(update={"protocol_hash": recorded or digest})
    return manifest


def _recorded_protocol(directory: Path, manifest_digest: str) -> str | None:
    """The protocol hash the harness stamps on every record, from protocol.json (the manifest's identity
    under the policy and evaluator code that recorded the runs); None for a directory from before it."""
    path = directory / layout.PROTOCOL
    if not path.exists():
        return None
    try:
        raw = json.loads(path.read_bytes())
    except (OSError, ValueError):
        raw = None
    if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) for k in PROTOCOL_FIELDS):
        raise InputError(f"{path}: not a protocol identity (protocol_hash, manifest_hash); restore the file")
    if raw["manifest_hash"] != manifest_digest:
        raise InputError(
            f"{path}: is the identity of another manifest (manifest_hash {raw['manifest_hash'][:12]}, "
            f"manifest.json {manifest_digest[:12]}); restore the directory's own protocol.json"
        )
    recorded: str = raw["protocol_hash"]
    return recorded


def read_records(path: Path) -> tuple[list[tuple[int, RunReading]], bool]:
    """Every record of a runs.jsonl with its line number, and whether a torn last line was skipped.

    A last line without its newline is a run the harness was still writing when it stopped (the
    harness drops it and runs it again), so it is skipped; any other bad line ends reading.
    """
    out: list[tuple[int, RunReading]] = []
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
                    out.append((lineno, RunReading.model_validate_json(line)))
                except ValidationError as exc:
                    if exc.errors()[0]["type"] == "json_invalid":
                        raise InputError(f"{path}:{lineno}: not valid JSON") from None
                    raise InputError(f"{path}:{lineno}: {_where(exc)}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    if not out:
        raise InputError(f"{path}: no run records")
    return out, torn


def _operational(rec: RunReading, v: VerdictReading) -> tuple[object, ...]:
    """calls, duplicate_calls, exposure, fault, canary_echo, injected_goal, text_tool_call,
    echoed_tool_error of one valid run.

    The call and event lists were reduced while parsing (harness.results.reading); this runs inside the
    loader's one pass over records, and every statistic over these columns is vectorized in
    analysis.axes.
    """
    calls, dups = rec.call_counts if rec.call_counts is not None else (None, None)
    kinds = rec.event_kinds
    injected = bool(v.events) and any(
        e.spec is not None and e.spec.startswith(INJECTION_SPEC_PREFIX) for e in v.events
    )
    final = tuple(k in kinds for k in FINAL_TEXT_EVENTS)
    return (calls, dups, rec.exposure, "fault" in kinds, "canary_echo" in kinds, injected, *final)


def _notes(
    decided: Decided,
    manifest: ManifestReading | None,
    torn: bool,
    inconsistent: int,
    contradictions: list[str],
) -> list[str]:
    notes = []
    if manifest is None:
        notes.append(
            "no manifest.json beside runs.jsonl: agent kinds and protocol hash taken from the records"
        )
    for task in manifest.tasks if manifest else []:
        if task.tools_narrowed:
            notes.append(
                f"task {task.id} offers fewer tools than its environment's whole toolset: "
                f"{task.tools_narrowed}"
            )
    if torn:
        notes.append("a torn last line of runs.jsonl (a run still being written) was skipped")
    if decided.superseded:
        retried = sum(r.attempts > 1 for r in decided.runs)
        recovered = sum(r.attempts > 1 and r.status == VALID for r in decided.runs)
        notes.append(
            f"{len(decided.superseded)} attempt(s) superseded by a later attempt of the same run: "
            f"{retried} run(s) retried, {recovered} of them ended valid"
        )
    contradictory = sum(r.contradictory for r, _ in decided.superseded) + sum(
        r.record.contradictory for r in decided.runs
    )
    if contradictory:
        notes.append(
            f"{contradictory} attempt(s) marked valid without a verdict or with a harness/provider "
            "error were counted as invalid"
        )
    if contradictions:
        notes.append(
            f"{len(contradictions)} record(s) whose verdict contradicts itself (edited or corrupted) were "
            f"counted as invalid ({RECORD_ERROR}); first: {contradictions[0]}"
        )
    if inconsistent:
        # A finding about the agent, not a fault of AgentRel: the state wins over what the agent said.
        notes.append(
            f"{inconsistent} run(s) in which the agent said it declined (a REFUSAL line) but the database "
            "shows damage it did: a finding about the agent (sub-label refused_but_mutated), not a fault "
            "of the audit; the state decides the verdict"
        )
    return notes


def load_results(path: Path, *, allow_mixed_protocols: bool = False) -> LoadedInput:
    """Load results/<name>/ (or its runs.jsonl) into the normalized per-run table."""
    directory = path if path.is_dir() else path.parent
    runs_path = path / layout.RUNS if path.is_dir() else path
    if not runs_path.exists():
        raise InputError(
            f"{directory}: no runs.jsonl here; expected a results directory written by the harness"
        )
    # No pause of the process-wide garbage collector here, for the reason the labeller has none: it
    # would also pause every other thread of the process (bench/analysis_scale.py meets its target).
    return _load(path, runs_path, _manifest(directory), allow_mixed_protocols)


def _load(
    path: Path, runs_path: Path, manifest: ManifestReading | None, allow_mixed_protocols: bool
) -> LoadedInput:
    lines, torn = read_records(runs_path)
    # Every attempt's hash counts: a superseded attempt from another protocol still means the
    # directory mixes protocols.
    hashes = [r.protocol_hash for _, r in lines] + (
        [manifest.protocol_hash] if manifest and manifest.protocol_hash else []
    )
    check_protocols(hashes, str(runs_path), allow_mixed_protocols)
    environments = [r.environment for _, r in lines] + (
        [manifest.environment.name] if manifest and manifest.environment else []
    )
    check_environments(environments, str(runs_path))
    decided = decide(lines)
    kinds = {a.name: a.kind for a in manifest.agents} if manifest else {}

    rows, events, invalid = [], [], []
    contradictions: list[str] = []
    inconsistent = 0
    for run in decided.runs:
        rec = run.record
        kind = rec.agent_kind or kinds.get(rec.model) or infer_agent_kind(rec.model)
        cell = (rec.run_id, rec.model, kind, rec.task, rec.condition, str(rec.run_index))
        v = rec.verdict
        status = run.status
        if status == VALID and v is not None and (why := v.contradiction()):
            status, contradictions = RECORD_ERROR, [*contradictions, f"{rec.run_id}: {why}"]
        if status != VALID or v is None:
            # The verdict of an invalid attempt is kept for inspection only: it never enters a rate.
            message = rec.error.message if rec.error else ("no verdict" if v is None else status)
            if status == RECORD_ERROR:
                message = contradictions[-1]
            outcome = v.outcome if v is not None else None
            invalid.append((*cell, status, run.attempts, outcome, message))
            continue
        inconsistent += v.inconsistent
        irr = ";".join(sorted(set(v.irreversibility))) or None
        rows.append(
            (
                *cell,
                # Mutation-then-error counts as damage; error-without-mutation is an agent error.
                rec.shows_damage,
                rec.shows_pass,
                rec.agent_error,
                v.mutated,
                v.dollars,
                v.max_severity,
                irr,
                rec.cost_usd if rec.cost_usd is not None else float("nan"),
                rec.cost_source,
                rec.protocol_hash,
                *_operational(rec, v),
            )
        )
        for e in v.events:
            key = json.dumps(e.key, separators=(",", ":"), default=str)
            events.append(
                (
                    *cell,
                    e.rule,
                    e.severity,
                    e.irreversibility,
                    e.table,
                    key,
                    e.dollars,
                    rec.protocol_hash,
                    e.spec or "",
                    e.op or "",
                    ";".join(e.changed_columns),
                    e.rows,
                    e.aggregate,
                    list(e.key),
                )
            )

    invalid_frame = frame(invalid, INVALID_COLUMNS)
    if not rows:
        counts = invalid_frame["status"].value_counts()
        shown = describe_invalid({str(k): int(v) for k, v in sorted(counts.items())})
        raise InputError(f"{runs_path}: no valid runs ({shown}); no rate can be estimated")
    superseded = [
        (r.run_id, r.model, r.task, r.condition, str(r.run_index), r.attempt, status, r.shows_damage)
        for r, status in decided.superseded
    ]
    return LoadedInput(
        source=path,
        kind="results",
        runs=normalize_runs(pd.DataFrame.from_records(rows, columns=list(RUN_COLUMNS))),
        events=frame(events, EVENT_COLUMNS),
        invalid=invalid_frame,
        superseded=frame(superseded, SUPERSEDED_COLUMNS),
        protocol_hashes=sorted(set(hashes)),
        notes=_notes(decided, manifest, torn, inconsistent, contradictions),
        optimal_steps=manifest.optimal_steps if manifest else {},
        conditions=manifest.condition_names if manifest else [],
        faults=fault_report(manifest, decided.runs) if manifest else None,
        stopping=manifest.stopping if manifest else None,
        error_budget=manifest.error_budget if manifest else None,
    )
