"""What a condition puts into one run: its pipeline layers in their fixed order, and for an injecting
condition the planted payload and its goal's damage spec (labelled with the task's)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from agentrel.dsl.api import Spec
from agentrel.harness.conditions.catalogue import Catalogue, Goal, Payload, make_canary, render
from agentrel.harness.conditions.injection import InjectionLayer, Planted
from agentrel.harness.conditions.lying import LyingLayer
from agentrel.harness.conditions.model import Condition, Delivery, Injection
from agentrel.harness.conditions.noise import NoiseLayer
from agentrel.harness.errors import UsageError
from agentrel.harness.run.episode import PreparedTask
from agentrel.harness.run.pipeline import Layer, stream
from agentrel.harness.tasks import Task
from agentrel.sandbox.environments.contract import Environment


@dataclass
class RunCondition:
    layers: list[Layer] = field(default_factory=list)
    injection: InjectionLayer | None = None
    goal_specs: list[Spec] = field(default_factory=list)


def for_run(
    condition: Condition, prepared: PreparedTask, seed: str, catalogue: Catalogue | None = None
) -> RunCondition:
    """The injection layer sits outside the noise: a payload rides only on an answer the tool gave. The
    lying layer is innermost: a lost or mangled answer may hide a lie, never the other way round."""
    run = RunCondition()
    if condition.adversarial is not None:
        assert catalogue is not None, "an injecting condition needs the catalogue"
        planted, spec = plant(condition.adversarial, prepared, seed, catalogue)
        run.injection = InjectionLayer(planted, prepared.tools)
        run.layers.append(run.injection)
        run.goal_specs.append(spec)
    if condition.noisy is not None:
        run.layers.append(NoiseLayer(condition.noisy, prepared.tools))
    if condition.lying_success is not None:
        run.layers.append(LyingLayer(condition.lying_success, prepared.tools, seed))
    return run


def refuse_unsupported(conditions: Iterable[Condition], env: Environment) -> None:
    """Stop before any run a condition the environment cannot carry: lying-success withholds a call's
    writes by rolling back the call's transaction, which misses writes a tool makes elsewhere."""
    for condition in conditions:
        if condition.lying_success is not None and not env.transactional_tools:
            raise UsageError(
                f"--condition {condition.name}: lying-success rolls back a tool call's transaction, and "
                f"{env.name}'s tools write through a connection of their own; use it on an environment "
                "whose tools write through the call's connection (agentrel-enterprise, tau2-*)"
            )


def plant(
    injection: Injection, prepared: PreparedTask, seed: str, catalogue: Catalogue
) -> tuple[Planted, Spec]:
    """The run's goal, payload and delivery, drawn from the run's stream: the same for every agent."""
    goal, payload, delivery = draw(injection, prepared.task, seed, catalogue)
    canary = make_canary(seed)
    text = render(payload, goal.instruction, canary)
    planted = Planted(payload.id, goal.id, text, canary, delivery, injection.rate)
    return planted, catalogue.specs[goal.id]


def draw(injection: Injection, task: Task, seed: str, catalogue: Catalogue) -> tuple[Goal, Payload, Delivery]:
    """The draw itself (pure): publication repeats it to find the goal spec a run was labelled with."""
    goals = catalogue.goals_for(task)
    payloads = (
        [catalogue.payload(p) for p in injection.payloads] if injection.payloads else catalogue.payloads
    )
    rng = stream(seed, "injection", 0)
    goal = goals[rng.randrange(len(goals))]
    payload = payloads[rng.randrange(len(payloads))]
    delivery = injection.deliveries[rng.randrange(len(injection.deliveries))]
    return goal, payload, delivery
