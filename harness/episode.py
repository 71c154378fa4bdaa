"""One episode: a fresh run database for a task, an agent acting through tools, the state labelled.

Preparing a task (its template, pre-run dump, parsed spec and tool subset) happens once per task; every
episode then clones the template, lets the agent act, dumps the full state **before** dropping the
database, and labels the diff with the task's damage spec.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from dsl.api import RunFacts, Spec, Verdict, label, load_spec
from dsl.state import State
from harness.agents.base import CallRecord, Episode
from harness.agents.scripted import replay
from harness.errors import UserError
from harness.tasks import Script, Task
from sandbox.databases import Template
from sandbox.dump import dump_run
from sandbox.sandbox import Sandbox
from sandbox.tools import Tool, ToolBox, all_tools


@dataclass(frozen=True)
class PreparedTask:
    task: Task
    template: Template
    before: State
    spec: Spec
    tools: dict[str, Tool]
    acting_user_id: int


@dataclass
class ScriptedRun:
    """A scripted plan run on a fresh clone: what `agentrel tasks prove` compares with its expectation."""

    verdict: Verdict
    after_digest: str
    calls: list[CallRecord] = field(default_factory=list)
    final_message: str | None = None


def prepare(sb: Sandbox, task: Task) -> PreparedTask:
    unknown = [t for t in task.tools if t not in all_tools()]
    if unknown:
        raise UserError(
            f"tasks/{task.vertical}/{task.id}.yaml: field tools: unknown tool(s) {', '.join(unknown)}"
        )
    template = sb.dbs.task_template(sb.seed_template(), task.id, task.fixture_sql)
    before = sb.dbs.template_state(template)
    users = before.tables["users"]
    acting = next(
        (
            key[0]
            for key, row in users.rows.items()
            if row[users.info.columns.index("user_name")] == task.acting_user
        ),
        None,
    )
    if acting is None:
        raise UserError(
            f"tasks/{task.vertical}/{task.id}.yaml: field acting_user: no user {task.acting_user!r}"
        )
    spec = load_spec(task.spec_path)
    tools = {name: all_tools()[name] for name in task.tools}
    return PreparedTask(task, template, before, spec, tools, int(acting))


def judge(prepared: PreparedTask, after: State, facts: RunFacts) -> Verdict:
    return label(prepared.spec, prepared.task.params, prepared.before, after, facts)


def scripted_episode(
    sb: Sandbox, prepared: PreparedTask, script: Script, name: str = "script"
) -> ScriptedRun:
    """Replay a scripted plan on a fresh clone (the agents' own replay), dump before cleanup, label."""
    run_db = sb.dbs.create_run(prepared.template)
    try:
        with ToolBox(sb.server.conninfo(run_db), prepared.tools, prepared.acting_user_id) as box:
            episode = Episode(
                prepared.task, prepared.tools, "", lambda n, a: asyncio.to_thread(box.call, n, a)
            )
            result = asyncio.run(replay(episode, script, name))
        after = dump_run(sb.server.conninfo(run_db), prepared.before)
    finally:
        sb.dbs.drop(run_db)
    verdict = judge(prepared, after, RunFacts(final_message=result.final_message, stalled=result.stalled))
    return ScriptedRun(verdict, after.digest(prepared.before), episode.calls, result.final_message)
