"""The view's index of runs.jsonl: read once, then only the bytes an audit appends.

Each complete line becomes a light `Attempt` (where it lies in the file plus the handful of fields
the headline and cell pages need), read by the results owner's line reader (harness.results.lines);
a run page re-reads and validates its one line by offset. So a
request never re-reads every record, and 100,000 runs cost a few dozen bytes of Python objects each.

A last line without its newline is an attempt still being written (the harness writes a line whole,
so it finishes or is cut on resume): it is reported as torn and read once it is complete. A line that
is not a run record is reported with its line number and left out of every count; the view never
repairs anything (it is read-only).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, ValuesView
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from agentrel.harness.errors import UserError
from agentrel.harness.gc_paused import collector_paused
from agentrel.harness.results import layout
from agentrel.harness.results.lines import Attempt, Row, as_attempt, index_lines
from agentrel.harness.results.manifest import ManifestUnreadable, read_manifest

# Read a megabyte at a time: one read of a 150 MB file costs more in page faults than the copy.
CHUNK = 1 << 20


class NotResults(UserError):
    """The path given is not a results directory the view can read."""


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
        self.runs_path = path / layout.RUNS
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
        if not self.runs_path.exists() and not (self.path / layout.MANIFEST).exists():
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
        path = self.path / layout.MANIFEST
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            self._manifest = None
            return
        if mtime == self._manifest_mtime:
            return
        self._manifest_mtime = mtime
        try:
            self._manifest = read_manifest(self.path)
        except ManifestUnreadable:
            self._problems.append(
                f"{path}: not a manifest (a JSON object); task params and the matrix size are unknown"
            )
            self._manifest = None


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
            problems += index_lines(line, 0, len(line), lineno, offset, runs, attempts)
            lineno, offset = lineno + 1, offset + len(line)
        problems += index_lines(chunk, start, end, lineno, offset - start, runs, attempts)
        lineno += chunk.count(b"\n", start, end)
        offset += end - start
        carry = [chunk[end:]] if end < len(chunk) else []
    return offset, lineno, problems, bool(carry)
