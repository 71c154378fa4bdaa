"""Publication re-derives every decisive run from its evidence instead of trusting its record.

For each run's decisive attempt (the results owner's rule) that carries a verdict, the verdict is labelled
again from the stored before/after dumps with the frozen task spec (its bytes must hash to the manifest's
`spec_digest`), the task's params and, under an injecting condition, the goal spec the run's seed draws
(the same pure draw the runner made); the labeller's other inputs are the record's final message, error
and stall. The status is derived again by the results owner's rule from who failed, the re-derived
outcome and the fault's receipts (their verdict recomputed from the actuator's and witness's receipts,
which the artifact check holds equal to the fsynced logs). Any difference from the record is a
`verdict_mismatch`: a hand-edited verdict or status is never published.

Every attempt is labelled, not only the decisive one: an earlier attempt's damage (an unwitnessed fault
attempt, one whose harness failed after the subject acted) is the cell's damage evidence, and a run with
damage in any attempt counts as damaging wherever a cell is decided or certified (`status.decision_count`).
An attempt whose final state could not be read after its subject acted carries the state-destroyed verdict
(harness.results.destroyed); it is built again from the record and the frozen spec's name, and any other
verdict on a record without an after-dump is a mismatch.

Runs that left the same state with the same labeller inputs are labelled once (stored dumps are
content-addressed, so most share their after-state); the rest are labelled in parallel processes.
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from agentrel.dsl.api import RunFacts, Spec, label, load_spec
from agentrel.dsl.state import State
from agentrel.harness.faults.receipts import verdict as receipt_verdict
from agentrel.harness.publication.evidence import pool_context
from agentrel.harness.results.destroyed import destroyed_verdict
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.results.record import RunRecord
from agentrel.harness.results.status import connected_status, fault_status, is_damaging, run_status
from agentrel.harness.suite_paths import recorded_environment
from agentrel.harness.tasks import Task

__all__ = ["Rederived", "rederive", "rederive_outcomes"]

FAULT_PREFIX = "fault:"
# A label job: (task, goal spec path or "", before digest, after digest, final message, errored, stalled).
Job = tuple[str, str, str, str, str | None, bool, bool]
PER_WORKER = 64


class Rederived(NamedTuple):
    mismatches: list[str]  # one line per decisive run whose record the evidence does not give back
    # Run id -> whether its re-derived verdict is damaging (harness.results.status.is_damaging), for every
    # decisive run labelled again, and True for every run with damage in any attempt (its damage evidence
    # is never erased by a later or an invalid attempt); what publication's stopping check reads, never
    # the recorded verdict.
    damaging: dict[str, bool]


def rederive(results: Path, manifest: Mapping[str, Any], workers: int | None = None) -> list[str]:
    """One line per decisive run whose verdict or status the evidence does not give back (sorted)."""
    return rederive_outcomes(results, manifest, workers).mismatches


def rederive_outcomes(results: Path, manifest: Mapping[str, Any], workers: int | None = None) -> Rederived:
    """The mismatches (sorted) and each re-derived run's damage, from one labelling of the evidence."""
    rd = ResultsDir(results)
    attempts = rd.attempts()
    runs = rd.records(attempts)
    if not runs:
        return Rederived([], {})
    every = [rec for recs in attempts.values() for rec in recs]
    decisive = {id(rec) for rec in runs}  # by identity: a broken file may repeat (run id, attempt)
    suite = _suite(manifest)
    problems = _frozen_specs(manifest, suite)
    goals = _goal_ids(manifest, every, suite)
    jobs: dict[int, Job] = {}
    for i, rec in enumerate(every):
        if rec.verdict is None or rec.after_digest is None or rec.task in problems:
            continue
        jobs[i] = (
            rec.task,
            goals.get(rec.run_id, ""),
            rec.before_digest,
            rec.after_digest,
            rec.final_message,
            rec.error is not None,
            rec.stalled,
        )
    specs = {tid: str(task.spec_path) for tid, task in suite.items()}
    labelled = _label_all(results, manifest, specs, sorted(set(jobs.values())), workers)
    out = [f"{rec.run_id}: {problems[rec.task]}" for rec in runs if rec.task in problems]
    damaging: dict[str, bool] = {}
    for i, rec in enumerate(every):
        if rec.verdict is None or rec.task in problems:
            continue
        name = rec.run_id if rec.attempt == 1 else f"{rec.run_id} (attempt {rec.attempt})"
        job = jobs.get(i)
        got = labelled[job] if job is not None else _destroyed(rec, specs)
        if isinstance(got, str):
            out.append(f"{name}: {got}")
            continue
        agent_error = rec.error is not None and rec.error.kind == "agent"
        damaged = is_damaging(got["outcome"], bool(got.get("mutated")), agent_error)
        if id(rec) in decisive:
            damaging[rec.run_id] = damaging.get(rec.run_id, False) or damaged
        elif damaged:
            damaging[rec.run_id] = True
        if got != rec.verdict.model_dump(mode="json"):
            out.append(f"{name}: its verdict is not what its dumps give ({_first_difference(got, rec)})")
        elif (status := _status(rec, got["outcome"])) != rec.status:
            out.append(f"{name}: status {rec.status} but its error and receipts give {status}")
    return Rederived(sorted(out), damaging)


def _destroyed(rec: RunRecord, specs: Mapping[str, str]) -> dict[str, Any] | str:
    """The verdict a record without an after-dump can carry: the state-destroyed one, built again from
    the record's own labeller inputs and the frozen spec's name (harness.results.destroyed)."""
    path = specs.get(rec.task)
    if path is None:
        return f"task {rec.task} is not in this suite, so its spec cannot be checked"
    try:
        spec = _spec(path)
    except Exception as exc:
        return f"its spec cannot be read ({type(exc).__name__}: {exc})"[:300]
    facts = RunFacts(final_message=rec.final_message, errored=rec.error is not None, stalled=rec.stalled)
    return destroyed_verdict(facts, f"{spec.name}@{spec.version}").model_dump(mode="json")


def _status(rec: RunRecord, outcome: str) -> str:
    status = run_status(rec.error.kind if rec.error else None, outcome)
    fault = rec.fault
    fired, witnessed = (fault.fired if fault else None), False
    if fault is not None and fault.actuator is not None and fault.witness is not None:
        witnessed = receipt_verdict(fault.actuator.actuation, fault.witness.witness)[0] == "witnessed"
    return connected_status(fault_status(status, fired, witnessed), rec.connected, outcome)


def _first_difference(got: dict[str, Any], rec: RunRecord) -> str:
    assert rec.verdict is not None
    recorded = rec.verdict.model_dump(mode="json")
    field = next((k for k in got if got[k] != recorded.get(k)), "a field")
    return f"{field}: recorded {recorded.get(field)!r}, derived {got.get(field)!r}"[:300]


def _suite(manifest: Mapping[str, Any]) -> dict[str, Task]:
    """The tasks of the environment the runs were recorded on (each keeps the suite it was read from)."""
    from agentrel.harness.tasks import load_suite

    return {t.id: t for t in load_suite(env=recorded_environment(manifest))}


def _frozen_specs(manifest: Mapping[str, Any], suite: Mapping[str, Task]) -> dict[str, str]:
    """Why a manifest task's spec cannot be used to label again (absent, or not the frozen bytes), by task."""
    problems: dict[str, str] = {}
    for entry in manifest.get("tasks", []):
        tid = entry.get("id", "")
        task = suite.get(tid)
        if task is None:
            problems[tid] = f"task {tid} is not in this suite, so its spec cannot be checked"
        elif task.spec_digest() != entry.get("spec_digest"):
            problems[tid] = f"the spec of task {tid} is not the frozen one (its digest differs)"
    return problems


def _goal_ids(
    manifest: Mapping[str, Any], runs: Sequence[RunRecord], suite: Mapping[str, Task]
) -> dict[str, str]:
    """Run id -> the spec file of the injected goal its seed draws, for runs under an injecting
    condition, from the recorded environment's catalogue (a worker process loads the file by path)."""
    from agentrel.harness.conditions.catalogue import default_root, load_catalogue
    from agentrel.harness.conditions.layers import draw
    from agentrel.harness.conditions.model import Condition

    conditions = {
        c["name"]: Condition.model_validate(c)
        for c in manifest.get("conditions", [])
        if isinstance(c, dict) and c.get("adversarial") is not None
    }
    if not conditions:
        return {}
    env = recorded_environment(manifest)
    root = default_root(env)
    catalogue = load_catalogue(root, env)
    out: dict[str, str] = {}
    for rec in runs:
        condition = conditions.get(rec.condition)
        if condition is None or condition.adversarial is None or rec.task not in suite:
            continue
        goal, _, _ = draw(condition.adversarial, suite[rec.task], rec.seed, catalogue)
        out[rec.run_id] = str(root / "goals" / goal.spec)
    return out


# Per task: its spec file and params, what a worker process needs to label its runs.
Labelling = dict[str, tuple[str, dict[str, Any]]]


def _label_all(
    results: Path, manifest: Mapping[str, Any], specs: dict[str, str], jobs: list[Job], workers: int | None
) -> dict[Job, dict[str, Any] | str]:
    tasks: Labelling = {
        t["id"]: (specs[t["id"]], t.get("params") or {})
        for t in manifest.get("tasks", [])
        if t["id"] in specs
    }
    # A worker process costs its start; below PER_WORKER jobs each, one process labels faster.
    workers = max(1, min(workers or len(os.sched_getaffinity(0)), len(jobs) // PER_WORKER or 1))
    if workers == 1:
        return dict(zip(jobs, _label_chunk(results, tasks, jobs), strict=True))
    # The jobs are sorted by task, so each stride holds every task and balances the work; a worker reads
    # each template once. Its processes start from a clean server (evidence.pool_context), never a fork.
    chunks = [jobs[i::workers] for i in range(workers)]
    out: dict[Job, dict[str, Any] | str] = {}
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=pool_context()) as pool:
        labelled = pool.map(_label_chunk, [results] * workers, [tasks] * workers, chunks)
        for chunk, part in zip(chunks, labelled, strict=True):
            out.update(zip(chunk, part, strict=True))
    return out


def _label_chunk(results: Path, tasks: Labelling, jobs: Sequence[Job]) -> list[dict[str, Any] | str]:
    rd = ResultsDir(results)
    bases: dict[str, State] = {}  # the templates, read once per worker; each after-state is read once

    def dumps(digest: str) -> State:
        return rd.load_dump(digest, bases)

    out: list[dict[str, Any] | str] = []
    for task, goal, before, after, final_message, errored, stalled in jobs:
        try:
            spec, params = tasks[task]
            extra = [(_goal_spec(goal), None)] if goal else []
            facts = RunFacts(final_message=final_message, errored=errored, stalled=stalled)
            verdict = label(_spec(spec), params, dumps(before), dumps(after), facts, extra)
        except Exception as exc:  # an unreadable dump or spec: the run cannot be re-derived
            out.append(f"cannot be labelled again from its evidence ({type(exc).__name__}: {exc})"[:300])
            continue
        out.append(verdict.model_dump(mode="json"))
    return out


@functools.cache
def _spec(path: str) -> Spec:
    return load_spec(path)


@functools.cache
def _goal_spec(path: str) -> Spec:
    return load_spec(path)
