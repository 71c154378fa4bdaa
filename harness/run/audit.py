"""`agentrel audit` as a library call: resolve the matrix, check the protocol, run what is pending."""

from __future__ import annotations

import asyncio
import gc
import math
import signal
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from agentrel.harness import defaults
from agentrel.harness.agents import ConfigError
from agentrel.harness.agents.base import Agent
from agentrel.harness.agents.external import ExternalSpec
from agentrel.harness.conditions.catalogue import load_catalogue
from agentrel.harness.conditions.model import BUILTIN as BUILTIN_CONDITIONS
from agentrel.harness.conditions.model import resolve_condition
from agentrel.harness.errors import EnvironmentFailure, UsageError, UserError
from agentrel.harness.executors import ExecutorFactory, LocalExecutor, local_executor
from agentrel.harness.executors.capacity import size_server
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
from agentrel.harness.run.episode import prepare
from agentrel.harness.run.matrix import ORDERS, Order, expand
from agentrel.harness.run.progress import ProgressManager
from agentrel.harness.run.recipe import RunRecipe, build_context, resolve_agents
from agentrel.harness.stopping import CellGate, StoppingRule
from agentrel.harness.tasks import load_suite
from agentrel.sandbox.environments.registry import DEFAULT
from agentrel.sandbox.sandbox import Sandbox

MAX_TEMPERATURE = 2.0  # the widest range any provider accepts


@dataclass
class AuditOutcome:
    results: ResultsDir
    protocol_hash: str
    planned: int
    skipped: int
    new: list[RunRecord]  # every attempt made by this invocation
    runs_per_second: float
    lost: dict[str, str]  # run id -> why its recorded evidence was unusable (it ran again)
    gate: CellGate | None = None  # --until: per-cell decisions and the runs they left unrun


def default_results_dir(
    models: list[str], k: int, task_patterns: list[str] | None, env: str = DEFAULT
) -> Path:
    """results/<models>-k<K>[-<tasks>], prefixed with the environment's name (`env`) when it is not the
    built-in one: the same audit on two environments is two protocols, so it needs two directories."""
    slug = "+".join(m.replace("/", "_") for m in models)
    scope = (
        "" if not task_patterns or task_patterns == ["*"] else "-" + "+".join(task_patterns).replace("*", "x")
    )
    return Path("results") / f"{'' if env == DEFAULT else env + '-'}{slug}-k{k}{scope}"


def audit(
    *,
    models: list[str],
    k: int,
    task_patterns: list[str] | None,
    concurrency: int,
    results: Path,
    sandbox: Sandbox,
    max_steps: int = defaults.MAX_STEPS,
    temperature: float = defaults.TEMPERATURE,
    prices_path: Path | None = None,
    conditions: list[str] | None = None,
    show_progress: bool = True,
    max_attempts: int = defaults.MAX_ATTEMPTS,
    say: Callable[[str], None] = lambda message: None,
    executor: ExecutorFactory = local_executor,
    faults: str | None = None,
    fault_timeout_s: float = defaults.FAULT_TIMEOUT_S,
    plan_only: bool = False,
    stopping: StoppingRule | None = None,
    external: list[ExternalSpec] | None = None,
    session: Agent | None = None,
    limit: int | None = None,
    # --- model subjects (issue 25): per-request timeout, served-id aliases, declared server facts, order
    model_timeout_s: float | None = None,
    model_aliases: list[tuple[str, str]] | None = None,
    model_meta: Path | None = None,
    order: Order = "run",
    error_budget: float | None = None,
) -> AuditOutcome:
    """`external`: agent programs (`--agent`); `session`: a person's MCP session recorded as a subject
    (`mcp serve --results`, this process's executor only); `limit`: attempt at most this many pending
    runs in this invocation (a session records one run at a time)."""
    env = sandbox.env  # [envvalue] the audit's environment, a value: suite, prices and catalogue are its
    declared = [resolve_condition(c) for c in dict.fromkeys(conditions or [defaults.CONDITION])]
    by_name = {c.name: c for c in declared}
    if len(by_name) != len(declared):
        raise UsageError("two --condition values declare the same name; give each condition its own name")
    if k < 1 or concurrency < 1 or max_attempts < 1:
        raise UsageError("--k, --concurrency and --max-attempts must be at least 1")
    if error_budget is not None and not (math.isfinite(error_budget) and 0 <= error_budget < 1):
        raise UsageError(
            "--error-budget is the most a cell's attempts may be errored, a share in [0, 1); "
            f"got {error_budget}"
        )
    if not (math.isfinite(temperature) and 0 <= temperature <= MAX_TEMPERATURE):
        raise UsageError(f"--temperature must lie in [0, {MAX_TEMPERATURE:g}], got {temperature}")
    sampling: dict[str, Any] = {"temperature": temperature}
    # --- external agent programs (`--agent`): subjects named agent/<NAME> beside the models ---
    # Never visible to an agent program, even inside a folder it is shown: this audit's results.
    external = [s.model_copy(update={"hidden": [*s.hidden, str(results.absolute())]}) for s in external or []]
    subjects = [spec.subject for spec in external]
    if len(set(subjects)) != len(subjects) or set(subjects) & set(models):
        raise UsageError("two --agent/--agent-file entries share a name; give each agent its own NAME")
    models = [*models, *subjects]
    if session is not None and session.name in models:
        raise UsageError(f"{session.name} is also named by --model or --agent")
    if not models and session is None:
        raise UsageError("nothing to audit: pass --model or --agent")
    # --- end external agents ---
    subject_options = model_subject_options(models, model_timeout_s, model_aliases or [], model_meta, order)
    recipe = RunRecipe(
        models=models,
        external=external,
        sampling=sampling,
        task_patterns=task_patterns,
        conditions=declared,
        prices_path=str(prices_path) if prices_path else None,
        max_steps=max_steps,
        **subject_options,
    )
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
    load_prices(prices_path, env)  # a bad price table stops the audit here, before anything is spent
    tasks = load_suite(patterns=task_patterns, env=env)  # [envvalue]
    schedule = None
    if faults is not None:
        tools = env.tools()
        by_task = {t.id: {n: tools[n] for n in t.tools if n in tools} for t in tasks}
        schedule = resolve(load_schedule(faults), by_task, source=faults)
        if "clean" not in by_name:  # every fault run is paired with its clean twin on the same seed
            declared.insert(0, BUILTIN_CONDITIONS["clean"])
            by_name = {c.name: c for c in declared}
            say("--faults: the clean condition joins the matrix (each fault run's twin, on the same seed)")
        recipe = recipe.model_copy(
            update={"schedule": schedule, "conditions": declared, "fault_timeout_s": fault_timeout_s}
        )
    catalogue = load_catalogue(env=env) if any(c.adversarial for c in declared) else None  # [envvalue]
    prepared = {t.id: prepare(sandbox, t) for t in tasks}
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
    # --until (issue 27): k becomes the most runs a cell can need, and the rule joins the protocol.
    if stopping is not None:
        fault_pairs = [(c.task, c.fault_id) for c in schedule.cells] if schedule is not None else []
        per_agent = {
            (p.task, p.cell_condition)
            for p in expand(list(agents)[:1], [t.id for t in tasks], list(by_name), 1, fault_pairs)
            if not (by_name[p.condition].adversarial and p.task in unattackable)
        }
        k = stopping.max_runs(len(per_agent), k)
    manifest = build_manifest(
        tasks=tasks,
        environment={"name": sandbox.env.name, "fingerprint": sandbox.env.fingerprint()},
        seed_digest=sandbox.seed_template().digest,
        template_digests={tid: p.template.digest for tid, p in prepared.items()},
        conditions=[c.model_dump(mode="json") for c in declared],
        injections=catalogue.digest if catalogue is not None else None,
        k=k,
        agents=[a.config() for a in agents.values()],
        sampling=sampling,
        server_version=sandbox.version(),
        max_steps=max_steps,
        max_attempts=max_attempts,
        faults=schedule.manifest_entry() if schedule is not None else None,
        excluded_cells=excluded,
        # Only with a rule, so audits without one keep their protocol hash.
        stopping=stopping.manifest_entry(len(per_agent)) if stopping is not None else None,
        error_budget=error_budget,  # only when set, so audits without one keep their protocol hash
    )
    rd = ResultsDir(results)
    rd.open()  # the writer's lock and a write probe, before anything is spent
    try:
        if rd.torn_bytes:
            say(
                f"cut a torn last line of {rd.runs} ({rd.torn_bytes} bytes): "
                "an attempt cut short, which runs again"
            )
        write_or_check(rd.manifest, manifest)
        identity = identity_of(manifest)
        freeze = load_freeze(rd.path)
        if freeze is not None and (why := frozen_refusal(freeze, manifest)):
            moved = evaluator_change(rd.path, freeze.evaluator_digest, identity.evaluator_digest)
            raise UsageError(f"{rd.path}: {why}{moved}; amend the protocol in another --results directory")
        bind_protocol(rd.path, identity, has_runs=rd.runs.exists() and rd.runs.stat().st_size > 0)
        protocol = identity.protocol_hash  # what every record carries
        for p in prepared.values():
            rd.store_dump(p.before, copy_from=sandbox.dbs.cache_path(p.template.name))
        fault_cells = [(c.task, c.fault_id) for c in schedule.cells] if schedule is not None else []
        plans = [
            p
            for p in expand(list(agents), [t.id for t in tasks], list(by_name), k, fault_cells, order)
            if not (by_name[p.condition].adversarial and p.task in unattackable)
        ]
        for task_id in sorted(unattackable):
            say(f"task {task_id} cannot be attacked (no injected goal acts through its tools): left out")
        if plan_only:  # the preregistered matrix is on disk; nothing runs until the protocol is frozen
            return AuditOutcome(rd, protocol, len(plans), 0, [], 0.0, {})
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
        finished = rd.finished(max_attempts, attempts)
        pending = [(p, len(attempts.get(p.run_id, [])) + 1) for p in plans if p.run_id not in finished]
        skipped = len(plans) - len(pending)
        if limit is not None:
            pending = pending[:limit]
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
                slots = executor(recipe, ctx, concurrency)
                if isinstance(slots, LocalExecutor):  # a Ray slot sizes its own sandbox (executors/slot.py)
                    size_server(sandbox.server, slots.slots, say)
                try:
                    new = asyncio.run(
                        until_terminated(run_matrix(slots, rd, bases, pending, max_attempts, progress, gate))
                    )
                finally:
                    rd.note_slots(slots.facts())
            rate = progress.runs_per_second
    finally:
        try:  # however the invocation ends: its records' chain head, anchored (publication/registry_journal)
            if not plan_only:
                anchor_run_journal(rd.path)
        except UserError as exc:  # every record is kept; the next invocation anchors them all
            say(f"the run journal was not anchored in the registry ({exc}); the same command anchors it")
        finally:
            rd.close()
    return AuditOutcome(rd, protocol, len(plans), skipped, new, rate, lost, gate)


# --- model subjects (issue 25) ------------------------------------------------------------------------


def model_subject_options(
    models: list[str],
    timeout_s: float | None,
    aliases: list[tuple[str, str]],
    meta: Path | None,
    order: str,
) -> dict[str, Any]:
    """The recipe's model-subject fields, each bad value one UsageError line naming the option."""
    from agentrel.harness.agents.model_meta import load_model_meta

    if order not in ORDERS:
        raise UsageError(f"--order must be one of {', '.join(ORDERS)}, got {order!r}")
    if timeout_s is not None and not (math.isfinite(timeout_s) and timeout_s > 0):
        raise UsageError(f"--model-timeout must be a positive number of seconds, got {timeout_s}")
    names = set(models) | {m.partition("/")[2] for m in models}
    for asked, served in aliases:
        if not asked or not served:
            raise UsageError(f"--model-alias {asked}={served}: give it as ASKED=SERVED (both non-empty)")
        if asked not in names:
            raise UsageError(
                f"--model-alias {asked}={served}: {asked!r} is not an audited model ({', '.join(models)})"
            )
    return {
        "model_timeout_s": timeout_s,
        "model_aliases": aliases,
        "model_meta": load_model_meta(meta) if meta is not None else {},
    }


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
