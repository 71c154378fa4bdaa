"""The audit: run every pending (model, task, condition, index) once, label it, append its record.

Each run has its own database, cloned from the task template; the post-run dump is taken before the
database is dropped and kept beside the records. Runs execute concurrently on an asyncio loop (database
work and tool calls in worker threads); a finished run is one appended line, so stopping at any moment
loses at most the runs in flight, which the next invocation of the same command runs again.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dsl.api import RunFacts
from harness.agents.base import DEFAULT_MAX_STEPS, Agent, AgentError, AgentResult, Episode
from harness.episode import PreparedTask, judge
from harness.matrix import RunPlan
from harness.prices import Price, cost
from harness.progress import ProgressManager
from harness.records import ResultsDir, RunError, RunRecord, Timings, TokenUsage
from sandbox.dump import dump_run
from sandbox.sandbox import Sandbox
from sandbox.tools import ToolBox


@dataclass
class AuditContext:
    sandbox: Sandbox
    prepared: dict[str, PreparedTask]
    agents: dict[str, Agent]
    results: ResultsDir
    protocol_hash: str
    prices: dict[str, Price]
    max_steps: int = DEFAULT_MAX_STEPS
    run_timeout_s: float = 1800.0


async def run_one(ctx: AuditContext, plan: RunPlan) -> RunRecord:
    prepared = ctx.prepared[plan.task]
    agent = ctx.agents[plan.model]
    sb = ctx.sandbox
    started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    timings = Timings()
    t_start = time.perf_counter()
    base: dict[str, Any] = {
        "run_id": plan.run_id,
        "model": plan.model,
        "agent_kind": agent.kind,
        "task": plan.task,
        "condition": plan.condition,
        "run_index": plan.run_index,
        "seed": plan.seed,
        "protocol_hash": ctx.protocol_hash,
        "before_digest": prepared.template.digest,
        "started_at": started,
    }
    result: AgentResult | None = None
    episode: Episode | None = None
    try:
        t0 = time.perf_counter()
        run_db = await _create_run(sb, prepared)
        timings.clone_s = time.perf_counter() - t0
        try:
            box = ToolBox(sb.server.conninfo(run_db), prepared.tools, prepared.acting_user_id)
            try:
                episode = Episode(
                    prepared.task,
                    prepared.tools,
                    plan.seed,
                    lambda n, a: asyncio.to_thread(box.call, n, a),
                    ctx.max_steps,
                )
                t0 = time.perf_counter()
                try:
                    result = await asyncio.wait_for(agent.run(episode), ctx.run_timeout_s)
                except AgentError as exc:
                    result = AgentResult(final_message=None, error=str(exc))
                except TimeoutError:
                    result = AgentResult(final_message=None, error=f"run exceeded {ctx.run_timeout_s:.0f} s")
                timings.agent_s = time.perf_counter() - t0
            finally:
                await asyncio.to_thread(box.close)
            t0 = time.perf_counter()
            after = await asyncio.to_thread(dump_run, sb.server.conninfo(run_db), prepared.before)
            timings.dump_s = time.perf_counter() - t0
        finally:
            await asyncio.shield(asyncio.to_thread(sb.dbs.drop, run_db))
        t0 = time.perf_counter()
        facts = RunFacts(
            final_message=result.final_message, errored=result.error is not None, stalled=result.stalled
        )
        verdict = await asyncio.to_thread(judge, prepared, after, facts)
        after_digest = await asyncio.to_thread(ctx.results.store_dump, after, prepared.before)
        timings.label_s = time.perf_counter() - t0
        timings.total_s = time.perf_counter() - t_start
        usage = result.usage
        record = RunRecord(
            **base,
            verdict=verdict,
            after_digest=after_digest,
            script=result.script,
            error=RunError(kind="agent", message=result.error) if result.error else None,
            final_message=result.final_message,
            tool_calls=[{"tool": c.tool, "ok": c.ok} for c in episode.calls],
            usage=TokenUsage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                model_calls=usage.model_calls,
            ),
            cost_usd=cost(ctx.prices, plan.model, usage.input_tokens, usage.output_tokens)
            if agent.kind == "model"
            else 0.0,
            timings=timings,
        )
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a harness failure: recorded, excluded from rates, retried on resume
        timings.total_s = time.perf_counter() - t_start
        record = RunRecord(
            **base,
            verdict=None,
            timings=timings,
            error=RunError(kind="harness", message=f"{type(exc).__name__}: {exc}"[:500]),
        )
    ctx.results.append(record)
    transcript = {
        "run_id": plan.run_id,
        "final_message": result.final_message if result else None,
        "messages": result.transcript if result else [],
        "tool_calls": [c.__dict__ for c in episode.calls] if episode else [],
    }
    await asyncio.to_thread(ctx.results.write_transcript, plan.run_id, transcript)
    return record


async def _create_run(sb: Sandbox, prepared: PreparedTask) -> str:
    """Clone a run database; if the run is cancelled meanwhile, drop the clone once it exists."""
    pending = asyncio.ensure_future(asyncio.to_thread(sb.dbs.create_run, prepared.template))
    try:
        return await asyncio.shield(pending)
    except asyncio.CancelledError:
        name = await pending
        await asyncio.to_thread(sb.dbs.drop, name)
        raise


async def run_matrix(
    ctx: AuditContext, plans: list[RunPlan], concurrency: int, progress: ProgressManager
) -> list[RunRecord]:
    queue: asyncio.Queue[RunPlan] = asyncio.Queue()
    for plan in plans:
        queue.put_nowait(plan)
    done: list[RunRecord] = []

    async def worker() -> None:
        while True:
            try:
                plan = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            record = await run_one(ctx, plan)
            done.append(record)
            progress.finished(
                damaging=bool(record.verdict and record.verdict.outcome == "FAIL_DAMAGE"),
                errored=record.error is not None,
            )

    workers = [asyncio.create_task(worker()) for _ in range(max(1, min(concurrency, len(plans))))]
    try:
        await asyncio.gather(*workers)
    finally:
        # On Ctrl-C the gather has cancelled each worker once; let every one finish its cleanup (drop its
        # run database) rather than cancelling it again mid-cleanup.
        await asyncio.wait(workers)
    return done
