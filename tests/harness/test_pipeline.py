"""The tool pipeline: layer order, what a layer may do, per-call random streams, and one seam for all.

A recording layer must see every call of the audit runner, of `tasks prove` and of the MCP face, in
order, with the same ordinals: the three lifecycles are one.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from mcp.client.client import Client

from agentrel.dsl.api import RunFacts
from agentrel.harness.agents.scripted import ScriptedAgent
from agentrel.harness.conditions.layers import RunCondition
from agentrel.harness.mcp.server import build_server
from agentrel.harness.prices import load_prices
from agentrel.harness.prove import scripted_run
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.run.episode import prepare
from agentrel.harness.run.matrix import RunPlan
from agentrel.harness.run.pipeline import Next, Pipeline, ToolCall, parse_arguments
from agentrel.harness.run.recipe import RunRecipe
from agentrel.harness.run.request import AuditRequest
from agentrel.harness.run.runner import RunContext, execute, record_attempt
from agentrel.harness.run.session import RunSession
from agentrel.harness.tasks import load_suite
from agentrel.sandbox.tools import ToolResult

TASK = "itsm-cab-window"


@dataclass
class Recorder:
    name: str = "recorder"
    seen: list[tuple[int, str, Any]] = field(default_factory=list)

    async def handle(self, call: ToolCall, next: Next) -> ToolResult:
        self.seen.append((call.ordinal, call.tool, call.args))
        call.emit("seen")
        return await next(call)


@dataclass
class Tagger:
    """Changes what the agent sees, or refuses a tool, and draws from its own stream."""

    name: str
    refuse: str | None = None
    draws: list[float] = field(default_factory=list)

    async def handle(self, call: ToolCall, next: Next) -> ToolResult:
        self.draws.append(call.rng(self.name).random())
        if call.tool == self.refuse:
            call.emit("refused", by=self.name)
            return ToolResult(False, {"error": f"refused by {self.name}"})
        result = await next(call)
        return ToolResult(result.ok, {"inner": result.content, "via": self.name})


async def echo(call: ToolCall) -> ToolResult:
    return ToolResult(True, {"tool": call.tool, "args": call.args})


def run_pipeline(layers, calls, seed="s"):
    pipeline = Pipeline(echo, layers, seed)

    async def go():
        return [await pipeline.call(tool, args, lambda: 0.0) for tool, args in calls]

    return pipeline, asyncio.run(go())


def test_layers_run_in_order_and_may_change_or_refuse_a_call():
    outer, inner = Tagger("outer"), Tagger("inner", refuse="delete_everything")
    pipeline, results = run_pipeline([outer, inner], [("read", {"a": 1}), ("delete_everything", {})])
    assert results[0].content == {
        "inner": {"inner": {"tool": "read", "args": {"a": 1}}, "via": "inner"},
        "via": "outer",
    }
    assert results[1].ok is False and results[1].content["inner"] == {"error": "refused by inner"}
    assert [(e.kind, e.ordinal, e.tool, e.detail) for e in pipeline.events] == [
        ("refused", 2, "delete_everything", {"by": "inner"})
    ]
    assert [(c.ordinal, c.tool, c.ok) for c in pipeline.calls] == [
        (1, "read", True),
        (2, "delete_everything", False),
    ]


def test_the_empty_pipeline_is_the_tool_box_itself():
    _, results = run_pipeline([], [("read", {"a": 1})])
    assert results[0].content == {"tool": "read", "args": {"a": 1}}


def test_a_layers_draws_depend_only_on_seed_layer_and_ordinal():
    calls = [("read", {}), ("write", {}), ("read", {})]
    alone = Tagger("noise")
    run_pipeline([alone], calls)
    # Another layer drawing in front of it, and other tools at the same ordinals, change nothing.
    busy = Tagger("noise")
    run_pipeline([Tagger("other"), Tagger("other2"), busy], [("x", {}), ("y", {}), ("z", {})])
    assert alone.draws == busy.draws
    # A different layer name or seed gives a different stream.
    other_seed = Tagger("noise")
    run_pipeline([other_seed], calls, seed="t")
    assert other_seed.draws != alone.draws
    assert len(set(alone.draws)) == 3


def test_arguments_are_parsed_once_before_any_layer_sees_them():
    recorder = Recorder()
    run_pipeline([recorder], [("t", '{"id": 7}'), ("t", ""), ("t", '{"id": '), ("t", {"id": 8})])
    assert [args for _, _, args in recorder.seen] == [{"id": 7}, {}, '{"id": ', {"id": 8}]
    assert parse_arguments('{"id": ')[1] == "arguments are not valid JSON: Expecting value"


@pytest.fixture(scope="module")
def prepared(sandbox):
    return prepare(sandbox, load_suite(patterns=[TASK])[0])


def recipe(**facts):
    request = AuditRequest(models=("scripted/oracle",), tasks=(TASK,))
    return RunRecipe(request=request, conditions=[], protocol_hash="test-protocol", **facts)


def oracle_steps(prepared):
    return [(step.tool, step.args) for step in prepared.task.oracle.steps]


def test_one_layer_sees_the_same_calls_from_the_runner_prove_and_the_mcp_face(sandbox, prepared, tmp_path):
    expected = [(i, tool) for i, (tool, _) in enumerate(oracle_steps(prepared), start=1)]
    assert len(expected) >= 2

    # The audit runner.
    runner_layer = Recorder()
    results = ResultsDir(tmp_path / "r")
    results.open()
    ctx = RunContext(
        recipe(),
        sandbox,
        {TASK: prepared},
        {"scripted/oracle": ScriptedAgent("oracle")},
        load_prices(None),
        conditions=lambda plan: RunCondition([runner_layer]),
    )
    attempt = asyncio.run(execute(ctx, RunPlan("scripted/oracle", TASK, "clean", 1)))
    record = record_attempt(results, prepared.before, attempt)
    assert record.status == "valid" and record.verdict.outcome == "PASS"
    assert [(e.kind, e.ordinal) for e in record.events] == [("seen", i) for i, _ in expected]

    # tasks prove.
    prove_layer = Recorder()
    proof = asyncio.run(scripted_run(sandbox, prepared, prepared.task.oracle, "oracle", [prove_layer]))
    assert proof.verdict.outcome == "PASS"

    # The MCP face, driven by the official client.
    mcp_layer = Recorder()

    async def drive() -> str:
        async with RunSession(sandbox, prepared, layers=[mcp_layer]) as session:
            async with Client(build_server(session)) as client:
                for tool, args in oracle_steps(prepared):
                    result = await client.call_tool(tool, args)
                    assert not result.is_error, result
            finished = await session.finish(RunFacts(final_message=prepared.task.oracle.final))
        return finished.verdict.outcome

    assert anyio.run(drive) == "PASS"
    for layer in (runner_layer, prove_layer, mcp_layer):
        assert [(ordinal, tool) for ordinal, tool, _ in layer.seen] == expected
    assert runner_layer.seen == prove_layer.seen == mcp_layer.seen


def test_an_attempt_lost_with_its_slot_carries_the_same_identity_as_one_that_ran(sandbox, prepared):
    """Cell, seed, protocol and freeze: a lost attempt without its freeze would count as a run outside it
    and bar a publication whose retry did run (publication.matrix_check reads every attempt)."""
    from agentrel.harness.executors.transfer import lost_attempt

    frozen = "f" * 64
    ctx = RunContext(
        recipe(frozen_by=frozen),
        sandbox,
        {TASK: prepared},
        {"scripted/oracle": ScriptedAgent("oracle")},
        load_prices(None),
    )
    plan = RunPlan("scripted/oracle", TASK, "clean", 1)
    ran = asyncio.run(execute(ctx, plan, 2)).record
    lost = lost_attempt(ctx, plan, 2, "slot 0 died mid-run").record
    same = ("run_id", "model", "agent_kind", "task", "condition", "run_index", "seed", "protocol_hash")
    assert [getattr(lost, f) for f in same] == [getattr(ran, f) for f in same]
    assert lost.frozen_by == ran.frozen_by == frozen and lost.attempt == ran.attempt == 2
    assert lost.before_digest == ran.before_digest and lost.status == "harness_invalid"


def test_a_call_after_the_finish_is_an_error_result_and_the_database_is_gone(sandbox, prepared):
    async def go():
        async with RunSession(sandbox, prepared) as session:
            await session.finish(RunFacts(final_message=None))
            late = await session.call("get_change_request", {"number": "CHG9000001"})
            return session.run_db, late

    run_db, late = asyncio.run(go())
    assert late.ok is False and "run has ended" in late.content["error"]
    assert run_db not in sandbox.dbs.names("agentrel_run_")


def test_a_crash_inside_the_session_still_drops_the_database(sandbox, prepared):
    async def go():
        async with RunSession(sandbox, prepared) as session:
            names.append(session.run_db)
            raise RuntimeError("boom")

    names: list[str] = []
    with pytest.raises(RuntimeError):
        asyncio.run(go())
    assert names and names[0] not in sandbox.dbs.names("agentrel_run_")
