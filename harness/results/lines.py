"""The one reader of a runs.jsonl line's summary: the handful of fields a count needs (a run's cell, its
attempt, the status it counts under, its outcome, whether it is damaging or passing, its dollars), as a
light `Attempt` that also says where the line lies in the file. The view indexes 100,000 runs through it
and re-reads a run's one line by offset for its page.

Two ways to one answer: a fast path reads the fields straight from the bytes of a line as the writer
(`directory.ResultsDir.append`) writes it, and the full parse (`full_row`, JSON) reads any other line (an
older harness's, a hand-edited one) to the same answer. The fast path is tied to the record's field order
(`record.RunRecord`); tests/harness/test_results_lines.py holds it to the full parse and to the record
model over generated records, so a reordered field shows there, not as a silently slower view.

A status, a damage and a pass are decided by the owner's rules (`status`), never here.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any, NamedTuple

from agentrel.harness.results.attempts import rank
from agentrel.harness.results.status import VALID, effective_status, is_damaging, is_passing


class Attempt(NamedTuple):
    """One line of runs.jsonl, as much of it as the index keeps."""

    run_id: str
    model: str
    task: str
    condition: str
    run_index: int
    attempt: int
    status: str  # the status it counts under (see `status_of`)
    outcome: str | None
    damaged: bool
    dollars: Decimal
    max_severity: str | None
    events: int
    error: str | None
    lineno: int
    offset: int
    length: int
    passed: bool  # last, so the fields read by position (pages.py) keep theirs

    @property
    def valid(self) -> bool:
        return self.status == VALID

    @property
    def rank(self) -> tuple[bool, int, int]:
        """The decisive attempt of a run has the highest rank (the results owner's rule)."""
        return rank(self.status, self.attempt, self.lineno)


# An Attempt's fields as a plain tuple: what the index holds. The cyclic GC stops tracking a plain
# tuple of strings and numbers at its first look, but never a tuple subclass, so 100,000 Attempts held
# as such made every full collection walk them all (some 200 ms each, one soon after every build).
Row = tuple[Any, ...]


def as_attempt(row: Row) -> Attempt:
    # tuple.__new__ rather than Attempt(...): the named tuple's own __new__ is a Python function.
    return tuple.__new__(Attempt, row)


def status_of(raw: dict[str, Any]) -> str:
    """The status a raw record counts under, by analysis's own rule."""
    verdict, error = raw.get("verdict"), raw.get("error")
    kind = error.get("kind") if isinstance(error, dict) else None
    outcome = verdict.get("outcome") if isinstance(verdict, dict) else None
    return effective_status(raw.get("status"), kind, isinstance(verdict, dict), outcome)


# The fast path reads the fields the index keeps straight from the bytes of a line as the harness writes
# it (`json.dumps` of the record's fields in their declared order), matching in place in the file's
# buffer, which is several times cheaper than parsing the whole line. It is sound because a quote inside
# a JSON string is always escaped: `", "` and `], "max_severity": ` cannot occur inside a string value, so
# `"[^"]*"` ends exactly at a value's closing quote. A captured value holding a backslash (an escape)
# is decoded by `json.loads` (the cell and verdict heads, cached) or sends the line to the full parse
# (run id, error message). Any other line (an older harness, a hand-edited record) takes the full JSON
# parse, which gives the same answer. The character classes are the cheap ones for `re`: `[^"]` scans
# a few times faster than `[^"\\\n]` or `[0-9a-f]`, and every line has some 400 bytes of them.
_HEAD = re.compile(
    rb'\{"run_id": "([^"]*)", ("model": "[^"]*", "agent_kind": (?:null|"[a-z]*"), "task": "[^"]*", '
    rb'"condition": "[^"]*"), "run_index": (-?\d+), "seed": "[^"]*", "protocol_hash": "[^"]*", '
    rb'"attempt": (\d+), ("status": "[^"]*", "verdict": (?:null|\{"outcome": "\w+", "sub_label": "\w*", '
    rb'"inconsistent": (?:true|false), "mutated": (?:true|false)))'
    # A verdict without damage events (most runs) is read to its amount here, with no second search.
    rb'(?:, "changes": \d+, "events": \[\], "max_severity": null, "dollars": "(-?[0-9]+\.[0-9]+)")?'
)
_TAIL = re.compile(rb'\], "max_severity": (?:null|"(\w+)"), "dollars": "(-?[0-9]+\.[0-9]+)"')
_ERROR = re.compile(rb', "error": \{"kind": "(\w+)", "message": "([^"]*)"\}')
_NO_ERROR = b', "error": null'
_ZERO = Decimal("0.00")
# Decoded once per distinct value, since they repeat on every line: cell fields, verdict heads, amounts.
_CELLS: dict[bytes, tuple[str, str, str]] = {}
_HEADS: dict[tuple[bytes, bytes | None], tuple[str, str | None, bool, bool]] = {}
_DOLLARS: dict[bytes, Decimal] = {}
_SEVERITIES = {None: None, b"low": "low", b"medium": "medium", b"high": "high", b"critical": "critical"}


def parse_attempt(line: bytes, lineno: int, offset: int) -> Attempt:
    """One runs.jsonl line as an `Attempt`; raises ValueError saying what is wrong with it."""
    return as_attempt(fast_row(line, 0, len(line), lineno, offset) or full_row(line, lineno, offset))


def fast_row(buf: bytes, pos: int, end: int, lineno: int, offset: int) -> Row | None:
    """The line buf[pos:end] (its newline included) read in place, or None when it is not in the
    harness's own shape (then the full parse reads it)."""
    head = _HEAD.match(buf, pos, end)
    if head is None:
        return None
    rid, cell, index, attempt, verdict, amount = head.groups()
    if b"\\" in rid:
        return None
    at = head.end()
    severity, dollars, events = None, _ZERO, 0
    if amount is not None:
        dollars = _DOLLARS.get(amount) or _DOLLARS.setdefault(amount, Decimal(amount.decode()))
    elif verdict[-1] != 108:  # not `"verdict": null` (108 is "l")
        cut = buf.find(b'], "max_severity": ', at, end)
        tail = _TAIL.match(buf, cut, end) if cut > 0 else None
        if tail is None:
            return None
        events = buf.count(b'{"rule": ', at, cut)
        sev, amount = tail.groups()
        severity = _SEVERITIES[sev] if sev in _SEVERITIES else sev.decode()
        dollars = _DOLLARS.get(amount) or _DOLLARS.setdefault(amount, Decimal(amount.decode()))
        at = tail.end()
    cut = buf.find(b', "error": ', at, end)
    if cut < 0:
        return None
    kind = message = None
    if not buf.startswith(_NO_ERROR, cut):
        err = _ERROR.match(buf, cut, end)
        if err is None:
            return None
        kind, message = err.groups()
        if b"\\" in message:
            return None
    model_task_cond = _CELLS.get(cell) or _CELLS.setdefault(cell, _cell_fields(cell))
    status, outcome, damaged, passed = _HEADS.get((verdict, kind)) or _HEADS.setdefault(
        (verdict, kind), _verdict_head(verdict, kind)
    )
    return (
        rid.decode(),
        *model_task_cond,
        int(index),
        int(attempt),
        status,
        outcome,
        damaged,
        dollars,
        severity,
        events,
        message.decode() if message is not None else None,
        lineno,
        offset,
        end - pos,
        passed,
    )


def _cell_fields(cell: bytes) -> tuple[str, str, str]:
    raw = json.loads(b"{" + cell + b"}")
    return raw["model"], raw["task"], raw["condition"]


def _verdict_head(head: bytes, kind_raw: bytes | None) -> tuple[str, str | None, bool, bool]:
    """(status it counts under, outcome, damaged, passed) from `"status": ..., "verdict": {...` and the
    error."""
    raw = json.loads(b"{" + head + (b"}" if head.endswith(b"null") else b"}}"))
    verdict = raw["verdict"]
    kind = None if kind_raw is None else kind_raw.decode()
    error = {"kind": kind} if kind else None
    status = status_of({"status": raw["status"], "verdict": verdict, "error": error})
    outcome = verdict["outcome"] if verdict else None
    mutated = bool(verdict and verdict["mutated"])
    damaged = is_damaging(outcome, mutated, kind == "agent")
    return status, outcome, damaged, is_passing(outcome, mutated, kind == "agent")


def full_row(line: bytes, lineno: int, offset: int) -> Row:
    raw = json.loads(line)
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    for name in ("run_id", "model", "task", "condition"):
        if not isinstance(raw.get(name), str):
            raise ValueError(f"field {name!r} missing or not text")
    run_index, attempt = raw.get("run_index"), raw.get("attempt", 1)
    if not isinstance(run_index, int) or not isinstance(attempt, int):
        raise ValueError("field 'run_index' or 'attempt' missing or not a number")
    v, err = raw.get("verdict"), raw.get("error")
    verdict: dict[str, Any] = v if isinstance(v, dict) else {}
    error: dict[str, Any] = err if isinstance(err, dict) else {}
    try:
        dollars = Decimal(str(verdict.get("dollars") or "0"))
    except InvalidOperation:
        raise ValueError("field 'verdict.dollars' is not a decimal amount") from None
    outcome = verdict.get("outcome")
    mutated, agent_error = bool(verdict.get("mutated")), error.get("kind") == "agent"
    return (
        raw["run_id"],
        raw["model"],
        raw["task"],
        raw["condition"],
        run_index,
        attempt,
        status_of(raw),
        outcome if isinstance(outcome, str) else None,
        is_damaging(outcome, mutated, agent_error),
        dollars,
        verdict.get("max_severity"),
        len(verdict.get("events") or ()),
        error.get("message"),
        lineno,
        offset,
        len(line),
        is_passing(outcome, mutated, agent_error),
    )


def _short(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON at column {exc.colno}"
    return str(exc)


def index_lines(
    data: bytes,
    pos: int,
    stop: int,
    lineno: int,
    base: int,
    runs: dict[str, Row],
    attempts: dict[str, int],
) -> list[str]:
    """Read the complete lines of data[pos:stop] into `runs` (each run's decisive attempt, by the owner's
    rule, `attempts.rank`) and `attempts` (run id -> how many, for runs with more than one); return the
    problems found, each as `<line number>: ...`."""
    problems: list[str] = []
    find, fast, held_of = data.find, fast_row, runs.get
    while pos < stop:
        eol = find(b"\n", pos, stop) + 1
        lineno += 1
        try:
            a = fast(data, pos, eol, lineno, base + pos) or full_row(data[pos:eol], lineno, base + pos)
        except ValueError as exc:
            if data[pos:eol].strip():
                problems.append(f"{lineno}: not a run record ({_short(exc)}); left out")
        else:
            rid = a[0]
            held = held_of(rid)
            if held is None:
                runs[rid] = a
            else:
                attempts[rid] = attempts.get(rid, 1) + 1
                if rank(a[6], a[5], lineno) > rank(held[6], held[5], held[13]):
                    runs[rid] = a
        pos = eol
    return problems
