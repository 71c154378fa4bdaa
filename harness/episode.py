"""A task made ready to run: its template, pre-run dump, parsed spec, tool subset and acting user.

Preparing happens once per task; every run then goes through a `harness.session.RunSession`, which
clones the template, lets the agent act, dumps the state before dropping the clone, and calls `judge`.
"""

from __future__ import annotations

from dataclasses import dataclass

from dsl.api import RunFacts, Spec, Verdict, label, load_spec
from dsl.state import State
from harness.errors import UserError
from harness.tasks import Task
from sandbox.databases import Template
from sandbox.sandbox import Sandbox
from sandbox.tools import Tool, all_tools


@dataclass(frozen=True)
class PreparedTask:
    task: Task
    template: Template
    before: State
    spec: Spec
    tools: dict[str, Tool]
    acting_user_id: int


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
