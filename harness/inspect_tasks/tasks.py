"""One Inspect `Task` per AgentRel task: its prompts as the sample, the MCP-backed run as the solver,
the state-diff verdict as the scorer."""

from __future__ import annotations

import os

from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser

from agentrel.harness.agents.base import DEFAULT_MAX_STEPS
from agentrel.harness.conditions.model import resolve_condition
from agentrel.harness.errors import UsageError
from agentrel.harness.inspect_tasks.run import mcp_run
from agentrel.harness.inspect_tasks.score import state_diff_verdict
from agentrel.harness.tasks import Task as SuiteTask
from agentrel.harness.tasks import load_suite
from agentrel.sandbox.environments import registry
from agentrel.sandbox.environments.contract import Environment

NAMESPACE = "agentrel"
# AgentRel's step budget in Inspect's terms: the two prompts, then a model turn and its tool result per step.
MESSAGE_LIMIT = 2 + 2 * DEFAULT_MAX_STEPS


def inspect_environment() -> Environment:
    """The environment of the tasks Inspect is offered. Inspect loads this package as its entry point,
    so, as the CLI's `--env` does, it takes AGENTREL_ENV from the process it runs in (default: the
    built-in); the MCP server each run starts inherits the same variable."""
    return registry.from_environ(os.environ)


def suite_task(task_id: str) -> SuiteTask:
    chosen = [t for t in load_suite(patterns=[task_id], env=inspect_environment()) if t.id == task_id]
    if not chosen:
        raise UsageError(f"no AgentRel task {task_id!r}; `agentrel tasks list` names them")
    return chosen[0]


def agentrel_task(task_id: str, condition: str = "clean") -> Task:
    """The Inspect task for one AgentRel task under one condition (clean, noisy or a condition YAML)."""
    t = suite_task(task_id)
    declared = resolve_condition(condition)
    if declared.adversarial is not None:  # as `agentrel mcp serve` says: not over MCP yet
        raise UsageError("condition: the adversarial condition is not available over MCP yet")
    sample = Sample(
        id=t.id,
        input=[ChatMessageSystem(content=t.system_prompt), ChatMessageUser(content=t.user_prompt)],
        metadata={"task": t.id, "title": t.title, "lever": t.lever, "condition": declared.name},
    )
    return Task(
        dataset=[sample],
        solver=mcp_run(t.id, condition),
        scorer=state_diff_verdict(),
        message_limit=MESSAGE_LIMIT,
        metadata={"agentrel_task": t.id, "condition": declared.name},
    )
