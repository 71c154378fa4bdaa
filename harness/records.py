"""Run records: one JSON line per finished run in `runs.jsonl`, appended, flushed and fsynced.

Dumps are kept content-addressed in `dumps/`: each task's pre-run template dump in full
(`<digest>.jsonl.gz`), each post-run dump as a delta against it (`<digest>.delta.jsonl.gz`, rebuilt and
checked by `ResultsDir.load_dump`); runs that leave the same state share one file. Transcripts are in
`transcripts/<run id>.json`.
A line is one attempt of a run, written only when the attempt is finished (and labelled, where its state
could be read), in one `write` of a complete line, after its transcript; so a crash can at worst leave a
torn last line, which `ResultsDir.open` truncates (that attempt simply runs again), and never touches
complete lines. An invalid attempt (the provider or the harness failed; see `harness.status`) is kept and
the run is attempted again, up to the manifest's attempt cap; every attempt stays in the file.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dsl.api import Verdict
from dsl.state import State, load, load_delta
from harness.pipeline import Event

Status = Literal["valid", "provider_invalid", "harness_invalid"]


class RunError(BaseModel):
    kind: Literal["harness", "provider", "agent"]
    message: str


class TokenUsage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0


class Timings(BaseModel):
    clone_s: float = 0.0
    agent_s: float = 0.0
    dump_s: float = 0.0
    label_s: float = 0.0
    total_s: float = 0.0


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    model: str
    agent_kind: Literal["model", "reference", "scripted"]
    task: str
    condition: str
    run_index: int
    seed: str
    protocol_hash: str
    attempt: int = 1
    status: Status = "valid"
    verdict: Verdict | None
    error: RunError | None = None
    events: list[Event] = Field(default_factory=list)
    script: str | None = Field(default=None, description="the script a scripted or reference agent followed")
    final_message: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost_usd: float | None = None
    timings: Timings = Field(default_factory=Timings)
    before_digest: str
    after_digest: str | None = None
    transcript_digest: str | None = None
    started_at: str

    @model_validator(mode="before")
    @classmethod
    def _status_of_older_records(cls, data: Any) -> Any:
        """Records written before statuses existed: a harness error or no verdict was an invalid run."""
        if isinstance(data, dict) and "status" not in data:
            error = data.get("error") or {}
            broken = data.get("verdict") is None or error.get("kind") == "harness"
            data = {**data, "status": "harness_invalid" if broken else "valid"}
        return data

    @property
    def valid(self) -> bool:
        return self.status == "valid"


def run_id(model: str, task: str, condition: str, run_index: int) -> str:
    return f"{model.replace('/', '_')}__{task}__{condition}__{run_index:04d}"


class ResultsDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.runs = path / "runs.jsonl"
        self.manifest = path / "manifest.json"
        self.dumps = path / "dumps"
        self.transcripts = path / "transcripts"

    def open(self) -> None:
        for d in (self.path, self.dumps, self.transcripts):
            d.mkdir(parents=True, exist_ok=True)
        self._repair_tail()

    def _repair_tail(self) -> None:
        if not self.runs.exists():
            return
        data = self.runs.read_bytes()
        cut = len(data)
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
        if cut != len(data):
            with open(self.runs, "r+b") as fh:
                fh.truncate(cut)
                os.fsync(fh.fileno())

    def records(self) -> list[RunRecord]:
        """The decisive attempt of every run: its valid attempt if it has one, else its latest."""
        latest: dict[str, RunRecord] = {}
        for rec in self._read():
            kept = latest.get(rec.run_id)
            if kept is None or rec.valid or not kept.valid:
                latest[rec.run_id] = rec
        return list(latest.values())

    def _read(self) -> list[RunRecord]:
        if not self.runs.exists():
            return []
        out: list[RunRecord] = []
        with open(self.runs, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.endswith("\n"):
                    break  # a torn tail: not a finished run
                try:
                    rec = RunRecord.model_validate_json(line)
                except ValueError as exc:
                    raise ValueError(
                        f"{self.runs}:{lineno}: not a run record ({exc.__class__.__name__})"
                    ) from None
                out.append(rec)
        return out

    def attempts(self) -> dict[str, list[RunRecord]]:
        """Every attempt of every run, in file order."""
        out: dict[str, list[RunRecord]] = {}
        for rec in self._read():
            out.setdefault(rec.run_id, []).append(rec)
        return out

    def finished(self, max_attempts: int) -> set[str]:
        """Runs that need no further attempt: one valid attempt, or the attempt cap reached."""
        return {
            rid
            for rid, recs in self.attempts().items()
            if any(r.valid for r in recs) or len(recs) >= max_attempts
        }

    def append(self, record: RunRecord) -> None:
        # The model's text may hold lone surrogates, which JSON text cannot carry as UTF-8.
        line = json.dumps(_printable(record.model_dump(mode="json")), ensure_ascii=False) + "\n"
        fd = os.open(self.runs, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def store_dump(self, state: State, base: State | None = None, copy_from: Path | None = None) -> str:
        """Keep a full-state dump, content-addressed so identical states are stored once: in full
        (`<digest>.jsonl.gz`, copied from `copy_from` when that file already holds it) or, given its
        pre-run `base`, as a delta (`<digest>.delta.jsonl.gz`)."""
        digest = state.digest(base)
        if not any(self.dumps.glob(f"{digest}.*")):
            if copy_from is not None and copy_from.exists():
                tmp = self.dumps / f"{digest}.{os.getpid()}.copy.tmp"
                shutil.copyfile(copy_from, tmp)
                tmp.replace(self.dumps / f"{digest}.jsonl.gz")
            elif base is None:
                state.save(self.dumps / f"{digest}.jsonl.gz")
            else:
                state.save_delta(self.dumps / f"{digest}.delta.jsonl.gz", base)
        return digest

    def load_dump(self, digest: str) -> State:
        """The full state of a stored dump, rebuilt from its delta when needed, checked by digest."""
        full = self.dumps / f"{digest}.jsonl.gz"
        if full.exists():
            return load(full)
        delta = self.dumps / f"{digest}.delta.jsonl.gz"
        with gzip.open(delta, "rt", encoding="utf-8") as fh:
            base_digest = json.loads(fh.readline())["base"]
        return load_delta(delta, self.load_dump(base_digest))

    def write_transcript(self, rid: str, attempt: int, transcript: dict[str, Any]) -> str:
        """Write (atomically) and return the SHA-256 of the transcript; written before its record, so a
        record never points at a transcript a crash lost."""
        data = json.dumps(transcript, indent=1, default=str).encode()
        name = f"{rid}.json" if attempt == 1 else f"{rid}.attempt{attempt}.json"
        tmp = self.transcripts / f"{name}.{os.getpid()}.tmp"
        tmp.write_bytes(data)
        tmp.replace(self.transcripts / name)
        return hashlib.sha256(data).hexdigest()


def _printable(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable(v) for v in value]
    return value
