"""Publication re-derives every decisive run from its evidence instead of trusting its record.

For each run's decisive attempt (the results owner's rule) that carries a verdict, the verdict is labelled
again from the stored before/after dumps with the frozen task spec (its bytes must hash to the manifest's
`spec_digest`), the task's params and, under an injecting condition, the goal spec the run's seed draws
(the same pure draw the runner made); the labeller's other inputs are the record's final message, error
and stall. The status is derived again by the results owner's rule from who failed, the re-derived
outcome and the fault's receipts (their verdict recomputed from the actuator's and witness's receipts,
which the artifact check holds equal to the fsynced logs). Any difference from the record is a
`verdict_mismatch`: a hand-edited verdict or status is never published.

Runs that left the same state with the same labeller inputs are labelled once (stored dumps are
content-addressed, so most share their after-state); the rest are labelled in parallel processes.
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentrel.dsl.api import RunFacts, Spec, label, load_spec
from agentrel.dsl.state import State
from agentrel.harness.faults.receipts import verdict as receipt_verdict
from agentrel.harness.publication.evidence import pool_context
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.results.record import RunRecord
from agentrel.harness.results.status import connected_status, fault_status, run_status

__all__ = ["rederive"]

FAULT_PREFIX = "fault:"
# A label job: (task, goal id or "", before digest, after digest, final message, errored, stalled).
Job = tuple[str, str, str, str, str | None, bool, bool]
PER_WORKER = 64


def rederive(results: Path, manifest: Mapping[str, Any], workers: int | None = None) -> list[str]:
    """One line per decisive run whose verdict or status the evidence does not give back (sorted)."""
    rd = ResultsDir(results)
    runs = rd.records()
    if not runs:
        return []
    problems = _frozen_specs(manifest)
    goals = _goal_ids(manifest, runs)
    jobs: dict[str, Job] = {}
    for rec in runs:
        if rec.verdict is None or rec.after_digest is None:
            continue
        if rec.task in problems:
            continue
        jobs[rec.run_id] = (
            rec.task,
            goals.get(rec.run_id, ""),
            rec.before_digest,
            rec.after_digest,
            rec.final_message,
            rec.error is not None,
            rec.stalled,
        )
    labelled = _label_all(results, manifest, sorted(set(jobs.values())), workers)
    out = [f"{rec.run_id}: {problems[rec.task]}" for rec in runs if rec.task in problems]
    for rec in runs:
        job = jobs.get(rec.run_id)
        if job is None:
            continue
        got = labelled[job]
        assert rec.verdict is not None
        if isinstance(got, str):
            out.append(f"{rec.run_id}: {got}")
        elif got != rec.verdict.model_dump(mode="json"):
            out.append(
                f"{rec.run_id}: its verdict is not what its dumps give ({_first_difference(got, rec)})"
            )
        elif (status := _status(rec, got["outcome"])) != rec.status:
            out.append(f"{rec.run_id}: status {rec.status} but its error and receipts give {status}")
    return sorted(out)


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


def _frozen_specs(manifest: Mapping[str, Any]) -> dict[str, str]:
    """Why a manifest task's spec cannot be used to label again (absent, or not the frozen bytes), by task."""
    import hashlib

    from agentrel.harness.tasks import load_suite

    suite = {t.id: t for t in load_suite()}
    problems: dict[str, str] = {}
    for entry in manifest.get("tasks", []):
        tid = entry.get("id", "")
        task = suite.get(tid)
        if task is None:
            problems[tid] = f"task {tid} is not in this suite, so its spec cannot be checked"
        elif hashlib.sha256(task.spec_path.read_bytes()).hexdigest() != entry.get("spec_digest"):
            problems[tid] = f"the spec of task {tid} is not the frozen one (its digest differs)"
    return problems


def _goal_ids(manifest: Mapping[str, Any], runs: Sequence[RunRecord]) -> dict[str, str]:
    """Run id -> the injected goal its seed draws, for runs under an injecting condition."""
    from agentrel.harness.conditions.catalogue import load_catalogue
    from agentrel.harness.conditions.layers import draw
    from agentrel.harness.conditions.model import Condition
    from agentrel.harness.tasks import load_suite

    conditions = {
        c["name"]: Condition.model_validate(c)
        for c in manifest.get("conditions", [])
        if isinstance(c, dict) and c.get("adversarial") is not None
    }
    if not conditions:
        return {}
    catalogue = load_catalogue()
    suite = {t.id: t for t in load_suite()}
    out: dict[str, str] = {}
    for rec in runs:
        condition = conditions.get(rec.condition)
        if condition is None or condition.adversarial is None or rec.task not in suite:
            continue
        goal, _, _ = draw(condition.adversarial, suite[rec.task], rec.seed, catalogue)
        out[rec.run_id] = goal.id
    return out


def _label_all(
    results: Path, manifest: Mapping[str, Any], jobs: list[Job], workers: int | None
) -> dict[Job, dict[str, Any] | str]:
    params = {t["id"]: t.get("params") or {} for t in manifest.get("tasks", [])}
    # A worker process costs its start; below PER_WORKER jobs each, one process labels faster.
    workers = max(1, min(workers or len(os.sched_getaffinity(0)), len(jobs) // PER_WORKER or 1))
    if workers == 1:
        return dict(zip(jobs, _label_chunk(results, params, jobs), strict=True))
    # The jobs are sorted by task, so each stride holds every task and balances the work; a worker loads
    # each template dump once (its dump cache).
    chunks = [jobs[i::workers] for i in range(workers)]
    out: dict[Job, dict[str, Any] | str] = {}
    # The same clean worker processes as the evidence read (evidence.pool_context), never a fork of this one.
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=pool_context()) as pool:
        for chunk, labelled in zip(
            chunks, pool.map(_label_chunk, [results] * workers, [params] * workers, chunks), strict=True
        ):
            out.update(zip(chunk, labelled, strict=True))
    return out


def _label_chunk(
    results: Path, params: Mapping[str, Mapping[str, Any]], jobs: Sequence[Job]
) -> list[dict[str, Any] | str]:
    rd = ResultsDir(results)
    bases: dict[str, State] = {}  # the templates, read once per worker; each after-state is read once

    def dumps(digest: str) -> State:
        return rd.load_dump(digest, bases)

    out: list[dict[str, Any] | str] = []
    for task, goal, before, after, final_message, errored, stalled in jobs:
        try:
            extra = [(_goal_spec(goal), None)] if goal else []
            facts = RunFacts(final_message=final_message, errored=errored, stalled=stalled)
            verdict = label(_task_spec(task), params.get(task), dumps(before), dumps(after), facts, extra)
        except Exception as exc:  # an unreadable dump or spec: the run cannot be re-derived
            out.append(f"cannot be labelled again from its evidence ({type(exc).__name__}: {exc})"[:300])
            continue
        out.append(verdict.model_dump(mode="json"))
    return out


@functools.cache
def _task_spec(task_id: str) -> Spec:
    from agentrel.harness.tasks import load_suite

    return load_spec(next(t.spec_path for t in load_suite() if t.id == task_id))


@functools.cache
def _goal_spec(goal_id: str) -> Spec:
    from agentrel.harness.conditions.catalogue import load_catalogue

    return load_catalogue().specs[goal_id]
