"""The results directory's reader and writer: one JSON line per finished attempt in `runs.jsonl`
(`record.RunRecord`), appended, flushed and fsynced; the dumps, transcripts and receipts beside it.

Dumps are kept content-addressed in `dumps/`: each task's pre-run template dump in full
(`<digest>.jsonl.gz`), each post-run dump as a delta against it (`<digest>.delta.jsonl.gz`, rebuilt and
checked by `ResultsDir.load_dump`); runs that leave the same state share one file. Transcripts are in
`transcripts/<run id>.json`.
A line is one attempt of a run, written only when the attempt is finished (and labelled, where its state
could be read), in one `write` of a complete line, after its transcript; so a crash can at worst leave a
torn last line, which `ResultsDir.open` truncates (that attempt simply runs again), and never touches
complete lines. An invalid attempt (the provider or the harness failed; see `status`) is kept and
the run is attempted again, up to the manifest's attempt cap; every attempt stays in the file.
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from agentrel.dsl.state import DumpFormatError, State, load, load_delta
from agentrel.harness.durable import write_durably
from agentrel.harness.errors import EnvironmentFailure, IntegrityFailure, UsageError, UserError
from agentrel.harness.results import layout
from agentrel.harness.results.record import Attempts, RunRecord, decisive
from agentrel.harness.yamlfile import field_problem


class ResultsDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.runs = path / layout.RUNS
        self.manifest = path / layout.MANIFEST
        self.dumps = path / layout.DUMPS
        self.transcripts = path / layout.TRANSCRIPTS
        self.receipts = path / layout.RECEIPTS  # the fault runs' receipt logs, fsynced before recovery
        self._lock_fd: int | None = None
        self.torn_bytes = 0  # set by open(): the size of a torn last line it cut

    def open(self) -> None:
        """Make the directory ready for this process alone to write: take the writer's lock, clear what
        a crashed writer left half-written, and prove every folder takes a write before any run is spent."""
        try:
            for d in (self.path, self.dumps, self.transcripts):
                d.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise UsageError(f"--results {self.path}: is a file, not a results directory") from None
        except OSError as exc:
            raise EnvironmentFailure(
                f"{self.path}: cannot create the results directory ({_why(exc)})"
            ) from None
        self._lock()
        for folder in (self.path, self.dumps, self.transcripts):
            for stale in folder.glob("*.tmp"):
                stale.unlink(missing_ok=True)
            _probe(folder)
        self._repair_tail()

    def close(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the lock
            self._lock_fd = None

    def _lock(self) -> None:
        """One writer per results directory. The kernel drops a flock when its holder dies, so a crashed
        audit never leaves a lock behind that blocks the resume."""
        path = self.path / layout.LOCK
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise EnvironmentFailure(f"{path}: cannot create the writer's lock ({_why(exc)})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held = self._held(fd)
            os.close(fd)
            raise held from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock_fd = fd

    def refuse_if_held(self) -> None:
        """Refuse now a directory another live writer holds, creating nothing: an audit checks this
        before it opens the sandbox, so a second writer never waits on what the first holds there (a
        paused writer's database locks) before hearing the one line `open` would give."""
        try:
            fd = os.open(self.path / layout.LOCK, os.O_RDONLY)
        except OSError:
            return  # no writer has been here (or the file is unreadable: `open` says so)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise self._held(fd) from None
        finally:
            os.close(fd)

    def _held(self, fd: int) -> EnvironmentFailure:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
        return EnvironmentFailure(
            f"{self.path}: another agentrel process (pid {holder}) is writing these results; "
            "wait for it to finish or use another --results directory"
        )

    def _repair_tail(self) -> None:
        """Cut a torn last line: an attempt still being written when its writer stopped (it runs again).
        Only ever the bytes after the last newline; a damaged complete line is the user's to judge."""
        self.torn_bytes = 0
        if not self.runs.exists():
            return
        data = self.runs.read_bytes()
        cut = data.rfind(b"\n") + 1
        if cut != len(data):
            with open(self.runs, "r+b") as fh:
                fh.truncate(cut)
                os.fsync(fh.fileno())
            self.torn_bytes = len(data) - cut

    def records(self, attempts: Attempts | None = None) -> list[RunRecord]:
        """The decisive attempt of every run (`attempts.decisive_index`)."""
        return [decisive(recs) for recs in (self.attempts() if attempts is None else attempts).values()]

    def _read(self) -> list[RunRecord]:
        if not self.runs.exists():
            return []
        out: list[RunRecord] = []
        with open(self.runs, "rb") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.endswith(b"\n"):
                    break  # a torn tail: not a finished run
                try:
                    rec = RunRecord.model_validate_json(line)
                except ValueError as exc:
                    # A damaged line in the middle is never dropped or rewritten silently: the user
                    # decides, since the lines around it are evidence.
                    raise UserError(
                        f"{self.runs}:{lineno}: not a run record ({_first_problem(exc)}); every other "
                        "line is intact: restore this line from a backup, or move it out of the file"
                    ) from None
                out.append(rec)
        return out

    def attempts(self) -> Attempts:
        """Every attempt of every run, in file order (one read of runs.jsonl; the methods below take it)."""
        out: Attempts = {}
        for rec in self._read():
            out.setdefault(rec.run_id, []).append(rec)
        return out

    def finished(self, max_attempts: int, attempts: Attempts | None = None) -> set[str]:
        """Runs that need no further attempt: one terminal attempt, or the attempt cap reached."""
        return {
            rid
            for rid, recs in (self.attempts() if attempts is None else attempts).items()
            if any(r.terminal for r in recs) or len(recs) >= max_attempts
        }

    def lost_evidence(self, attempts: Attempts | None = None) -> dict[str, str]:
        """Valid runs whose evidence is gone (a dump or a transcript missing, torn or altered), with why.

        They must run again: a verdict without the state it was read from proves nothing."""
        problems: dict[str, str | None] = {}
        lost: dict[str, str] = {}
        for rec in self.records(attempts):
            if not rec.terminal:
                continue
            for digest in filter(None, (rec.before_digest, rec.after_digest)):
                problem = self._dump_problem(digest, problems)
                if problem:
                    lost[rec.run_id] = f"dump {digest[:12]}: {problem}"
            if rec.run_id not in lost and rec.transcript_digest is not None:
                path = self.transcript_path(rec.run_id, rec.attempt)
                if not path.exists():
                    lost[rec.run_id] = f"transcript {path.name} is missing"
                elif hashlib.sha256(path.read_bytes()).hexdigest() != rec.transcript_digest:
                    lost[rec.run_id] = f"transcript {path.name} does not match its digest"
        return lost

    def _dump_problem(self, digest: str, memo: dict[str, str | None]) -> str | None:
        """Why the stored dump of `digest` cannot be read back, or None. Reads every gzip member to its
        checksum; a delta's header must name this digest and a base that is itself intact."""
        if digest not in memo:
            memo[digest] = self._read_problem(digest, memo)
        return memo[digest]

    def _read_problem(self, digest: str, memo: dict[str, str | None]) -> str | None:
        full, delta = self._dump_files(digest)
        path = full if full.exists() else delta
        if not path.exists():
            return "missing"
        try:
            with gzip.open(path, "rb") as fh:
                header = json.loads(fh.readline())
                while fh.read(1 << 20):
                    pass
        except (OSError, EOFError, ValueError) as exc:
            return f"unreadable ({type(exc).__name__})"
        if path == full:
            return None
        if not isinstance(header, dict) or header.get("digest") != digest:
            return "its header names another state"
        base = header.get("base")
        if not isinstance(base, str):
            return "its header names no base"
        if self._dump_problem(base, memo):
            return f"its base {base[:12]} is not intact"
        return None

    def append(self, record: RunRecord) -> None:
        line = record_line(record)
        fd = os.open(self.runs, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            try:
                rest = memoryview(line.encode())
                while rest:  # a nearly full disk takes part of a write and refuses the remainder
                    rest = rest[os.write(fd, rest) :]
                os.fsync(fd)
            except OSError as exc:
                # Cut the part of the line that got in, so no later line lands behind a torn one.
                os.ftruncate(fd, size)
                raise EnvironmentFailure(
                    f"{self.runs}: cannot append a run record ({_why(exc)}); every earlier record is "
                    "intact: free space, then run the same command to resume"
                ) from None
        finally:
            os.close(fd)

    def _dump_files(self, digest: str) -> tuple[Path, Path]:
        return self.dumps / f"{digest}{layout.FULL_DUMP}", self.dumps / f"{digest}{layout.DELTA_DUMP}"

    def note_slots(self, facts: Sequence[BaseModel]) -> None:
        """Where remote executor slots ran (host, actor, Postgres version), one line per slot and
        invocation in `execution_slots.jsonl`, beside the execution environment: observed facts, never
        part of the protocol hash."""
        if not facts:
            return
        lines = "".join(f.model_dump_json() + "\n" for f in facts)
        with open(self.path / layout.EXECUTION_SLOTS, "a", encoding="utf-8") as fh:
            fh.write(lines)
            fh.flush()
            os.fsync(fh.fileno())

    def store_dump(self, state: State, base: State | None = None, copy_from: Path | None = None) -> str:
        """Keep a full-state dump, content-addressed so identical states are stored once: in full
        (`<digest>.jsonl.gz`, copied from `copy_from` when that file already holds it) or, given its
        pre-run `base`, as a delta (`<digest>.delta.jsonl.gz`). Written to a temporary name, then renamed,
        so the real name only ever holds a whole dump. Not synced, unlike the record: if power is lost
        before the page cache reaches the disk, the resume finds the dump missing and runs it again."""
        digest = state.digest(base)
        full, delta = self._dump_files(digest)
        if full.exists() or delta.exists():
            return digest
        try:
            if copy_from is not None and copy_from.exists():
                tmp = self.dumps / f"{digest}.{os.getpid()}.copy.tmp"
                try:
                    shutil.copyfile(copy_from, tmp)
                    tmp.replace(full)
                except OSError:
                    tmp.unlink(missing_ok=True)
                    raise
            elif base is None:
                state.save(full)
            else:
                state.save_delta(delta, base)
        except OSError as exc:
            raise EnvironmentFailure(
                f"{self.dumps}: cannot store a state dump ({_why(exc)}); every recorded run is intact: "
                "free space or fix permissions, then run the same command to resume"
            ) from None
        return digest

    def load_dump(self, digest: str, bases: dict[str, State] | None = None) -> State:
        """The full state of a stored dump, rebuilt from its delta when needed, checked against the
        digest that names it: a dump whose bytes give another state (edited, even re-compressed
        cleanly) is refused by name (IntegrityFailure), never read as if it were the named one.

        `bases` keeps the full dumps read on the way (the task templates every delta is against), so a
        caller reading many runs' states reads each template once."""
        full, delta = self._dump_files(digest)
        if full.exists():
            if bases is not None and digest in bases:
                return bases[digest]
            state = self._checked(full, digest, lambda: load(full))
            if bases is not None:
                bases[digest] = state
            return state
        if not delta.exists():
            raise IntegrityFailure(
                f"{full}: missing (no delta {delta.name} either); restore it from a backup"
            )
        try:
            with gzip.open(delta, "rt", encoding="utf-8") as fh:
                base_digest = json.loads(fh.readline())["base"]
            if not isinstance(base_digest, str):
                raise TypeError("its base is not a digest")
        except (OSError, EOFError, ValueError, KeyError, TypeError) as exc:
            raise IntegrityFailure(
                f"{delta}: its header cannot be read ({type(exc).__name__}); restore the dump from a backup"
            ) from None
        try:
            base = self.load_dump(base_digest, bases)
        except IntegrityFailure as exc:
            raise IntegrityFailure(f"{delta}: its base {base_digest[:12]} cannot be read ({exc})") from None
        return self._checked(delta, digest, lambda: load_delta(delta, base))

    @staticmethod
    def _checked(path: Path, digest: str, read: Callable[[], State]) -> State:
        try:
            state = read()
        except DumpFormatError as exc:
            raise IntegrityFailure(f"{exc}; restore the dump from a backup") from None
        if state.digest() != digest:
            raise IntegrityFailure(
                f"{path}: its content does not give the digest that names it ({digest[:12]}): the dump was "
                "altered; restore it from a backup"
            )
        return state

    def transcript_path(self, rid: str, attempt: int) -> Path:
        return self.transcripts / layout.transcript_name(rid, attempt)

    def receipt_path(self, rid: str, attempt: int) -> Path:
        return self.receipts / layout.receipt_log_name(rid, attempt)

    def keep_receipts(self, rid: str, attempt: int, data: bytes) -> None:
        """The receipt log of a fault attempt as its slot fsynced it, when the slot ran on another machine
        (one on this machine wrote this very file): written whole and synced before its record, so a
        record never names receipts this directory lacks."""
        path = self.receipt_path(rid, attempt)
        if path.exists():
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_durably(path, data)
        except OSError as exc:
            raise EnvironmentFailure(
                f"{path.parent}: cannot write a receipt log ({_why(exc)}); every recorded run is intact: "
                "free space, then run the same command to resume"
            ) from None

    def write_transcript(self, rid: str, attempt: int, transcript: dict[str, Any]) -> str:
        """Write (atomically) and return the SHA-256 of the transcript; written before its record, so a
        record never points at a transcript a crash lost (after a power loss the resume checks it)."""
        data = json.dumps(transcript, indent=1, default=str).encode()
        path = self.transcript_path(rid, attempt)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_bytes(data)
            tmp.replace(path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise EnvironmentFailure(
                f"{self.transcripts}: cannot write a transcript ({_why(exc)}); every recorded run is "
                "intact: free space, then run the same command to resume"
            ) from None
        return hashlib.sha256(data).hexdigest()


def record_line(record: RunRecord) -> str:
    """One runs.jsonl line, exactly as the writer appends it (the shape the line reader's fast path reads,
    harness.results.lines). The model's text may hold lone surrogates, which JSON text cannot carry as
    UTF-8, so they are made printable first."""
    return json.dumps(_printable(record.model_dump(mode="json")), ensure_ascii=False) + "\n"


def _first_problem(exc: ValueError) -> str:
    return field_problem(exc) if isinstance(exc, ValidationError) else type(exc).__name__


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _probe(folder: Path) -> None:
    """A write that must succeed before a paid run is spent: a read-only or full disk fails here."""
    probe = folder / f".probe-{os.getpid()}.tmp"
    try:
        with open(probe, "wb") as fh:
            fh.write(b"\0" * 65536)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise EnvironmentFailure(
            f"{folder}: cannot write here ({_why(exc)}); free space or fix permissions before auditing"
        ) from None
    finally:
        with contextlib.suppress(OSError):
            probe.unlink(missing_ok=True)


def _printable(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable(v) for v in value]
    return value
