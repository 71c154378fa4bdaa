"""One run's evidence, read from the results directory and the suite (the I/O edge of a run page).

The suite is the audit's own: the environment its manifest names (`environment.name`), whatever
environment this process would select, so `agentrel view` needs no `--env`; AGENTREL_SUITE_DIR still
overrides, as everywhere.

Read-only throughout: dumps are read with `dsl.state.load` / `load_delta` (checked by digest), never
through `ResultsDir.open`, which takes the writer's lock and repairs the file. Dumps are cached by
digest: every run of a task shares one pre-run dump, and rebuilding a delta against a cached base costs
only its changed tables, which is what keeps a run page under its time budget.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrel.dsl.api import DslError, Spec, load_spec
from agentrel.dsl.state import State
from agentrel.harness.errors import IntegrityFailure, UserError
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.results.record import RunRecord
from agentrel.harness.tasks import Task, load_suite
from agentrel.harness.view.records import BusinessRecord, group_by_record
from agentrel.harness.view.relabel import Relabel, disagreements, relabel, with_recorded
from agentrel.sandbox.environments.contract import Environment


@dataclass
class RunEvidence:
    """Everything a run page shows, with a note for each piece that could not be had."""

    record: RunRecord | None
    transcript: dict[str, Any] | None
    task: Task | None
    relabel: Relabel | None
    notes: list[str] = field(default_factory=list)  # what is missing or doubtful, one sentence each
    disagreements: list[str] = field(default_factory=list)
    # The diff per business record, when the audit's environment declares its records (records.py).
    records: list[BusinessRecord] | None = None


class _Lru(OrderedDict[str, Any]):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def put(self, key: str, value: Any) -> Any:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)
        return value


class EvidenceStore:
    """Loads and caches the dumps, tasks and specs that run pages need."""

    def __init__(self, path: Path) -> None:
        self.results = ResultsDir(path)  # only its path helpers: the constructor touches no file
        self._lock = threading.Lock()
        self._states = _Lru(16)
        self._bases: dict[str, State] = {}  # the full dumps deltas are against (one per task template)
        self._specs = _Lru(64)
        self._runs = _Lru(64)
        self._tasks: dict[str, Task] | None = None
        self._root: Path | None = None  # the audit's suite folder, decided with the tasks
        self._env: Environment | None = None  # the audit's environment (None: the built-in's or unknown)

    def prewarm(self, manifest: dict[str, Any] | None, dumps: int = 4) -> None:
        """Load the suite, the specs and the first few tasks' pre-run dumps before anyone asks: the
        first run page of a task otherwise pays for them (about a second)."""
        notes: list[str] = []
        tasks = [t.get("id") for t in (manifest or {}).get("tasks") or () if isinstance(t, dict)]
        for i, task_id in enumerate(tasks):
            with self._lock:
                task = self._task(str(task_id), notes, manifest)
                if task is None:
                    continue
                self._spec(task, manifest, notes)
                digest = _manifest_task(manifest, task.id).get("template_digest")
                if i < dumps and isinstance(digest, str):
                    self._state(digest, "pre-run", notes)

    def run(self, line: bytes, manifest: dict[str, Any] | None, cache_key: str) -> RunEvidence:
        with self._lock:
            held = self._runs.get(cache_key)
            if held is None:
                held = self._runs.put(cache_key, self._build(line, manifest))
            return held  # type: ignore[no-any-return]

    def _build(self, line: bytes, manifest: dict[str, Any] | None) -> RunEvidence:
        try:
            rec = RunRecord.model_validate_json(line)
        except ValueError as exc:
            return RunEvidence(
                None, None, None, None, [f"the record is not a valid run record: {_first(exc)}"]
            )
        ev = RunEvidence(rec, None, None, None)
        ev.transcript = self._transcript(rec, ev.notes)
        ev.task = self._task(rec.task, ev.notes, manifest)
        if ev.task is None:
            return ev
        spec = self._spec(ev.task, manifest, ev.notes)
        before = self._state(rec.before_digest, "pre-run", ev.notes)
        after = self._state(rec.after_digest, "post-run", ev.notes) if rec.after_digest else None
        if rec.after_digest is None:
            ev.notes.append("no post-run dump was kept for this attempt: there is no state diff to show")
        if spec is None or before is None or after is None:
            return ev
        try:
            ev.relabel = relabel(spec, _params(manifest, ev.task), before, after)
        except DslError as exc:
            ev.notes.append(f"the labeller could not be re-run over the dumps: {str(exc).splitlines()[0]}")
            return ev
        if rec.verdict is not None:
            ev.relabel = with_recorded(ev.relabel, rec.verdict.events, spec.name)
            ev.disagreements = disagreements(rec.verdict.events, ev.relabel)
        links = self._env.record_links if self._env is not None else ()
        if links:
            ev.records = group_by_record(ev.relabel.changes, links, before, after)
        return ev

    def _transcript(self, rec: RunRecord, notes: list[str]) -> dict[str, Any] | None:
        path = self.results.transcript_path(rec.run_id, rec.attempt)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            notes.append(f"transcript {path.name} is missing")
            return None
        except OSError as exc:
            notes.append(f"transcript {path.name} cannot be read ({exc.strerror})")
            return None
        if rec.transcript_digest is not None and hashlib.sha256(data).hexdigest() != rec.transcript_digest:
            notes.append(f"transcript {path.name} does not match the digest in its record (altered?)")
        try:
            raw = json.loads(data)
        except ValueError:
            notes.append(f"transcript {path.name} is not valid JSON")
            return None
        return raw if isinstance(raw, dict) else None

    def _task(self, task_id: str, notes: list[str], manifest: dict[str, Any] | None) -> Task | None:
        if self._tasks is None:
            try:
                self._root, env = audit_suite(manifest)
                self._env = env
                self._tasks = {t.id: t for t in load_suite(self._root / "tasks", env=env)}
            except UserError as exc:
                notes.append(f"the task suite cannot be read: {exc}")
                return None
        task = self._tasks.get(task_id)
        if task is None:
            notes.append(
                f"task {task_id!r} is not in this suite (set AGENTREL_SUITE_DIR): "
                "no prompt and no diff labels"
            )
        return task

    def _spec(self, task: Task, manifest: dict[str, Any] | None, notes: list[str]) -> Spec | None:
        path = (self._root or audit_suite(manifest)[0]) / task.spec
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            notes.append(f"spec {task.spec} cannot be read ({exc.strerror})")
            return None
        recorded = _manifest_task(manifest, task.id).get("spec_digest")
        if recorded is not None and recorded != digest:
            notes.append(
                f"spec {task.spec} has changed since this audit: the row labels below come from the "
                "current spec, the verdict from the audit's"
            )
        spec = self._specs.get(digest)
        if spec is None:
            try:
                spec = self._specs.put(digest, load_spec(path))
            except DslError as exc:
                notes.append(f"spec {task.spec}: {str(exc).splitlines()[0]}")
                return None
        return spec  # type: ignore[no-any-return]

    def _state(self, digest: str, what: str, notes: list[str]) -> State | None:
        dumps = self.results.dumps
        if not any((dumps / f"{digest}{ext}").exists() for ext in (".jsonl.gz", ".delta.jsonl.gz")):
            notes.append(f"the {what} dump {digest[:12]} is missing from dumps/")
            return None
        try:
            return self._load_state(digest)
        except FileNotFoundError:
            notes.append(f"the {what} dump {digest[:12]} is missing from dumps/")
        except IntegrityFailure as exc:  # missing, or not the state its digest names
            notes.append(f"the {what} dump {digest[:12]} is refused: {str(exc).splitlines()[0]}")
        except (OSError, EOFError, ValueError, KeyError) as exc:
            notes.append(f"the {what} dump {digest[:12]} cannot be read: {str(exc).splitlines()[0]}")
        return None

    def _load_state(self, digest: str) -> State:
        held = self._states.get(digest)
        if held is not None:
            self._states.move_to_end(digest)
            return held  # type: ignore[no-any-return]
        # Through the results owner's one reader: a dump whose bytes are not the state its digest names
        # is refused (IntegrityFailure, shown as a note), never drawn as if it were.
        state = self.results.load_dump(digest, self._bases)
        return self._states.put(digest, state)  # type: ignore[no-any-return]


def audit_suite(manifest: dict[str, Any] | None) -> tuple[Path, Environment | None]:
    """The folder of the audit's tasks and specs, and the environment they are checked against (None:
    the built-in): AGENTREL_SUITE_DIR when set, else the suite of the environment the manifest names
    (a manifest from before environments names none: the built-in's). An environment that is not
    installed here is one line, as a UserError."""
    from agentrel.harness.suite_paths import ENV, suite_root
    from agentrel.sandbox.environments import registry
    from agentrel.sandbox.servers.base import SandboxError

    env = (manifest or {}).get("environment")
    named = env.get("name") if isinstance(env, dict) else None
    if os.environ.get(ENV) or not isinstance(named, str):
        return suite_root(), None
    try:
        env = registry.load(named)
    except SandboxError as exc:
        raise UserError(f"the audit ran on environment {named!r}, which does not load here: {exc}") from None
    return env.suite_root(), env


def _manifest_task(manifest: dict[str, Any] | None, task_id: str) -> dict[str, Any]:
    for t in (manifest or {}).get("tasks") or ():
        if isinstance(t, dict) and t.get("id") == task_id:
            return t
    return {}


def _params(manifest: dict[str, Any] | None, task: Task) -> dict[str, Any]:
    """The params the audit labelled with (its manifest's), else the task file's."""
    params = _manifest_task(manifest, task.id).get("params")
    return params if isinstance(params, dict) else task.params


def _first(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        err = errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        return f"{where}: {err['msg']}" if where else str(err["msg"])
    return str(exc)
