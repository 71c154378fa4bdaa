"""The recipe of an audit's runs: the request plus what the driver resolved from it (plain data), from
which any executor slot rebuilds the `RunContext` on its own sandbox (this process's, or a Ray actor's on
another machine). No secret is in it: a slot reads API keys from its own environment, as the driver does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

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
from agentrel.harness.run.request import AuditRequest
from agentrel.harness.run.runner import RunContext
from agentrel.harness.tasks import Task, load_suite
from agentrel.sandbox.sandbox import Sandbox


class RunRecipe(BaseModel):
    """The request and what the driver resolved from it before the first run: what every slot needs."""

    model_config = ConfigDict(frozen=True)

    request: AuditRequest
    conditions: list[Condition]  # the request's conditions read (the clean twin added under faults)
    programs: list[ExternalSpec] = []  # the request's agent programs, each blind to the results directory
    model_meta: dict[str, Any] = {}  # the request's --model-meta file, read
    schedule: ResolvedSchedule | None = None
    protocol_hash: str = ""
    frozen_by: str | None = None  # the digest of the protocol freeze the runs are recorded under
    run_timeout_s: float = 1800.0


def resolve_agents(recipe: RunRecipe) -> dict[str, Agent]:
    request = recipe.request
    agents: dict[str, Agent] = {}
    programs = {spec.subject: spec for spec in recipe.programs}
    for name in request.subjects:
        if name == request.session:  # a person's live session: served by the driver, never rebuilt
            continue
        try:
            agents[name] = agent = (
                ExternalAgent(programs[name]) if name in programs else resolve_agent(name, request.sampling)
            )
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        # Model subjects' options (--model-timeout, --model-alias, --model-meta), applied through each
        # adapter's `configure` hook; agents without the hook (scripted, reference) have none of them.
        configure = getattr(agent, "configure", None)
        if configure is not None:
            model = getattr(agent, "model", None)
            aliases = [served for asked, served in request.model_aliases if asked in (name, model)]
            configure(timeout_s=request.model_timeout_s, aliases=aliases, declared=recipe.model_meta)
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
    tasks = tasks if tasks is not None else load_suite(patterns=list(recipe.request.tasks), env=env)
    prepared = prepared if prepared is not None else {t.id: prepare(sandbox, t) for t in tasks}
    by_name = {c.name: c for c in recipe.conditions}
    if catalogue is None and any(c.adversarial for c in recipe.conditions):
        catalogue = load_catalogue(env=env)

    def conditions(plan: RunPlan) -> RunCondition:
        return for_run(by_name[plan.condition], prepared[plan.task], plan.seed, catalogue)

    return RunContext(
        recipe,
        sandbox,
        prepared,
        agents if agents is not None else resolve_agents(recipe),
        load_prices(recipe.request.prices, env),
        conditions=conditions,
        receipts=receipts,
    )
