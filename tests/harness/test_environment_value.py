"""The environment is a value handed down (`--env` → `Sandbox(env=)` → suite, prices, catalogue, tasks),
never state of the process: nothing in-process writes AGENTREL_ENV, and only entry points read it."""

from __future__ import annotations

import ast
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrel.harness.cli.main import app
from agentrel.harness.conditions.catalogue import load_catalogue
from agentrel.harness.prices import DEFAULT_TABLE, load_prices
from agentrel.harness.tasks import load_suite
from agentrel.sandbox.environments import registry

REPO = Path(__file__).resolve().parents[2]
AIRLINE = registry.load("tau2-airline")

# Where a process's AGENTREL_ENV may be read or written, each for its reason: the registry's two helpers
# (write into a child's variables, read at a child's entry point) and the entry points that call them.
READERS = {
    "sandbox/environments/registry.py",  # ENV_VAR, child_environ, from_environ
    "harness/cli/options.py",  # the CLI's --env option default (click's envvar)
    "harness/cli/env.py",  # `env list --env`: the same default, only marked, never refused
    "harness/faults/server.py",  # the tool server's main
    "harness/faults/process.py",  # writes the name into a spare's variables (child_environ)
    "harness/inspect_tasks/tasks.py",  # Inspect's entry point: the process Inspect runs in
}


def _code_mentions(path: Path) -> bool:
    """Whether the module's code (not its docstrings or comments) names AGENTREL_ENV or the registry's
    helpers that read or write it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == "AGENTREL_ENV":
            return True
        if isinstance(node, ast.Name | ast.Attribute):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name in {"ENV_VAR", "from_environ", "child_environ"}:
                return True
        if isinstance(node, ast.alias) and node.name in {"ENV_VAR", "from_environ", "child_environ"}:
            return True
    return False


def test_only_entry_points_and_the_registry_touch_the_variable():
    found = {
        str(p.relative_to(REPO))
        for layer in ("dsl", "sandbox", "harness", "analysis", "agentrel")
        for p in (REPO / layer).rglob("*.py")
        if "_suite" not in p.parts and _code_mentions(p)
    }
    assert found == READERS, "read the environment at an entry point and hand it down as a value"


def test_the_scan_sees_a_library_reader(tmp_path):
    """The negative: a library module reading the variable is what the scan above is for."""
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text('import os\nNAME = os.environ.get("AGENTREL_ENV")\n')
    assert _code_mentions(sneaky)
    quiet = tmp_path / "quiet.py"
    quiet.write_text('"""Mentions AGENTREL_ENV in prose only."""\n')
    assert not _code_mentions(quiet)


def test_the_registry_selects_nothing():
    assert not hasattr(registry, "select") and not hasattr(registry, "current")
    assert registry.child_environ("tau2-airline", {"X": "1"}) == {"X": "1", "AGENTREL_ENV": "tau2-airline"}
    assert registry.from_environ({}) is registry.default()
    assert registry.from_environ({"AGENTREL_ENV": "tau2-airline"}) is AIRLINE


def test_suite_prices_and_catalogue_are_the_given_environments():
    airline = load_suite(env=AIRLINE)
    builtin = load_suite()
    assert airline and {t.id for t in airline}.isdisjoint({t.id for t in builtin})
    assert all(t.spec_path.is_relative_to(AIRLINE.suite_root()) for t in airline)
    assert all(t.environment is AIRLINE for t in airline)
    assert {g.id for g in load_catalogue(env=AIRLINE).goals} >= {"cancel-reservation"}
    assert load_prices(env=AIRLINE) == load_prices(DEFAULT_TABLE)  # the airline keeps the default table
    assert "AGENTREL_ENV" not in os.environ


def test_a_task_keeps_the_suite_it_was_read_from(tmp_path, monkeypatch):
    """Task.spec_path once resolved through whichever environment (or AGENTREL_SUITE_DIR) was current at
    first access; a task now resolves its spec in the suite its file came from."""
    original = load_suite(env=AIRLINE)[0]
    copy = tmp_path / "suite"
    shutil.copytree(AIRLINE.suite_root(), copy)
    task = load_suite(copy / "tasks", env=AIRLINE)[0]
    assert task.id == original.id
    (copy / task.spec).write_text((copy / task.spec).read_text() + "\n# edited copy\n")
    monkeypatch.setenv("AGENTREL_SUITE_DIR", str(REPO))  # a later override moves no loaded task
    assert task.spec_path == copy / task.spec
    assert original.spec_path == AIRLINE.suite_root() / original.spec
    assert task.spec_digest() != original.spec_digest()


def test_the_cli_option_and_its_variable_name_the_environment():
    runner = CliRunner()
    by_option = runner.invoke(app, ["tasks", "list", "--json", "--env", "tau2-airline"])
    by_variable = runner.invoke(app, ["tasks", "list", "--json"], env={"AGENTREL_ENV": "tau2-airline"})
    builtin = runner.invoke(app, ["tasks", "list", "--json"], env={"AGENTREL_ENV": ""})
    assert by_option.exit_code == by_variable.exit_code == builtin.exit_code == 0, by_option.output
    assert by_option.output == by_variable.output != builtin.output
    assert "tau2-airline-" in by_option.output and "tau2-airline-" not in builtin.output
    assert "AGENTREL_ENV" not in os.environ  # parsing --env changed nothing of this process


def test_an_unknown_environment_is_one_usage_line():
    """Refused as the option is parsed (a UsageError: exit 2 through the CLI's main), before any task."""
    from agentrel.harness.errors import UsageError

    res = CliRunner().invoke(app, ["tasks", "list", "--env", "no-such-env"])
    assert isinstance(res.exception, UsageError)
    assert str(res.exception).startswith("--env: no environment named 'no-such-env'")


@pytest.mark.parametrize("env", ["tau2-airline", "agentrel-enterprise"])
def test_env_list_marks_the_chosen_one(env):
    res = CliRunner().invoke(app, ["env", "list"], env={"AGENTREL_ENV": env, "COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    marked = [line for line in res.output.splitlines() if "(selected)" in line]
    assert len(marked) == 1 and env in marked[0]
