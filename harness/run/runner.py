"""Running one attempt: a pending (model, task, condition, index) attempted, labelled and recorded.

Every attempt goes through one `RunSession` (clone, tool pipeline, dump before drop, judge). What the
attempt says about the agent is its status (`harness.results.status`). `execute` runs an attempt and
writes nothing; `record_attempt` is the driver's half (the dump, then the transcript, then the record,
appended last, so stopping at any moment loses at most the attempts in flight). Driving a batch of
attempts, with retries up to the cap, is `harness.run.batch`. Refused credentials stop every run at once
and record none of them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrel.dsl.api import RunFacts
from agentrel.dsl.state import State
from agentrel.harness.agents.base import Agent, AgentError, AgentResult, Episode
from agentrel.harness.agents.scripted_model import PREFIXES as BUILTIN_MODELS
from agentrel.harness.conditions.layers import RunCondition
from agentrel.harness.errors import AuthFailure
from agentrel.harness.faults.effects import repeated_effects
from agentrel.harness.faults.injectors import FaultLayer, Injector
from agentrel.harness.faults.receipts import ReceiptLog
from agentrel.harness.faults.schedule import TriggerState
from agentrel.harness.prices import Price, cost
from agentrel.harness.redact import redact
from agentrel.harness.results.destroyed import destroyed_verdict
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.results.record import STAMP, FaultOutcome, RunError, RunRecord, Timings, TokenUsage
from agentrel.harness.results.status import Failure, connected_status, fault_status, run_status
from agentrel.harness.run.episode import PreparedTask
from agentrel.harness.run.matrix import RunPlan
from agentrel.harness.run.session import Finished, RunSession, StateUnreadable
from agentrel.sandbox.sandbox import Sandbox

if TYPE_CHECKING:
    from agentrel.harness.run.recipe import RunRecipe  # it imports this module

DEFAULT_PARTITION_S = 1.0


@dataclass
class RunContext:
    """What an executor slot attempts runs with: the recipe (plain data, the same in every slot) and the
    live objects built from it on this slot (its sandbox, the prepared tasks, the agents, the prices, each
    run's condition layers)."""

    recipe: RunRecipe
    sandbox: Sandbox
    prepared: dict[str, PreparedTask]
    agents: dict[str, Agent]
    prices: dict[str, Price]
    conditions: Callable[[RunPlan], RunCondition] = lambda plan: RunCondition()
    # Receipts are fsynced here by the slot that faults, before recovery starts: the one write outside
    # the driver, since the record (which carries them too) is only written once the run has ended.
    receipts: Path | None = None


@dataclass
class Attempt:
    """One attempt as an executor hands it back: the record (its dump and transcript digests not yet
    filled in), the after-state and the transcript. Only the driver writes them, so an executor may run
    anywhere (a local task, a Ray actor) and the results directory keeps one writer."""

    record: RunRecord
    after: State | None
    transcript: dict[str, Any]
    receipts: bytes | None = None  # a fault attempt's receipt log, as the slot fsynced it


def record_head(ctx: RunContext, plan: RunPlan, attempt: int) -> dict[str, Any]:
    """The fields every attempt's record carries however it ends (run, lost with its slot): its cell and
    seed, the protocol and the freeze it ran under, the template it started from, when it started."""
    return {
        "run_id": plan.run_id,
        "model": plan.model,
        "agent_kind": ctx.agents[plan.model].kind,
        "task": plan.task,
        "condition": plan.cell_condition,
        "run_index": plan.run_index,
        "seed": plan.seed,
        "protocol_hash": ctx.recipe.protocol_hash,
        "environment": ctx.sandbox.env.name,
        "attempt": attempt,
        "frozen_by": ctx.recipe.frozen_by,
        "before_digest": ctx.prepared[plan.task].template.digest,
        "started_at": datetime.now(UTC).strftime(STAMP),
    }


async def execute(ctx: RunContext, plan: RunPlan, attempt: int = 1) -> Attempt:
    prepared = ctx.prepared[plan.task]
    agent = ctx.agents[plan.model]
    head = record_head(ctx, plan, attempt)
    timings = Timings()
    t_start = time.perf_counter()
    condition = ctx.conditions(plan)
    fault = _fault_layer(ctx, plan, attempt)
    session = RunSession(
        ctx.sandbox,
        prepared,
        seed=plan.seed,
        layers=condition.layers,
        extra_specs=condition.goal_specs,
        fault=fault,
        fault_timeout_s=ctx.recipe.request.fault_timeout_s,
    )
    result: AgentResult | None = None
    finished: Finished | None = None
    harness_error: str | None = None
    destroyed = False  # the final state could not be read after the subject acted
    try:
        async with session:
            timings.clone_s = session.clone_s
            t0 = time.perf_counter()
            result = await _act(
                agent,
                Episode(
                    prepared.task,
                    prepared.tools,
                    plan.seed,
                    session.call,
                    ctx.recipe.request.max_steps,
                    plan.run_id,
                ),
                ctx.recipe.run_timeout_s,
            )
            timings.agent_s = time.perf_counter() - t0
            facts = RunFacts(
                final_message=result.final_message, errored=result.error is not None, stalled=result.stalled
            )
            finished = await session.finish(facts)
    except (asyncio.CancelledError, AuthFailure):
        raise
    except StateUnreadable as exc:  # after the subject acted: what it left is damage (results.destroyed)
        harness_error, destroyed = f"{type(exc).__name__}: {exc}"[:500], True
    except Exception as exc:  # the clone or the dump failed: there is no state to read
        harness_error = f"{type(exc).__name__}: {exc}"[:500]

    injection = condition.injection
    if injection is not None and result is not None and (echo := injection.final_echo(result.final_message)):
        session.events.append(echo)
    if result is not None:  # what the agent noticed of its own ending (a tool call written as text, ...)
        session.events.extend(result.events)
    if finished is not None:
        timings.dump_s, timings.label_s = finished.dump_s, finished.label_s
    failure: Failure | None = "harness" if harness_error else (result.failure if result else None)
    message = redact(harness_error or (result.error if result else None) or "") or None
    verdict = finished.verdict if finished else None
    if destroyed:  # errored: the record carries the dump's error, and publication labels from the record
        facts = RunFacts(
            final_message=result.final_message if result else None,
            errored=True,
            stalled=bool(result and result.stalled),
        )
        verdict = destroyed_verdict(facts, f"{prepared.spec.name}@{prepared.spec.version}")
    usage = result.usage if result else None
    transcript = {
        "run_id": plan.run_id,
        "attempt": attempt,
        "final_message": result.final_message if result else None,
        "messages": result.transcript if result else [],
        "tool_calls": [c.__dict__ for c in session.calls],
        "events": [e.model_dump(mode="json") for e in session.events],
        # each answered model call: its ordinal, the seed it sent, the model id that served it
        "model_calls": result.model_calls if result else [],
    }
    timings.total_s = time.perf_counter() - t_start
    outcome = _fault_outcome(fault, finished, prepared)
    record = RunRecord(
        **head,
        status=connected_status(
            fault_status(
                run_status(failure, verdict.outcome if verdict else None),
                outcome.fired if outcome is not None else None,
                outcome is not None and outcome.verdict == "witnessed",
            ),
            result.connected if result is not None else None,
            verdict.outcome if verdict else None,
        ),
        connected=result.connected if result is not None else None,
        verdict=verdict,
        error=RunError(kind=failure or "agent", message=message) if message else None,
        events=session.events,
        exposure=injection.exposure if injection is not None else None,
        fault=outcome,
        script=result.script if result else None,
        served_model=result.served_model if result else None,
        final_message=result.final_message if result else None,
        stalled=bool(result and result.stalled),
        tool_calls=[
            {"ordinal": c.ordinal, "tool": c.tool, "ok": c.ok, "args_digest": args_digest(c.args)}
            for c in session.calls
        ],
        usage=TokenUsage(
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, model_calls=usage.model_calls
        )
        if usage
        else TokenUsage(),
        timings=timings,
        **_cost(ctx, plan.model, agent.kind, result),
    )
    receipts = fault.log.path.read_bytes() if fault is not None and fault.log.path.exists() else None
    return Attempt(record, finished.after if finished else None, transcript, receipts)


def _cost(ctx: RunContext, model: str, kind: str, result: AgentResult | None) -> dict[str, Any]:
    """The run's `cost_usd` and where it comes from (`cost_source`), the one place both are decided.

    A model's price from its own name, `measured` (the adapter read the provider's usage); an external
    agent's from the model its usage names: `measured` when its model proxy counted the tokens, `reported`
    when only its own usage file did; unknown (None, never 0) when it has none or names an unpriced
    model. Built-in agents, and the built-in scripted model behind a proxy, cost 0, measured."""
    if kind == "external":
        if result is None or result.usage_model is None:
            return {"cost_usd": None, "cost_source": None}
        if result.usage_source == "measured" and result.usage_model.split("/", 1)[0] in BUILTIN_MODELS:
            return {"cost_usd": 0.0, "cost_source": "measured"}
        price = cost(ctx.prices, result.usage_model, result.usage.input_tokens, result.usage.output_tokens)
        return {"cost_usd": price, "cost_source": result.usage_source if price is not None else None}
    if kind != "model" or result is None:
        return {"cost_usd": 0.0, "cost_source": "measured"}
    price = cost(ctx.prices, model, result.usage.input_tokens, result.usage.output_tokens)
    return {"cost_usd": price, "cost_source": "measured" if price is not None else None}


def _fault_layer(ctx: RunContext, plan: RunPlan, attempt: int) -> FaultLayer | None:
    if plan.fault is None:
        return None
    schedule = ctx.recipe.schedule
    assert schedule is not None and ctx.receipts is not None, "a fault run needs the resolved schedule"
    cell = schedule.cell(plan.task, plan.fault)
    injector = Injector(cell.kind, partition_s=cell.seconds or DEFAULT_PARTITION_S)
    log = ReceiptLog(ctx.receipts / f"{plan.run_id}.{attempt}.jsonl")
    trigger = TriggerState(cell.trigger, ctx.prepared[plan.task].tools)
    return FaultLayer(injector, log, trigger, fault_id=cell.fault_id)


def _fault_outcome(
    layer: FaultLayer | None, finished: Finished | None, prepared: PreparedTask
) -> FaultOutcome | None:
    if layer is None:
        return None
    kind, trigger = layer.injector.kind, layer.trigger.describe()
    repeated = None
    if finished is not None and finished.commits is not None:
        tags = {name: tool.reversibility for name, tool in prepared.tools.items()}
        repeated = repeated_effects(finished.commits, tags)
    base = FaultOutcome(
        fault_id=layer.fault_id, kind=kind, trigger=trigger, fired=False, repeated_effects=repeated
    )
    if not layer.fired:
        return base
    injected = layer.fired[0]
    return base.model_copy(
        update={
            "fired": True,
            "verdict": injected.witness.verdict,
            "reasons": injected.witness.reasons,
            "actuator": injected.actuator,
            "witness": injected.witness,
        }
    )


def record_attempt(results: ResultsDir, base: State, attempt: Attempt) -> RunRecord:
    """The driver's half: the dump (as a delta against `base`, the task's template state), the
    transcript and the receipt log, then the record that names them, appended last so it never points
    at a lost file."""
    record = attempt.record
    after_digest = results.store_dump(attempt.after, base) if attempt.after is not None else None
    transcript_digest = results.write_transcript(record.run_id, record.attempt, attempt.transcript)
    if attempt.receipts is not None:
        results.keep_receipts(record.run_id, record.attempt, attempt.receipts)
    record = record.model_copy(update={"after_digest": after_digest, "transcript_digest": transcript_digest})
    results.append(record)
    return record


def args_digest(args: Any) -> str:
    """Two calls with the same tool and digest repeat each other (the efficiency axis counts them)."""
    text = json.dumps(args, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


async def _act(agent: Agent, episode: Episode, timeout_s: float) -> AgentResult:
    """The agent's run, with every way it can end turned into a result (refused credentials excepted)."""
    try:
        return await asyncio.wait_for(agent.run(episode), timeout_s)
    except AuthFailure:
        raise
    except AgentError as exc:
        return AgentResult(None, error=str(exc), failure="agent")
    except TimeoutError:
        return AgentResult(None, error=f"run exceeded {timeout_s:.0f} s", failure="agent")
    except Exception as exc:  # a bug in an agent loop: the harness failed, but the state is still read
        return AgentResult(None, error=f"{type(exc).__name__}: {exc}"[:500], failure="harness")
