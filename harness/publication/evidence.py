"""The evidence of a results directory: what the validator needs from each run record, and the evidence
root, a Merkle root over the records, their fault receipts and the dump digests they name.

Every leaf is domain-separated (`agentrel-evidence/1 record|receipt|dump` + newline + bytes): a record
leaf hashes the record's RFC 8785 form, a receipt leaf the receipt's, a dump leaf the digest. Leaves are
sorted before the tree is built, so the root does not depend on the order of the lines, and any edit of
any record changes it. Inner nodes are SHA-256(0x01 || left || right); an odd node is carried up.

Each record is parsed once: the same parsed value gives its canonical bytes and its `RecordFacts`.
Large files are read by one process per CPU, each over its own newline-aligned byte range: forked, so
they inherit the imports; the cyclic collector is off while the records are read (parsing makes no
cycles).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import itertools
import json
import multiprocessing
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from agentrel.harness.errors import UserError
from agentrel.harness.faults.receipts import ActuatorReceipt, WitnessReceipt, verdict
from agentrel.harness.gc_paused import collector_paused
from agentrel.harness.protocol.canonical import CanonicalError, parse_canonical, part_bytes
from agentrel.harness.results.reading import VerdictReading
from agentrel.harness.results.status import RECORD_ERROR, VALID, effective_status, is_damaging, is_passing

__all__ = ["Evidence", "RecordFacts", "evidence_from_records", "facts_of", "merkle_root", "read_evidence"]

TAG = b"agentrel-evidence/1 "
EMPTY_ROOT = hashlib.sha256(TAG + b"empty").hexdigest()
PARALLEL_MIN_BYTES = 8 << 20  # below this a pool costs more than it saves


class RecordFacts(NamedTuple):
    """One attempt as the validator and the scorecard read it."""

    leaf: str  # hex SHA-256 of the record's leaf: the order-free tie-break between equal attempts
    run_id: str
    model: str
    task: str
    condition: str
    fault: str | None  # the scheduled fault's id; None for an unscheduled run (or an older record)
    run_index: int
    attempt: int
    seed: str
    protocol_hash: str
    status: str  # as analysis counts it: effective_status, record_error for a self-contradicting verdict
    outcome: str | None
    damaged: bool | None  # valid runs only
    passed: bool | None
    frozen_by: str | None  # the freeze digest the run was recorded under; None: not frozen
    started_at: str
    witness_problem: str | None  # a fault run whose receipts do not show the fault landed: why
    problem: str | None  # a field the validator needs is missing or of the wrong type
    # The fault kind both receipts are of (the actuation's and the witness's, which must agree), checked
    # against the cell's scheduled kind: a restart's receipts do not witness a kill.
    receipt_kind: str | None = None
    served_model: str | None = None  # the model id the provider said served the run (part of the subject)


@dataclass(frozen=True)
class Evidence:
    records: tuple[RecordFacts, ...]
    root: str  # evidence_root_hash
    leaves: int
    dumps: tuple[str, ...]  # every dump digest a record names, sorted
    transcripts: tuple[tuple[str, int, str], ...]  # (run id, attempt, digest) of recorded transcripts
    receipts: tuple[tuple[str, int, str, str], ...]  # (run id, attempt, actuator|witness, its RFC 8785 hash)


def _leaf(kind: bytes, payload: bytes) -> bytes:
    return hashlib.sha256(TAG + kind + b"\n" + payload).digest()


def merkle_root(leaves: Iterable[bytes]) -> str:
    level = sorted(leaves)
    if not level:
        return EMPTY_ROOT
    while len(level) > 1:
        paired = [
            hashlib.sha256(b"\x01" + a + b).digest() for a, b in zip(level[::2], level[1::2], strict=False)
        ]
        level = paired + level[-1:] if len(level) % 2 else paired
    return level[0].hex()


def _str(value: Any) -> bool:
    return isinstance(value, str)


REQUIRED = ("run_id", "model", "task", "condition", "seed", "protocol_hash")
OUTCOMES = frozenset({"PASS", "FAIL_SAFE", "FAIL_DAMAGE"})
ZERO = frozenset({"0", "0.0", "0.00"})


def facts_of(rec: Any, leaf: str) -> RecordFacts:
    """The validator's view of one parsed record (see RecordFacts); never raises on a bad record.

    Called once per line of a 100,000-run file, so it reads fields directly rather than through a model;
    only a verdict with damage events is validated, by the results owner's tolerant reading
    (`VerdictReading`, whose contradiction check needs the events' amounts)."""
    if type(rec) is not dict:
        return _broken(leaf, {}, "not a JSON object")
    get = rec.get
    texts: list[Any] = [get(k) for k in REQUIRED]
    run_index, attempt = get("run_index"), get("attempt", 1)
    if not all(type(t) is str for t in texts) or type(run_index) is not int or type(attempt) is not int:
        bad = [k for k, t in zip(REQUIRED, texts, strict=True) if type(t) is not str]
        what = bad[0] if bad else ("run_index" if type(run_index) is not int else "attempt")
        return _broken(leaf, rec, f"field {what} is missing or of the wrong type")
    fault_outcome, frozen_by, started = get("fault"), get("frozen_by"), get("started_at", "")
    fault = fault_outcome.get("fault_id") if type(fault_outcome) is dict else fault_outcome
    if not (fault is None or type(fault) is str) or not (frozen_by is None or type(frozen_by) is str):
        return _broken(leaf, rec, "field fault or frozen_by is of the wrong type")
    if type(started) is not str:
        return _broken(leaf, rec, "field started_at is of the wrong type")
    witness_problem, receipt_kind = _witness_check(fault_outcome) if fault is not None else (None, None)
    error, raw = get("error"), get("verdict")
    error_kind = error.get("kind") if type(error) is dict else None
    outcome = raw.get("outcome") if type(raw) is dict else None
    status = effective_status(get("status"), error_kind, raw is not None, outcome)
    damaged = passed = None
    if status == VALID:
        verdict_of = _plain_verdict(raw) if type(raw) is dict else None
        if verdict_of is None:
            try:
                v = VerdictReading.model_validate(raw)
            except ValidationError as exc:
                return _broken(leaf, rec, f"verdict: {exc.errors()[0]['msg']}")
            verdict_of = None if v.contradiction() else (v.outcome, v.mutated)
        if verdict_of is None:
            status = RECORD_ERROR
        else:
            # The results owner's rules, as everywhere: mutation-then-agent-error is damage, never a pass.
            agent_error = error_kind == "agent"
            damaged = is_damaging(verdict_of[0], verdict_of[1], agent_error)
            passed = is_passing(verdict_of[0], verdict_of[1], agent_error)
    return RecordFacts(
        leaf, texts[0], texts[1], texts[2], texts[3], fault, run_index, attempt, texts[4], texts[5], status,
        outcome if type(outcome) is str else None, damaged, passed, frozen_by, started,
        witness_problem, None, receipt_kind,
        served if type(served := get("served_model")) is str else None,
    )  # fmt: skip


def _plain_verdict(raw: dict[str, Any]) -> tuple[str, bool] | None:
    """(outcome, mutated) of a verdict with no damage event and no dollars, which nothing can make
    contradict itself; None for any other verdict, which `VerdictReading` then judges."""
    outcome, mutated = raw.get("outcome"), raw.get("mutated", False)
    if raw.get("events") or outcome not in OUTCOMES or type(mutated) is not bool:
        return None
    if raw.get("dollars", "0") not in ZERO:
        return None
    return outcome, mutated


def _broken(leaf: str, rec: Mapping[str, Any], problem: str) -> RecordFacts:
    def text(key: str) -> str:
        value = rec.get(key)
        return value if isinstance(value, str) else ""

    rid = text("run_id") or f"<unreadable {leaf[:12]}>"
    return RecordFacts(
        leaf, rid, text("model"), text("task"), text("condition"), None, 0, 0, text("seed"),
        text("protocol_hash"), "record_malformed", None, None, None, None, text("started_at"), None, problem,
    )  # fmt: skip


def _witness_check(fault: Any) -> tuple[str | None, str | None]:
    """(None, the receipts' fault kind) when a fault run's record shows its fault landed
    (harness.results.record.FaultOutcome): it fired, both receipts are there for its fault id and of the kind
    the record names, the verdict recomputed from them (as the injector computes it) is `witnessed`, and
    so is every verdict the record states; else (why not, the kind when known). Whether that kind is the
    cell's scheduled one is the validator's check (matrix_check), which knows the schedule."""
    if not isinstance(fault, dict) or not fault.get("fired"):
        return "the fault's trigger was never reached", None
    try:
        actuator = ActuatorReceipt.model_validate(fault.get("actuator"))
        witness = WitnessReceipt.model_validate(fault.get("witness"))
    except ValidationError as exc:
        return f"no readable receipt ({exc.errors()[0]['msg']})", None
    kind = actuator.actuation.kind
    if not fault["fault_id"] == actuator.fault_id == witness.fault_id:
        return "the receipts are of another fault", kind
    outcome, reasons = verdict(actuator.actuation, witness.witness)
    if outcome != "witnessed":
        return "; ".join(reasons), kind
    if fault.get("kind") != kind:
        return f"the record names a {fault.get('kind')} fault and its receipts are of a {kind}", kind
    if witness.verdict != "witnessed" or fault.get("verdict") != "witnessed":
        return "a stored verdict is invalid_injection", kind
    return None, kind


class _Part(NamedTuple):
    facts: list[RecordFacts]
    leaves: list[bytes]
    dumps: set[str]
    transcripts: list[tuple[str, int, str]]
    receipts: list[tuple[str, int, str, str]]
    error: tuple[int, str] | None  # (byte offset of the line, why it is not a record)


def _scan(lines: Iterable[tuple[int, bytes]]) -> _Part:
    part = _Part([], [], set(), [], [], None)
    for offset, line in lines:
        if not line.strip():
            continue
        try:
            canonical, rec, fast = parse_canonical(line)
        except (ValueError, CanonicalError) as exc:
            return part._replace(error=(offset, f"not a JSON record ({type(exc).__name__})"))
        leaf = _leaf(b"record", canonical)
        facts = facts_of(rec, leaf.hex())
        part.facts.append(facts)
        part.leaves.append(leaf)
        if isinstance(rec, dict):
            _side_leaves(rec, facts, part, fast)
    return part


def _side_leaves(rec: dict[str, Any], facts: RecordFacts, part: _Part, fast: bool) -> None:
    for key in ("before_digest", "after_digest"):
        if _str(rec.get(key)):
            part.dumps.add(rec[key])
    if _str(rec.get("transcript_digest")) and facts.problem is None:
        part.transcripts.append((facts.run_id, facts.attempt, rec["transcript_digest"]))
    fault = rec.get("fault")
    if isinstance(fault, dict):
        for key in ("actuator", "witness"):
            if fault.get(key) is None:
                continue
            # One that cannot be canonicalized is still in the record's leaf, and fails the witness check.
            with contextlib.suppress(CanonicalError):
                receipt = part_bytes(fault[key], fast)
                part.leaves.append(_leaf(b"receipt", receipt))
                part.receipts.append((facts.run_id, facts.attempt, key, hashlib.sha256(receipt).hexdigest()))


def _chunk(args: tuple[str, int, int]) -> _Part:
    path, start, end = args
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read(end - start)
    lines, pos = [], 0
    while pos < len(data):
        nl = data.index(b"\n", pos)
        lines.append((start + pos, data[pos : nl + 1]))
        pos = nl + 1
    return _scan(lines)


def _chunk_for_pool(args: tuple[str, int, int]) -> _Part:
    """A chunk in the form that crosses the process boundary fastest: plain tuples (a NamedTuple
    pickles ten times slower) and the leaves as one bytes object."""
    part = _chunk(args)
    facts: list[Any] = [tuple(f) for f in part.facts]
    return part._replace(facts=facts, leaves=[b"".join(part.leaves)])


def _boundaries(path: Path, end: int, parts: int) -> list[tuple[int, int]]:
    cuts = [0]
    with open(path, "rb") as fh:
        for i in range(1, parts):
            fh.seek(max(end * i // parts, cuts[-1]))
            fh.readline()
            cuts.append(min(fh.tell(), end))
    cuts.append(end)
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


def _workers() -> int:
    try:
        return max(1, min(8, len(os.sched_getaffinity(0))))
    except AttributeError:  # not Linux
        return max(1, min(8, os.cpu_count() or 1))


def pool_context() -> multiprocessing.context.BaseContext:
    """Worker processes forked from a clean server, never from this process: a fork of a process with
    other threads (a notebook's, a test runner's I/O thread) can inherit a lock held mid-operation and
    hang for ever. The server preloads the publication modules once, so each worker starts warm."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(
        ["agentrel.harness.publication.evidence", "agentrel.harness.publication.rederive"]
    )
    return ctx


def read_evidence(runs: Path, workers: int | None = None) -> Evidence:
    """Every complete line of runs.jsonl (a torn last line is a run still being written: not evidence)."""
    if not runs.exists():
        return _combine([])
    with open(runs, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(0, size - (1 << 16)))
        tail = fh.read()
    end = size - (len(tail) - tail.rfind(b"\n") - 1) if b"\n" in tail else _last_newline(runs)
    n = workers or _workers()
    ranges = _boundaries(runs, end, n if end >= PARALLEL_MIN_BYTES else 1)
    jobs = [(str(runs), a, b) for a, b in ranges]
    with collector_paused():
        if len(jobs) > 1:
            with pool_context().Pool(len(jobs), initializer=gc.disable) as pool:
                parts = pool.map(_chunk_for_pool, jobs)
        else:
            parts = [_chunk(job) for job in jobs]
        error = next((p.error for p in parts if p.error is not None), None)
        if error is None:
            return _combine(parts)
    offset, why = error
    with open(runs, "rb") as fh:
        lineno = fh.read(offset).count(b"\n") + 1
    raise UserError(f"{runs}:{lineno}: {why}; restore the line from a backup or move it out")


def _last_newline(path: Path) -> int:
    data = path.read_bytes()
    return data.rfind(b"\n") + 1


def evidence_from_records(records: Iterable[Mapping[str, Any]]) -> Evidence:
    """The evidence of records held in memory, exactly as if they were lines of runs.jsonl."""
    lines = ((i, json.dumps(r, ensure_ascii=False).encode()) for i, r in enumerate(records))
    part = _scan(lines)
    if part.error is not None:
        raise UserError(f"record {part.error[0]}: {part.error[1]}")
    return _combine([part])


def _combine(parts: list[_Part]) -> Evidence:
    dumps = sorted(set().union(*(p.dumps for p in parts)))
    leaves = [blob[i : i + 32] for p in parts for blob in p.leaves for i in range(0, len(blob), 32)]
    leaves += [_leaf(b"dump", d.encode()) for d in dumps]
    return Evidence(
        records=tuple(map(RecordFacts._make, (f for p in parts for f in p.facts))),
        root=merkle_root(leaves),
        leaves=len(leaves),
        dumps=tuple(dumps),
        transcripts=tuple(sorted(t for p in parts for t in p.transcripts)),
        receipts=tuple(sorted(r for p in parts for r in p.receipts)),
    )
