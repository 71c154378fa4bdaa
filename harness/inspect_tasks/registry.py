"""The `inspect_ai` entry point: registers `agentrel/<task id>` for every task of the suite.

Inspect namespaces a task by the installed package its function's module belongs to, which for
AgentRel's modules is `harness` (a wheel install) or nothing (an editable one). So each task function
is given a module name no package provides, and its registry name carries the `agentrel/` namespace
itself: the same name however AgentRel is installed.
"""

from __future__ import annotations

from collections.abc import Callable

from inspect_ai import Task, task

from agentrel.harness.inspect_tasks.tasks import NAMESPACE, agentrel_task
from agentrel.harness.tasks import load_suite


def task_function(task_id: str) -> Callable[..., Task]:
    def run(condition: str = "clean") -> Task:
        return agentrel_task(task_id, condition)

    run.__name__ = run.__qualname__ = task_id.replace("-", "_")
    run.__doc__ = f"AgentRel task {task_id}: tools over MCP, scored by the state-diff verdict."
    run.__module__ = NAMESPACE
    registered: Callable[..., Task] = task(name=f"{NAMESPACE}/{task_id}")(run)
    return registered


TASKS = {t.id: task_function(t.id) for t in load_suite()}
