"""The `inspect_ai` entry point: registers `agentrel/<task id>` for every task of the suite.

Inspect namespaces a task by the installed package its function's module belongs to. Every AgentRel
module is in the one `agentrel` package, installed as a wheel or editable alike, so each task function
is given this module and its bare task id: Inspect adds the `agentrel/` namespace, the same however
AgentRel is installed.
"""

from __future__ import annotations

from collections.abc import Callable

from inspect_ai import Task, task

from agentrel.harness.inspect_tasks.tasks import agentrel_task, inspect_environment
from agentrel.harness.tasks import load_suite


def task_function(task_id: str) -> Callable[..., Task]:
    def run(condition: str = "clean") -> Task:
        return agentrel_task(task_id, condition)

    run.__name__ = run.__qualname__ = task_id.replace("-", "_")
    run.__doc__ = f"AgentRel task {task_id}: tools over MCP, scored by the state-diff verdict."
    run.__module__ = __name__
    registered: Callable[..., Task] = task(name=task_id)(run)
    return registered


TASKS = {t.id: task_function(t.id) for t in load_suite(env=inspect_environment())}
