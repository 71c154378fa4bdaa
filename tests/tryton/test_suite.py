"""The Tryton suite proved on the real ERP: every task's oracle passes and every counterexample gets its
expected label, the damage read from Tryton's own tables; and the conformance checks of `agentrel env
check` (replay, clock, read-only, isolation) hold on each task."""

from __future__ import annotations

import pytest

from agentrel.harness.env_check import check_seed, check_task
from agentrel.harness.run.episode import prepare
from agentrel.harness.tasks import load_suite


def _suite(sb):
    assert sb.env.name == "tryton-erp"
    return load_suite(env=sb.env)


def test_the_suite_has_tasks_of_both_verticals(tryton_sandbox) -> None:
    suite = _suite(tryton_sandbox)
    assert len(suite) >= 12
    assert {t.vertical for t in suite} == {"finance", "sales"}


def test_the_seed_check_holds(tryton_sandbox) -> None:
    """`env check`'s environment part: the seed built twice dumps equal (after the noise list), and
    every table in the diff has the primary key it declares. With the tasks' checks below, the whole of
    `agentrel env check tryton-erp`."""
    assert check_seed(tryton_sandbox) == []


def test_every_task_conforms_and_is_proved(tryton_sandbox) -> None:
    sb = tryton_sandbox
    problems = []
    for task in _suite(sb):
        problems += [str(p) for p in check_task(sb, prepare(sb, task))]
    assert problems == []


@pytest.mark.parametrize("tool", ["search_read"])
def test_read_tools_are_declared_read(tool: str) -> None:
    from agentrel.sandbox.environments.tryton.tools import TOOLS

    assert not TOOLS[tool].mutates
    assert all(t.mutates for n, t in TOOLS.items() if n != tool)
