"""Driving a batch: every pending (plan, attempt) on an executor's slots, each finished attempt recorded
by this process, an invalid one queued again while under the attempt cap.

Arrows point one way: batch -> executors -> runner (one attempt, no side effects) -> session.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agentrel.dsl.state import State
from agentrel.harness.executors import Executor
from agentrel.harness.matrix import RunPlan
from agentrel.harness.progress import ProgressManager
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.results.record import RunRecord
from agentrel.harness.runner import record_attempt
from agentrel.harness.stopping import CellGate


async def run_matrix(
    executor: Executor,
    results: ResultsDir,
    bases: dict[str, State],
    plans: list[tuple[RunPlan, int]],
    max_attempts: int,
    progress: ProgressManager,
    gate: CellGate | None = None,
) -> list[RunRecord]:
    """Attempt every (plan, first attempt number) on the executor's slots and record each attempt here;
    an invalid attempt is queued again while under the cap. `bases`: each task's template state.
    `gate` (--until, harness.stopping): a plan whose cell is already decided is skipped, not run."""
    queue: asyncio.Queue[tuple[RunPlan, int]] = asyncio.Queue()
    for item in plans:
        queue.put_nowait(item)
    done: list[RunRecord] = []

    async def worker() -> None:
        while True:
            try:
                plan, attempt = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            # --until: decided per cell as records arrive, before a run is started.
            if gate is not None and not gate.wants(plan):
                progress.skipped()
                continue
            outcome = await executor.attempt(plan, attempt)
            record = await asyncio.to_thread(record_attempt, results, bases[plan.task], outcome)
            done.append(record)
            if gate is not None:
                gate.observe(record)
            retry = not record.terminal and attempt < max_attempts
            if retry:
                queue.put_nowait((plan, attempt + 1))
            progress.attempted(
                damaging=bool(record.verdict and record.verdict.outcome == "FAIL_DAMAGE" and record.valid),
                invalid=not record.terminal,
                retry=retry,
            )

    await executor.start()
    workers = [asyncio.create_task(worker()) for _ in range(max(1, min(executor.slots, len(plans))))]
    try:
        await _first_failure(workers)
    finally:
        # On Ctrl-C or a fatal error every worker is cancelled once; let each finish its cleanup (drop its
        # run database) rather than cancelling it again mid-cleanup.
        for w in workers:
            w.cancel()
        await asyncio.wait(workers)
        await executor.close()
    return done


async def _first_failure(workers: list[asyncio.Task[Any]]) -> None:
    """Wait for every worker; the first one to raise (refused credentials, a full disk) stops them all."""
    pending: set[asyncio.Task[Any]] = set(workers)
    while pending:
        finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
        for task in finished:
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
