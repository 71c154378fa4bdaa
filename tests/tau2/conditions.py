"""Helpers the conditions tests of each τ² environment share: a sandbox with the environment selected, an
audit under one condition, the injected events of a record, and a replay of steps labelled with every goal
spec of the current environment's catalogue."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentrel.harness.conditions.catalogue import load_catalogue
from agentrel.harness.run.audit import audit
from agentrel.harness.tasks import Step, Task
from agentrel.sandbox.environments import registry


@contextmanager
def selected(cluster: Any, home: Path, name: str) -> Iterator[Any]:
    """A sandbox on environment `name` (the audit reads the suite and catalogue of its environment)."""
    from agentrel.sandbox.sandbox import Sandbox

    yield Sandbox(cluster, home=home, env=registry.load(name))


def run(sandbox: Any, results: Path, model: str, condition: str, tasks: list[str], k: int, **kw: Any) -> Any:
    return audit(
        models=[model],
        k=k,
        tasks=tasks,
        concurrency=2,
        results=results,
        sandbox=sandbox,
        show_progress=False,
        conditions=[condition],
        **kw,
    )


def check_the_oracle_under_noise_stays_safe(sandbox: Any, results: Path, tasks: list[str]) -> None:
    out = run(sandbox, results, "scripted/oracle", "noisy", tasks, k=2)
    assert len(out.new) == 2 * len(tasks)
    faults = [e for r in out.new for e in r.events if e.kind == "fault"]
    assert faults  # the condition did reach the calls
    assert all(r.verdict.outcome != "FAIL_DAMAGE" for r in out.new), [r.verdict.events for r in out.new]


LOST_RESPONSE = (
    "name: lost\nfaults:\n  - {id: lost, kind: lost_response, trigger: {when: first_irreversible_call}}\n"
)


def check_a_lost_response_is_witnessed(sandbox: Any, tmp_path: Path, task: str) -> None:
    """A lost response on `task`'s first irreversible call: fired, witnessed, the write committed; the
    oracle does not repeat it, so no damage."""
    schedule = tmp_path / "lost.yaml"
    schedule.write_text(LOST_RESPONSE)
    out = run(sandbox, tmp_path / "r", "scripted/oracle", "clean", [task], k=1, faults=str(schedule))
    by_condition = {r.condition: r for r in out.new}
    assert set(by_condition) == {"clean", "fault:lost"}
    fault = by_condition["fault:lost"].fault
    assert fault is not None and fault.fired and fault.verdict == "witnessed", fault
    assert fault.witness is not None and fault.witness.witness.committed is True
    assert by_condition["fault:lost"].verdict.outcome != "FAIL_DAMAGE"


def injected(record: Any) -> list[Any]:
    return [e for e in record.verdict.events if e.spec and e.spec.startswith("injection:")]


def replayed(sandbox: Any, task: Task, steps: list[Step], final: str) -> tuple[Any, list[Any]]:
    """The task's verdict labelled with every goal spec, after replaying `steps` on a fresh clone; and the
    calls made."""
    from agentrel.dsl.api import RunFacts, label
    from agentrel.harness.agents.base import Episode
    from agentrel.harness.agents.scripted import replay
    from agentrel.harness.run.episode import prepare
    from agentrel.harness.run.session import RunSession
    from agentrel.harness.tasks import Script

    prep = prepare(sandbox, task)

    async def go() -> tuple[Any, list[Any]]:
        async with RunSession(sandbox, prep) as session:
            episode = Episode(prep.task, prep.tools, "", session.call)
            result = await replay(episode, Script(steps=steps, final=final), "script")
            finished = await session.finish(RunFacts(final_message=result.final_message))
        return finished.after, session.calls

    after, calls = asyncio.run(go())
    cat = load_catalogue(env=sandbox.env)
    extra = [(cat.specs[g.id], None) for g in cat.goals]
    return label(prep.spec, task.params, prep.before, after, RunFacts(final_message=final), extra), calls


def fired_goals(verdict: Any) -> set[str]:
    """The goal specs whose rules label an event of `verdict`."""
    return {e.spec for e in verdict.events if e.spec.startswith("injection:")}
