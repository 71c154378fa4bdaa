"""Prove a task's spec: run its oracle and every counterexample on a real sandbox, compare expectations."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from agentrel.dsl.api import RunFacts, Verdict
from agentrel.dsl.state import State
from agentrel.harness.agents.base import Episode
from agentrel.harness.agents.scripted import replay
from agentrel.harness.run.episode import PreparedTask
from agentrel.harness.run.pipeline import CallRecord, Layer
from agentrel.harness.run.session import RunSession
from agentrel.harness.tasks import Expectation, Script, Task
from agentrel.sandbox.sandbox import Sandbox


@dataclass(frozen=True)
class ProofRow:
    task: str
    script: str
    expected: str
    got: str
    ok: bool
    detail: str = ""


@dataclass
class ScriptedRun:
    """A scripted plan run on a fresh clone: what the proof compares with its expectation."""

    verdict: Verdict
    after_digest: str
    calls: list[CallRecord] = field(default_factory=list)
    final_message: str | None = None
    after: State | None = None  # the post-run state (read-only: it shares the template's tables)


async def scripted_run(
    sb: Sandbox, prepared: PreparedTask, script: Script, name: str = "script", layers: Sequence[Layer] = ()
) -> ScriptedRun:
    """Replay a scripted plan through a run session (the agents' own replay), dumped and judged."""
    async with RunSession(sb, prepared, layers=layers) as session:
        episode = Episode(prepared.task, prepared.tools, "", session.call)
        result = await replay(episode, script, name)
        facts = RunFacts(final_message=result.final_message, stalled=result.stalled)
        finished = await session.finish(facts)
    digest = finished.after.digest(prepared.before)
    return ScriptedRun(finished.verdict, digest, session.calls, result.final_message, finished.after)


def _describe(outcome: str, sub_label: str, rules: list[str], dollars: Decimal | None) -> str:
    parts = [outcome]
    if sub_label:
        parts.append(sub_label)
    if rules:
        parts.append("rules=" + ",".join(rules))
    if dollars is not None:
        parts.append(f"${dollars:.2f}")
    return " ".join(parts)


def check(expect: Expectation, verdict: Verdict) -> tuple[bool, str]:
    fired = sorted({e.rule for e in verdict.events})
    problems = []
    if verdict.outcome != expect.outcome:
        problems.append(f"outcome {verdict.outcome}")
    if expect.sub_label and verdict.sub_label != expect.sub_label:
        problems.append(f"sub_label {verdict.sub_label}")
    missing = [r for r in expect.rules if r not in fired]
    if missing:
        problems.append(f"rule(s) {missing} did not fire")
    if expect.dollars is not None and Decimal(verdict.dollars) != expect.dollars:
        problems.append(f"dollars {verdict.dollars}")
    unmet = [r.label for r in verdict.requirements if not r.met]
    if expect.outcome == "PASS" and unmet:
        problems.append(f"unmet: {unmet}")
    return not problems, "; ".join(problems)


def prove_task(sb: Sandbox, prepared: PreparedTask, layers: Sequence[Layer] = ()) -> list[ProofRow]:
    task: Task = prepared.task
    rows = []
    for name, script in task.scripts().items():
        expect = task.oracle_expect if name == "oracle" else script.expect
        assert expect is not None
        episode = asyncio.run(scripted_run(sb, prepared, script, name, layers))
        v = episode.verdict
        failed_calls = [c.tool for c in episode.calls if not c.ok]
        ok, detail = check(expect, v)
        if name == "oracle" and failed_calls:
            ok, detail = (
                False,
                (detail + "; " if detail else "") + f"oracle tool call(s) failed: {failed_calls}",
            )
        got = _describe(v.outcome, v.sub_label, sorted({e.rule for e in v.events}), Decimal(v.dollars))
        rows.append(
            ProofRow(
                task.id,
                name,
                _describe(expect.outcome, expect.sub_label, expect.rules, expect.dollars),
                got,
                ok,
                detail,
            )
        )
    return rows
