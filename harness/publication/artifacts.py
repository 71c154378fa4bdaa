"""Whether the files the records name are still there: every dump digest, every recorded transcript,
and the fsynced receipt log of every fault that fired.

The evidence root commits to the digests; this checks the bytes behind the transcripts, that each dump is
present (the resume reads dumps to their checksums; a publication does not re-read every state), and that
the receipts a record carries are the ones the harness fsynced in `receipts/<run id>.<attempt>.jsonl`
before recovery (a record edited to claim a witness the log never saw differs from it). Reads only; the
validator turns what it finds into `evidence_lost`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from agentrel.harness.publication.canonical import parse_canonical, part_bytes, sha256_hex
from agentrel.harness.publication.evidence import Evidence
from agentrel.harness.results.directory import ResultsDir

__all__ = ["artifact_problems"]


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
