"""The view's index of runs.jsonl: read once, then only the bytes an audit appends.

Each complete line becomes a light `Attempt` (where it lies in the file plus the handful of fields
the headline and cell pages need); a run page re-reads and validates its one line by offset. So a
request never re-reads every record, and 100,000 runs cost a few dozen bytes of Python objects each.

A last line without its newline is an attempt still being written (the harness writes a line whole,
so it finishes or is cut on resume): it is reported as torn and read once it is complete. A line that
is not a run record is reported with its line number and left out of every count; the view never
repairs anything (it is read-only).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator, Mapping, ValuesView
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from agentrel.harness.errors import UserError
from agentrel.harness.gc_paused import collector_paused
from agentrel.harness.results.attempts import rank
from agentrel.harness.results.status import VALID, effective_status, is_damaging, is_passing

# Read a megabyte at a time: one read of a 150 MB file costs more in page faults than the copy.
CHUNK = 1 << 20


class NotResults(UserError):
    """The path given is not a results directory the view can read."""


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


class _Attempts(ValuesView[Attempt]):
    _mapping: Runs

    def __iter__(self) -> Iterator[Attempt]:
        return map(as_attempt, self._mapping.rows())


class Runs(Mapping[str, Attempt]):
    """Run id -> its decisive attempt, in first-seen order: the index's rows, read as Attempts.

    `rows()` gives the plain tuples themselves (fields by position, as in Attempt), for a pass over
    every run that needs no names."""

    __slots__ = ("_rows",)

    def __init__(self, rows: dict[str, Row]) -> None:
        self._rows = rows

    def __getitem__(self, run_id: str) -> Attempt:
        return as_attempt(self._rows[run_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def values(self) -> ValuesView[Attempt]:
        return _Attempts(self)

    def rows(self) -> Iterator[Row]:
        return iter(self._rows.values())


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
    return as_attempt(_fast(line, 0, len(line), lineno, offset) or _parsed(line, lineno, offset))


def _fast(buf: bytes, pos: int, end: int, lineno: int, offset: int) -> Row | None:
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


def _parsed(line: bytes, lineno: int, offset: int) -> Row:
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


@dataclass
class Snapshot:
    """What the index holds at one moment; pages are computed from it and never see a half-read file."""

    version: int
    runs: Runs  # run id -> its decisive attempt, in first-seen order
    attempts: dict[str, int]  # run id -> how many attempts it had, for runs with more than one
    problems: list[str] = field(default_factory=list)  # damaged lines, with their line numbers
    torn: bool = False
    manifest: dict[str, Any] | None = None


class ResultsIndex:
    """The index over one results directory; `refresh()` reads only what was appended since."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.runs_path = path / "runs.jsonl"
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._offset = 0
        self._lineno = 0
        self._ident: tuple[int, int] | None = None
        self._runs: dict[str, Row] = {}
        self._attempts: dict[str, int] = {}
        self._problems: list[str] = []
        self._torn = False
        self._version = 0
        self._manifest: dict[str, Any] | None = None
        self._manifest_mtime: float | None = None

    def check(self) -> None:
        """Raise NotResults when the path is not a results directory (said in one line)."""
        if not self.path.exists():
            raise NotResults(f"{self.path}: no such directory")
        if not self.path.is_dir():
            raise NotResults(f"{self.path}: is a file, not a results directory")
        if not self.runs_path.exists() and not (self.path / "manifest.json").exists():
            raise NotResults(
                f"{self.path}: not a results directory (no runs.jsonl or manifest.json); give the "
                "--results directory of an `agentrel audit`"
            )

    def snapshot(self) -> Snapshot:
        """Read whatever was appended, then return the current state (cheap when nothing changed)."""
        with self._lock:
            self._refresh()
            return Snapshot(
                self._version,
                Runs(self._runs),
                self._attempts,
                list(self._problems),
                self._torn,
                self._manifest,
            )

    def line(self, attempt: Attempt) -> bytes:
        """The raw line of one attempt, read by offset (a run page validates it in full)."""
        with open(self.runs_path, "rb") as fh:
            fh.seek(attempt.offset)
            return fh.read(attempt.length)

    def _refresh(self) -> None:
        self.check()
        self._read_manifest()
        try:
            st = os.stat(self.runs_path)
        except FileNotFoundError:
            return  # an audit that has written its manifest and no run yet
        ident = (st.st_dev, st.st_ino)
        # Replaced or shrunk below what was read: not an append, so index it again from the start.
        if self._ident not in (None, ident) or st.st_size < self._offset:
            manifest = self._manifest, self._manifest_mtime
            version = self._version
            self._reset()
            self._manifest, self._manifest_mtime = manifest
            self._version = version + 1
        self._ident = ident
        if st.st_size == self._offset:
            self._torn = False
            return
        # Copied, not mutated: a page being computed from the previous snapshot keeps iterating it.
        runs, attempts = dict(self._runs), dict(self._attempts)
        with open(self.runs_path, "rb") as fh, collector_paused():
            fh.seek(self._offset)
            offset, lineno, problems, self._torn = _read(
                fh, st.st_size - self._offset, self._offset, self._lineno, runs, attempts
            )
        if offset == self._offset:
            return
        self._problems += [f"{self.runs_path}:{p}" for p in problems]
        self._offset, self._lineno = offset, lineno
        self._runs, self._attempts = runs, attempts
        self._version += 1

    def _read_manifest(self) -> None:
        path = self.path / "manifest.json"
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            self._manifest = None
            return
        if mtime == self._manifest_mtime:
            return
        self._manifest_mtime = mtime
        try:
            raw = json.loads(path.read_bytes())
        except (OSError, ValueError):
            self._problems.append(f"{path}: not valid JSON; task params and the matrix size are unknown")
            self._manifest = None
            return
        self._manifest = raw if isinstance(raw, dict) else None


def _read(
    fh: BinaryIO, size: int, offset: int, lineno: int, runs: dict[str, Row], attempts: dict[str, int]
) -> tuple[int, int, list[str], bool]:
    """Index the complete lines of the next `size` bytes of fh, which starts at file offset `offset`
    after line `lineno`, a chunk at a time; returns the offset and line number after the last complete
    line, the problems found and whether a torn line follows it."""
    problems: list[str] = []
    carry: list[bytes] = []  # the start of a line that continues in the next chunk
    while size > 0:
        chunk = fh.read(min(CHUNK, size))
        if not chunk:
            break  # cut shorter while being read: the rest is read next time
        size -= len(chunk)
        start, end = 0, chunk.rfind(b"\n") + 1
        if end == 0:
            carry.append(chunk)
            continue
        if carry:  # the line cut at the last chunk's end, read on its own (never a copy of the chunk)
            start = chunk.index(b"\n") + 1
            line = b"".join([*carry, chunk[:start]])
            problems += _span(line, 0, len(line), lineno, offset, runs, attempts)
            lineno, offset = lineno + 1, offset + len(line)
        problems += _span(chunk, start, end, lineno, offset - start, runs, attempts)
        lineno += chunk.count(b"\n", start, end)
        offset += end - start
        carry = [chunk[end:]] if end < len(chunk) else []
    return offset, lineno, problems, bool(carry)


def _short(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON at column {exc.colno}"
    return str(exc)


def _span(
    data: bytes,
    pos: int,
    stop: int,
    lineno: int,
    base: int,
    runs: dict[str, Row],
    attempts: dict[str, int],
) -> list[str]:
    """Read the complete lines of data[pos:stop] into `runs` (each run's decisive attempt: its latest
    valid one, else its latest, as analysis.attempts) and `attempts`; return the problems found."""
    problems: list[str] = []
    find, fast, held_of = data.find, _fast, runs.get
    while pos < stop:
        eol = find(b"\n", pos, stop) + 1
        lineno += 1
        try:
            a = fast(data, pos, eol, lineno, base + pos) or _parsed(data[pos:eol], lineno, base + pos)
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
