"""The recipe of an audit's runs: plain data from which any executor slot rebuilds the `RunContext` on
its own sandbox (this process's, or a Ray actor's on another machine). No secret is in it: a slot reads
API keys from its own environment, as the driver does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from agentrel.harness import defaults
from agentrel.harness.agents import ConfigError, resolve_agent
from agentrel.harness.agents.base import Agent
from agentrel.harness.agents.external import ExternalAgent, ExternalSpec
from agentrel.harness.conditions.catalogue import Catalogue, load_catalogue
from agentrel.harness.conditions.layers import RunCondition, for_run
from agentrel.harness.conditions.model import Condition
from agentrel.harness.errors import UsageError
from agentrel.harness.faults.schedule import ResolvedSchedule
from agentrel.harness.prices import load_prices
from agentrel.harness.run.episode import PreparedTask, prepare
from agentrel.harness.run.matrix import RunPlan
from agentrel.harness.run.runner import RunContext
from agentrel.harness.tasks import Task, load_suite
from agentrel.sandbox.sandbox import Sandbox


class RunRecipe(BaseModel):
    model_config = ConfigDict(frozen=True)

    models: list[str]
    sampling: dict[str, Any]
    task_patterns: list[str] | None
    conditions: list[Condition]
    protocol_hash: str = ""
    prices_path: str | None = None
    max_steps: int = defaults.MAX_STEPS
    run_timeout_s: float = 1800.0
    schedule: ResolvedSchedule | None = None
    fault_timeout_s: float = defaults.FAULT_TIMEOUT_S
    frozen_by: str | None = None  # the digest of the protocol freeze the runs are recorded under
    # External agent programs (`audit --agent`), by subject name `agent/<NAME>`, which `models` also lists.
    external: list[ExternalSpec] = []
    # Model subjects' options (--model-timeout, --model-alias, --model-meta), applied through each
    # adapter's `configure` hook; agents without the hook (scripted, reference) have none of them.
    model_timeout_s: float | None = None
    model_aliases: list[tuple[str, str]] = []  # (asked, served): a served id the user accepts
    model_meta: dict[str, Any] = {}


def resolve_agents(recipe: RunRecipe) -> dict[str, Agent]:
    agents: dict[str, Agent] = {}
    programs = {spec.subject: spec for spec in recipe.external}
    for name in dict.fromkeys(recipe.models):
        try:
            agents[name] = agent = (
                ExternalAgent(programs[name]) if name in programs else resolve_agent(name, recipe.sampling)
            )
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        configure = getattr(agent, "configure", None)
        if configure is not None:
            model = getattr(agent, "model", None)
            aliases = [served for asked, served in recipe.model_aliases if asked in (name, model)]
            configure(timeout_s=recipe.model_timeout_s, aliases=aliases, declared=recipe.model_meta)
    return agents


def build_context(
    recipe: RunRecipe,
    sandbox: Sandbox,
    *,
    tasks: list[Task] | None = None,
    prepared: dict[str, PreparedTask] | None = None,
    agents: dict[str, Agent] | None = None,
    receipts: Path | None = None,
    catalogue: Catalogue | None = None,
) -> RunContext:
    """The slot's context; the driver passes what it already built, a remote slot builds all of it."""
    env = sandbox.env  # the environment is the sandbox's: its suite, catalogue and prices
    tasks = tasks if tasks is not None else load_suite(patterns=recipe.task_patterns, env=env)
    prepared = prepared if prepared is not None else {t.id: prepare(sandbox, t) for t in tasks}
    by_name = {c.name: c for c in recipe.conditions}
    if catalogue is None and any(c.adversarial for c in recipe.conditions):
        catalogue = load_catalogue(env=env)

    def conditions(plan: RunPlan) -> RunCondition:
        return for_run(by_name[plan.condition], prepared[plan.task], plan.seed, catalogue)

    return RunContext(
        sandbox,
        prepared,
        agents if agents is not None else resolve_agents(recipe),
        recipe.protocol_hash,
        load_prices(Path(recipe.prices_path) if recipe.prices_path else None, env),
        recipe.max_steps,
        recipe.run_timeout_s,
        conditions=conditions,
        schedule=recipe.schedule,
        receipts=receipts,
        fault_timeout_s=recipe.fault_timeout_s,
        frozen_by=recipe.frozen_by,
    )
