"""Driving a batch: every pending (plan, attempt) on an executor's slots, each finished attempt recorded
by this process, an invalid one queued again while under the attempt cap.

Arrows point one way: batch -> executors -> runner (one attempt, no side effects) -> session.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agentrel.dsl.state import State
from agentrel.harness.executors import Executor
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.results.record import RunRecord
from agentrel.harness.run.matrix import RunPlan
from agentrel.harness.run.progress import ProgressManager
from agentrel.harness.run.runner import record_attempt
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

    async def attempt_once(plan: RunPlan, attempt: int) -> bool:
        """One attempt, recorded (and counted by the gate); whether it is to be retried."""
        outcome = await executor.attempt(plan, attempt)
        record = await asyncio.to_thread(record_attempt, results, bases[plan.task], outcome)
        done.append(record)
        if gate is not None:
            gate.observe(record)
        retry = not record.terminal and attempt < max_attempts
        progress.attempted(
            damaging=record.shows_damage,  # whatever its status
            invalid=not record.terminal,
            retry=retry,
        )
        return retry

    async def gated(plan: RunPlan, attempt: int) -> None:
        """--until: the cell's runs one at a time, each retried at once, so the cell is decided in
        run-index order (what publication replays) and no run starts after its cell is decided."""
        assert gate is not None
        async with gate.lock((plan.model, plan.task, plan.cell_condition)):
            while True:
                if not gate.wants(plan):  # decided before a run started, or the budget is spent
                    progress.skipped()
                    return
                if not await attempt_once(plan, attempt):
                    return
                attempt += 1

    async def worker() -> None:
        while True:
            try:
                plan, attempt = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            if gate is not None:
                await gated(plan, attempt)
            elif await attempt_once(plan, attempt):
                queue.put_nowait((plan, attempt + 1))

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
