"""A task made ready to run: its template, pre-run dump, parsed spec, tool subset and acting user.

Preparing happens once per task; every run then goes through a `harness.run.session.RunSession`, which
clones the template, lets the agent act, dumps the state before dropping the clone, and calls `judge`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentrel.dsl.api import DslError, RunFacts, Spec, Verdict, check_spec, label, load_spec
from agentrel.dsl.params import resolve_params
from agentrel.dsl.state import State
from agentrel.harness.errors import UserError
from agentrel.harness.tasks import Task
from agentrel.sandbox.databases import Template
from agentrel.sandbox.environments.contract import Environment
from agentrel.sandbox.sandbox import Sandbox
from agentrel.sandbox.servers.base import FixtureError
from agentrel.sandbox.tools import Tool


@dataclass(frozen=True)
class PreparedTask:
    task: Task
    template: Template
    before: State
    spec: Spec
    tools: dict[str, Tool]
    acting_user_id: int


def prepare(sb: Sandbox, task: Task) -> PreparedTask:
    """Everything a run of `task` needs; a task that cannot be judged stops here, before any run."""
    where = f"tasks/{task.vertical}/{task.id}.yaml"
    env = sb.env
    known = env.tools()
    unknown = [t for t in task.tools if t not in known]
    if unknown:
        raise UserError(
            f"{where}: field tools: unknown tool(s) {', '.join(unknown)} in environment {env.name}"
        )
    keyed = sorted(t for t in task.tools if known[t].idempotent)
    if keyed and not env.transactional_tools:
        # A key kept in the run database is atomic with a write only when the write goes through the
        # same transaction: elsewhere, a retry could commit twice while its key says it did not.
        raise UserError(
            f"environment {env.name}: tool(s) {', '.join(keyed)} honour idempotency keys, but its tools "
            "do not write through their call's transaction (transactional_tools is False); drop the keys "
            "or make the tools transactional"
        )
    spec = checked_spec(task, where, env)
    try:
        template = sb.dbs.task_template(sb.seed_template(), task.id, task.fixture_sql)
    except FixtureError as exc:
        raise UserError(f"{where}: field fixture_sql: {exc}") from None
    before = sb.dbs.template_state(template)
    acting = env.acting_user(before, task.acting_user)
    if acting is None:
        raise UserError(
            f"tasks/{task.vertical}/{task.id}.yaml: field acting_user: no user {task.acting_user!r}"
        )
    tools = {name: known[name] for name in task.tools}
    return PreparedTask(task, template, before, spec, tools, int(acting))


def checked_spec(task: Task, where: str, env: Environment) -> Spec:
    """The task's damage spec, parsed and checked against the environment's tables: a spec that names an
    unknown table or column would make every paid run unjudgeable, so it is refused up front."""
    try:
        spec = load_spec(task.spec_path)
        resolve_params(spec, task.params)
    except DslError as exc:
        raise UserError(f"{where}: spec: {str(exc).splitlines()[0]}") from None
    fatal = [p for p in check_spec(spec, dict(env.table_infos())) if p.fatal]
    if fatal:
        more = (
            f" (and {len(fatal) - 1} more; `agentrel spec check {task.spec}` lists them)"
            if len(fatal) > 1
            else ""
        )
        raise UserError(f"{where}: spec {fatal[0]}{more}")
    return spec


def judge(prepared: PreparedTask, after: State, facts: RunFacts, extra: Sequence[Spec] = ()) -> Verdict:
    """The verdict of the task's spec, with any `extra` specs (an injected goal's) labelled alongside."""
    return label(
        prepared.spec, prepared.task.params, prepared.before, after, facts, [(s, None) for s in extra]
    )
