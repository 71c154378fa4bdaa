"""Run records: one JSON line per finished run in `runs.jsonl`, appended, flushed and fsynced.

Dumps are kept content-addressed in `dumps/`: each task's pre-run template dump in full
(`<digest>.jsonl.gz`), each post-run dump as a delta against it (`<digest>.delta.jsonl.gz`, rebuilt and
checked by `ResultsDir.load_dump`); runs that leave the same state share one file. Transcripts are in
`transcripts/<run id>.json`.
A line is written only when its run is finished and labelled, in one `write` of a complete line, so a
crash can at worst leave a torn last line; `ResultsDir.open` truncates such a tail (that run simply runs
again) and never touches complete lines. Records whose error is a harness error are superseded by a later
record of the same run id (resume retries them).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from dsl.api import Verdict
from dsl.state import State, load, load_delta


class RunError(BaseModel):
    kind: Literal["harness", "agent"]
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
    verdict: Verdict | None
    error: RunError | None = None
    script: str | None = Field(default=None, description="the script a scripted or reference agent followed")
    final_message: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost_usd: float | None = None
    timings: Timings = Field(default_factory=Timings)
    before_digest: str
    after_digest: str | None = None
    started_at: str


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
        """Every record, the last one per run id winning."""
        if not self.runs.exists():
            return []
        latest: dict[str, RunRecord] = {}
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
                latest[rec.run_id] = rec
        return list(latest.values())

    def finished(self) -> set[str]:
        return {r.run_id for r in self.records() if not (r.error and r.error.kind == "harness")}

    def append(self, record: RunRecord) -> None:
        line = record.model_dump_json() + "\n"
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

    def write_transcript(self, rid: str, transcript: dict[str, Any]) -> None:
        tmp = self.transcripts / f"{rid}.json.tmp"
        tmp.write_text(json.dumps(transcript, indent=1, default=str))
        tmp.replace(self.transcripts / f"{rid}.json")
