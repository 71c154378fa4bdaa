"""A task made ready to run: its template, pre-run dump, parsed spec, tool subset and acting user.

Preparing happens once per task; every run then goes through a `harness.run.session.RunSession`, which
clones the template, lets the agent act, dumps the state before dropping the clone, and calls `judge`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
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


def check(task: Task, env: Environment) -> Spec:
    """What refuses a task before anything is built for it: a tool the environment lacks, a damage spec
    that does not parse or names what the environment's tables do not have. Returns the spec."""
    where = f"tasks/{task.vertical}/{task.id}.yaml"
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
    return checked_spec(task, where, env)


def prepare(sb: Sandbox, task: Task, spec: Spec | None = None) -> PreparedTask:
    """Everything a run of `task` needs (`spec`: its `check`ed spec, if already read); a task that cannot
    be judged stops here, before any run."""
    env = sb.env
    known = env.tools()
    spec = spec if spec is not None else check(task, env)
    template = _task_template(sb, task)
    before = sb.dbs.template_state(template)
    acting = acting_user(sb, task, template, before)
    tools = {name: known[name] for name in task.tools}
    return PreparedTask(task, template, before, spec, tools, acting)


def acting_user(sb: Sandbox, task: Task, template: Template, before: State | None = None) -> int:
    """The id `task.acting_user` resolves to in its template's pre-run state `before`; without it (a plan),
    what an earlier process resolved for the same template digest, the dump loaded only where none did.
    A user not there is refused."""

    def resolve() -> int | None:
        state = before if before is not None else sb.dbs.template_state(template)
        return sb.env.acting_user(state, task.acting_user)

    key = f"acting_user:{task.acting_user}"
    found = sb.dbs.derived(template, key, resolve, fresh=before is not None)  # a run asks its own dump
    if not isinstance(found, int) or isinstance(found, bool):
        raise UserError(
            f"tasks/{task.vertical}/{task.id}.yaml: field acting_user: no user {task.acting_user!r}"
        )
    return found


# Templates built side by side on a first use: each build mostly waits on the server (clone, fixture SQL)
# and then parses its dump, so a few at once keep two cores busy; more only queue on the server.
TEMPLATE_BUILDERS = 3


def prepare_all(
    sb: Sandbox, tasks: Sequence[Task], checked: Callable[[], None] = lambda: None
) -> dict[str, PreparedTask]:
    """`prepare` for every task, in order: every task `check`ed first (then `checked()` is called, before
    the slow part), then the templates a first use lacks built side by side. A fixture that fails is
    left to `prepare`, which says which task's it is."""
    specs = _checked_and_built(sb, tasks, checked)
    return {t.id: prepare(sb, t, specs[t.id]) for t in tasks}


def plan_templates(
    sb: Sandbox, tasks: Sequence[Task], checked: Callable[[], None] = lambda: None
) -> dict[str, Template]:
    """What a plan needs of each task: checked as `prepare_all` checks it (spec, fixture, acting user),
    its template built or checked, but no pre-run dump loaded."""
    _checked_and_built(sb, tasks, checked)
    seed, out = sb.seed_template(), {}
    for task in tasks:
        out[task.id] = _task_template(sb, task, seed)
        acting_user(sb, task, out[task.id])
    return out


def _checked_and_built(sb: Sandbox, tasks: Sequence[Task], checked: Callable[[], None]) -> dict[str, Spec]:
    specs = {t.id: check(t, sb.env) for t in tasks}
    checked()
    seed = sb.seed_template()  # once, before the task templates built from it

    def build(task: Task) -> None:
        with contextlib.suppress(UserError):  # said again, in task order, by the caller
            _task_template(sb, task, seed)

    if len(tasks) > 1:
        with ThreadPoolExecutor(min(TEMPLATE_BUILDERS, len(tasks)), thread_name_prefix="template") as pool:
            list(pool.map(build, tasks))
    return specs


def _task_template(sb: Sandbox, task: Task, seed: Template | None = None) -> Template:
    try:
        return sb.dbs.task_template(seed or sb.seed_template(), task.id, task.fixture_sql)
    except FixtureError as exc:
        raise UserError(f"tasks/{task.vertical}/{task.id}.yaml: field fixture_sql: {exc}") from None


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
