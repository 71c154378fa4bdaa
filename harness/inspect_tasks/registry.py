"""The `inspect_ai` entry point: registers `agentrel/<task id>` for every task of the suite.

Inspect prefixes a registered task with the import package its function's module belongs to, but only
when it can tell that package is installed: from site-packages (a wheel), or as an editable install of a
distribution named like the import package. AgentRel's distribution is `agentrel-audit` (`agentrel` on
PyPI is another project), so from a checkout (`pip install -e .`) Inspect would register the bare task
id. The namespace is therefore given here whenever Inspect would not add it, asked of the very function
Inspect's registry asks, so a task is `agentrel/<task id>` however AgentRel is installed, never
`agentrel/agentrel/...`. Inspect finds this module by the entry point's name, `agentrel`
(pyproject's `[project.entry-points.inspect_ai]`), which is what it reads from `agentrel/<task id>`.
"""

from __future__ import annotations

from collections.abc import Callable

from inspect_ai import Task, task

# Private to Inspect, and the exact rule its `registry_name` applies; `make test-inspect` runs
# `inspect eval agentrel/<task>` and checks every registered name, so a change in it shows there.
from inspect_ai._util.package import get_installed_package_name

from agentrel.harness.inspect_tasks.tasks import NAMESPACE, agentrel_task, inspect_environment
from agentrel.harness.tasks import load_suite


def registered_name(function: Callable[..., Task], task_id: str) -> str:
    """The name to register `function` under so that Inspect's registry calls it `agentrel/<task id>`."""
    # Inspect prefixes the package it finds installed (ours: `agentrel`); found none, the name carries it.
    return task_id if get_installed_package_name(function) else f"{NAMESPACE}/{task_id}"


def task_function(task_id: str) -> Callable[..., Task]:
    def run(condition: str = "clean") -> Task:
        return agentrel_task(task_id, condition)

    run.__name__ = run.__qualname__ = task_id.replace("-", "_")
    run.__doc__ = f"AgentRel task {task_id}: tools over MCP, scored by the state-diff verdict."
    run.__module__ = __name__
    registered: Callable[..., Task] = task(name=registered_name(run, task_id))(run)
    return registered


TASKS = {t.id: task_function(t.id) for t in load_suite(env=inspect_environment())}
