"""Whether the files the records name are still there: every dump digest, every recorded transcript,
and the fsynced receipt log of every fault that fired.

The evidence root commits to the digests; this checks the bytes behind the transcripts, that each dump is
present (the resume reads dumps to their checksums; a publication does not re-read every state), and that
the receipts a record carries are the ones the harness fsynced in `receipts/<run id>.<attempt>.jsonl`
before recovery (a record edited to claim a witness the log never saw differs from it). Reads only; the
validator turns what it finds into `evidence_lost`.

The other way round, `orphan_problems` lists the evidence no record names: a run's after-state dump (a
delta), a transcript or a receipt log. Removing a record leaves them behind (and re-running the same
command draws that run again), so the validator refuses them (`orphan_evidence`). Full dumps are the
task templates the deltas are against; the audit stores one per task before any run, so an unnamed one
is no run's evidence and is left alone.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from agentrel.harness.protocol.canonical import parse_canonical, part_bytes, sha256_hex
from agentrel.harness.publication.evidence import Evidence
from agentrel.harness.results import layout
from agentrel.harness.results.directory import ResultsDir

__all__ = ["artifact_problems", "orphan_problems"]


def artifact_problems(results: Path, evidence: Evidence) -> list[str]:
    rd = ResultsDir(results)
    problems = []
    for digest in evidence.dumps:
        if not any(
            p.exists() for p in (rd.dumps / f"{digest}.jsonl.gz", rd.dumps / f"{digest}.delta.jsonl.gz")
        ):
            problems.append(f"dump {digest[:12]} is missing from {rd.dumps}")
    for rid, attempt, digest in evidence.transcripts:
        path = rd.transcript_path(rid, attempt)
        try:
            data = path.read_bytes()
        except OSError:
            problems.append(f"transcript {path.name} is missing")
            continue
        if hashlib.sha256(data).hexdigest() != digest:
            problems.append(f"transcript {path.name} does not match its digest")
    logs: dict[tuple[str, int], dict[str, set[str]] | None] = {}
    for rid, attempt, kind, digest in evidence.receipts:
        if (rid, attempt) not in logs:
            logs[rid, attempt] = _receipt_log(rd.receipt_path(rid, attempt))
        log = logs[rid, attempt]
        if log is None:
            problems.append(f"receipt log receipts/{rid}.{attempt}.jsonl is missing or unreadable")
        elif digest not in log[kind]:
            problems.append(f"the {kind} receipt of {rid} attempt {attempt} is not the one its log holds")
    return problems


def _receipt_log(path: Path) -> dict[str, set[str]] | None:
    """The RFC 8785 hashes of a receipt log's bodies by kind (ReceiptLog's lines), or None."""
    out: dict[str, set[str]] = {"actuator": set(), "witness": set()}
    try:
        for line in path.read_bytes().splitlines():
            _, entry, fast = parse_canonical(line)
            out[entry["receipt"]].add(sha256_hex(part_bytes(entry["body"], fast)))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return out


def orphan_problems(results: Path, evidence: Evidence) -> list[str]:
    """One line per dump, transcript or receipt log in `results` that no record names.

    By name, from one listing of each folder: at 100,000 records, building a path per attempt cost more
    than the rest of the check; a folder with no file in it costs nothing."""
    named = set(evidence.dumps)
    out = [
        f"dump {name} is named by no record"
        for name in _listing(results / layout.DUMPS)
        if name.endswith(layout.DELTA_DUMP) and name.removesuffix(layout.DELTA_DUMP) not in named
    ]
    kinds = (
        (layout.TRANSCRIPTS, ".json", layout.transcript_name, "transcript {}"),
        (layout.RECEIPTS, ".jsonl", layout.receipt_log_name, "receipt log receipts/{}"),
    )
    for folder, suffix, name_of, what in kinds:
        files = [name for name in _listing(results / folder) if name.endswith(suffix)]
        if not files:
            continue
        names = {name_of(r.run_id, r.attempt) for r in evidence.records}
        out += [f"{what.format(name)} is named by no record" for name in files if name not in names]
    return out


def _listing(folder: Path) -> list[str]:
    """The names in a folder, sorted (none when it does not exist)."""
    try:
        return sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
