"""`agentrel audit` as a library call: resolve the matrix, check the protocol, run what is pending."""

from __future__ import annotations

import asyncio
import gc
import signal
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from agentrel.harness.agents import ConfigError
from agentrel.harness.agents.base import Agent
from agentrel.harness.agents.model_meta import load_model_meta
from agentrel.harness.conditions.catalogue import load_catalogue
from agentrel.harness.conditions.layers import refuse_unsupported
from agentrel.harness.conditions.model import BUILTIN as BUILTIN_CONDITIONS
from agentrel.harness.conditions.model import resolve_condition
from agentrel.harness.errors import EnvironmentFailure, UsageError, UserError
from agentrel.harness.executors import ExecutorFactory, LocalExecutor, resolve_executor
from agentrel.harness.executors.capacity import size_server
from agentrel.harness.fail_on import gate_findings
from agentrel.harness.faults.schedule import load_schedule, resolve
from agentrel.harness.manifest import build_manifest, write_or_check
from agentrel.harness.prices import load_prices
from agentrel.harness.protocol.binding import bind_protocol, evaluator_change
from agentrel.harness.protocol.conformance import write_execution_environment
from agentrel.harness.protocol.environment import observe_environment
from agentrel.harness.protocol.freeze import freeze_digest, frozen_refusal, load_freeze
from agentrel.harness.protocol.identity import identity_of
from agentrel.harness.protocol.policy import load_policy
from agentrel.harness.protocol.registry_journal import anchor_run_journal
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.results.record import RunRecord
from agentrel.harness.run.batch import run_matrix
from agentrel.harness.run.episode import PreparedTask, plan_templates, prepare_all
from agentrel.harness.run.matrix import expand
from agentrel.harness.run.progress import ProgressManager
from agentrel.harness.run.recipe import RunRecipe, build_context, resolve_agents
from agentrel.harness.run.request import AuditRequest
from agentrel.harness.stopping import CellGate
from agentrel.harness.tasks import load_suite
from agentrel.sandbox.sandbox import Sandbox
from agentrel.sandbox.servers.local import default_home


@dataclass
class AuditOutcome:
    request: AuditRequest
    results: ResultsDir
    protocol_hash: str
    planned: int
    skipped: int
    new: list[RunRecord]  # every attempt made by this invocation
    runs_per_second: float
    lost: dict[str, str]  # run id -> why its recorded evidence was unusable (it ran again)
    gate: CellGate | None = None  # --until: per-cell decisions and the runs they left unrun

    def findings(self) -> list[str]:
        """What the request's `fail_on` found in the audit's records (none: the gate passes)."""
        if not self.request.fail_on:
            return []
        certified = self.gate.certified() if self.gate is not None else None
        return gate_findings(self.results.records(), self.request.fail_on, certified)


def audit(
    request: AuditRequest | None = None,
    /,
    *,
    sandbox: Sandbox | None = None,
    executor_factory: ExecutorFactory | None = None,
    session: Agent | None = None,
    say: Callable[[str], None] = lambda message: None,
    show_progress: bool = True,
    **fields: Any,
) -> AuditOutcome:
    """Run the audit `request` asks for; the keyword form only builds the request from `fields`.

    Live objects go beside it: `sandbox` an opened sandbox (default: opened from the request's
    dsn/backend/image on its environment), `executor_factory` where attempts run (default: the request's
    executor), `session` a person's MCP session recorded as the subject `request.session`."""
    if request is None:
        if session is not None:
            fields.setdefault("session", session.name)
        request = AuditRequest.of(**fields)
    elif fields:
        raise TypeError(f"audit() takes a request or its fields, not both: {', '.join(fields)}")
    if (session.name if session is not None else None) != request.session:
        raise UsageError("a recorded session needs both the request's `session` name and the live session")
    executor = executor_factory or resolve_executor(request.executor, request.ray_address, request.workers)
    # A directory another audit is writing is refused before the sandbox is touched: a paused writer may
    # hold database locks this audit's template checks would otherwise wait on.
    results = request.results_dir(sandbox.env.name if sandbox is not None else None)
    ResultsDir(results).refuse_if_held()
    if sandbox is None:
        from agentrel.sandbox.environments.registry import load

        sandbox = Sandbox.open(
            request.dsn,
            request.backend,
            image=request.image,
            env=load(request.environment) if request.environment is not None else None,
        )
    elif request.environment is not None and request.environment != sandbox.env.name:
        raise UsageError(
            f"--env {request.environment}: the sandbox given is on {sandbox.env.name}; open it on "
            f"{request.environment} or leave the request's environment unset"
        )
    env = sandbox.env  # the audit's environment, a value: suite, prices and catalogue are its
    declared = [resolve_condition(c) for c in dict.fromkeys(request.conditions)]
    by_name = {c.name: c for c in declared}
    if len(by_name) != len(declared):
        raise UsageError("two --condition values declare the same name; give each condition its own name")
    refuse_unsupported(declared, env)
    # Never visible to an agent program, even inside a folder it is shown: this audit's results.
    programs = [s.model_copy(update={"hidden": [*s.hidden, str(results.absolute())]}) for s in request.agents]
    model_meta = load_model_meta(request.model_meta) if request.model_meta is not None else {}
    recipe = RunRecipe(request=request, conditions=declared, programs=programs, model_meta=model_meta)
    agents = resolve_agents(recipe)
    if session is not None:  # not in the recipe: it cannot be rebuilt elsewhere, only served here
        agents[session.name] = session
    for agent in agents.values():
        preflight = getattr(agent, "preflight", None)
        if preflight is not None:
            try:
                preflight()
            except ConfigError as exc:
                raise EnvironmentFailure(str(exc)) from None
    load_prices(request.prices, env)  # a bad price table stops the audit here, before anything is spent
    tasks = load_suite(patterns=list(request.tasks), env=env)
    schedule = None
    if request.faults is not None:
        tools = env.tools()
        by_task = {t.id: {n: tools[n] for n in t.tools if n in tools} for t in tasks}
        schedule = resolve(load_schedule(request.faults), by_task, source=request.faults)
        if "clean" not in by_name:  # every fault run is paired with its clean twin on the same seed
            declared.insert(0, BUILTIN_CONDITIONS["clean"])
            by_name = {c.name: c for c in declared}
            say("--faults: the clean condition joins the matrix (each fault run's twin, on the same seed)")
        recipe = recipe.model_copy(update={"schedule": schedule, "conditions": declared})
    catalogue = load_catalogue(env=env) if any(c.adversarial for c in declared) else None
    # Said once every task is checked, before the slow part (templates on a first use, the protocol's
    # hashing): where the results go, and the one place per user AgentRel keeps its state.
    where = (
        f"auditing into {results}; AgentRel's state (private Postgres, templates, signing key) is in "
        f"{default_home()}, AGENTREL_HOME moves it"
    )
    if request.plan:  # a plan loads no pre-run dump: nothing runs, and the audit that runs stores them
        prepared: dict[str, PreparedTask] = {}
        templates = plan_templates(sandbox, tasks, checked=lambda: say(where))
    else:
        prepared = prepare_all(sandbox, tasks, checked=lambda: say(where))
        templates = {tid: p.template for tid, p in prepared.items()}
    # The template dumps live as long as the audit: exempt them from the cyclic collector's full passes
    # (which would walk every row of every template at each labelling), without pausing the collector.
    gc.freeze()
    unattackable = {t.id for t in tasks if catalogue is not None and not catalogue.goals_for(t)}
    # Cells the matrix leaves out, preregistered as such: a validator counts them neither missing nor run.
    excluded = [
        {
            "task": t,
            "condition": c.name,
            "reason": "cannot be attacked: no injected goal acts through its tools",
        }
        for c in declared
        if c.adversarial
        for t in sorted(unattackable)
    ]
    k = request.k
    stopping = request.until
    fault_cells = [(c.task, c.fault_id) for c in schedule.cells] if schedule is not None else []
    # --until (issue 27): k becomes the most runs a cell can need, and the rule joins the protocol.
    if stopping is not None:
        per_agent = {
            (p.task, p.cell_condition)
            for p in expand(list(agents)[:1], [t.id for t in tasks], list(by_name), 1, fault_cells)
            if not (by_name[p.condition].adversarial and p.task in unattackable)
        }
        k = stopping.max_runs(len(per_agent), k)
    manifest = build_manifest(
        request,
        tasks=tasks,
        environment={"name": env.name, "fingerprint": env.fingerprint()},
        seed_digest=sandbox.seed_template().digest,
        template_digests={tid: t.digest for tid, t in templates.items()},
        conditions=[c.model_dump(mode="json") for c in declared],
        injections=catalogue.digest if catalogue is not None else None,
        k=k,
        agents=[a.config() for a in agents.values()],
        server_version=sandbox.version(),
        faults=schedule.manifest_entry() if schedule is not None else None,
        excluded_cells=excluded,
        # Only with a rule, so audits without one keep their protocol hash.
        stopping=stopping.manifest_entry(len(per_agent)) if stopping is not None else None,
    )
    rd = ResultsDir(results)
    rd.open()  # the writer's lock and a write probe, before anything is spent
    try:
        if rd.torn_bytes:
            say(
                f"cut a torn last line of {rd.runs} ({rd.torn_bytes} bytes): "
                "an attempt cut short, which runs again"
            )
        write_or_check(rd.path, manifest)
        identity = identity_of(manifest)
        freeze = load_freeze(rd.path)
        if freeze is not None and (why := frozen_refusal(freeze, manifest)):
            moved = evaluator_change(rd.path, freeze.evaluator_digest, identity.evaluator_digest)
            raise UsageError(f"{rd.path}: {why}{moved}; amend the protocol in another --results directory")
        bind_protocol(rd.path, identity, has_runs=rd.runs.exists() and rd.runs.stat().st_size > 0)
        protocol = identity.protocol_hash  # what every record carries
        for p in prepared.values():
            rd.store_dump(p.before, copy_from=sandbox.dbs.cache_path(p.template.name))
        plans = [
            p
            for p in expand(list(agents), [t.id for t in tasks], list(by_name), k, fault_cells, request.order)
            if not (by_name[p.condition].adversarial and p.task in unattackable)
        ]
        for task_id in sorted(unattackable):
            say(f"task {task_id} cannot be attacked (no injected goal acts through its tools): left out")
        if request.plan:  # the preregistered matrix is on disk; nothing runs until the protocol is frozen
            return AuditOutcome(request, rd, protocol, len(plans), 0, [], 0.0, {})
        # What the runs execute on, observed from its sources; a resume on a drifted environment stops.
        env_policy = load_policy().environment
        write_execution_environment(results, observe_environment(sandbox, env_policy), env_policy)
        attempts = rd.attempts()
        lost = rd.lost_evidence(attempts)
        if lost:
            first, why = next(iter(lost.items()))
            # Not run again: the first valid attempt is final, and a second draw would be a re-roll.
            say(
                f"{len(lost)} recorded run(s) lost their evidence (first: {first}: {why}); their records "
                "still count in analysis, but they cannot be published (evidence_lost): restore the files "
                "from a backup, or audit again into a new --results directory"
            )
        finished = rd.finished(request.max_attempts, attempts)
        pending = [(p, len(attempts.get(p.run_id, [])) + 1) for p in plans if p.run_id not in finished]
        skipped = len(plans) - len(pending)
        if request.limit is not None:
            pending = pending[: request.limit]
        gate = None
        if stopping is not None:  # resume: the cells' counts so far decide what still runs
            gate = CellGate(stopping, k)
            gate.seed(attempts.values())
        frozen_by = freeze_digest(freeze) if freeze is not None else None
        recipe = recipe.model_copy(update={"protocol_hash": protocol, "frozen_by": frozen_by})
        ctx = build_context(
            recipe,
            sandbox,
            tasks=tasks,
            prepared=prepared,
            agents=agents,
            receipts=rd.receipts,
            catalogue=catalogue,
        )
        with ProgressManager(len(plans), skipped, enabled=show_progress) as progress:
            bases = {tid: p.before for tid, p in prepared.items()}
            new: list[RunRecord] = []
            if pending:
                slots = executor(recipe, ctx, request.concurrency)
                if isinstance(slots, LocalExecutor):  # a Ray slot sizes its own sandbox (executors/slot.py)
                    size_server(sandbox.server, slots.slots, say)
                try:
                    new = asyncio.run(
                        until_terminated(
                            run_matrix(slots, rd, bases, pending, request.max_attempts, progress, gate)
                        )
                    )
                finally:
                    rd.note_slots(slots.facts())
            rate = progress.runs_per_second
    finally:
        try:  # however the invocation ends: its records' chain head, anchored (publication/registry_journal)
            if not request.plan:
                anchor_run_journal(rd.path)
        except UserError as exc:  # every record is kept; the next invocation anchors them all
            say(f"the run journal was not anchored in the registry ({exc}); the same command anchors it")
        finally:
            rd.close()
    return AuditOutcome(request, rd, protocol, len(plans), skipped, new, rate, lost, gate)


# --- SIGTERM while runs are in flight (issue 25) ------------------------------------------------------

T = TypeVar("T")


async def until_terminated(work: Coroutine[Any, Any, T]) -> T:
    """`work`, stopped by SIGTERM the way asyncio stops a run on SIGINT: the task is cancelled (each run in
    flight drops its database; nothing half-run is recorded), then KeyboardInterrupt is raised, which the
    CLI reports as an interruption. Installed only in the main thread and where SIGTERM is not ignored;
    the previous handler is put back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        return await work
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_IGN:
        return await work
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    terminated = False

    def terminate() -> None:
        nonlocal terminated
        terminated = True
        task.cancel()

    loop.add_signal_handler(signal.SIGTERM, terminate)
    try:
        return await work
    except asyncio.CancelledError:
        if terminated:
            raise Terminated from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        if previous is not None:  # None: a handler set outside Python, which cannot be put back
            signal.signal(signal.SIGTERM, previous)


class Terminated(KeyboardInterrupt):
    """SIGTERM stopped the runs: handled as an interruption (Ctrl-C) is."""
