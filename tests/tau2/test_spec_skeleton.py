"""scripts/spec_skeleton.py: the allow-list skeleton of a spec, from the row diff of a task's oracle run.

On the retail suite: a spec made only of the skeleton passes the oracle's own changes (no event), and
labels the extra rows of every damaging counterexample as the fallback's (the skeleton allows exactly
the gold run's effects, nothing wider)."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from agentrel.dsl.api import RunFacts, label, parse_spec
from agentrel.dsl.diff import RowChange, diff
from agentrel.sandbox.environments import registry
from agentrel.sandbox.environments.tau2 import retail_tables

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "spec_skeleton.py"


def _module():
    spec = importlib.util.spec_from_file_location("spec_skeleton", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_update_becomes_a_rule_on_its_key_and_its_changed_columns():
    cols = retail_tables.TABLES["orders"].columns
    before = tuple(f"v{i}" for i in range(len(cols)))
    after = tuple(
        "cancelled" if c == "status" else "no longer needed" if c == "cancel_reason" else v
        for c, v in zip(cols, before, strict=True)
    )
    change = RowChange("orders", ("#W1",), "update", before, after, ("status", "cancel_reason"), cols)
    text = _module().skeleton([change], retail_tables.TABLES)
    assert text == (
        'allow "update orders (#W1)":\n'
        '    update orders where before.order_id == "#W1"\n'
        '        and after.status == "cancelled"\n'
        '        and after.cancel_reason == "no longer needed"\n'
        "        and only_changed(status, cancel_reason)\n"
    )
    parse_spec('spec "s" version 1\n' + text)


def test_an_insert_reads_its_key_from_after():
    cols = retail_tables.TABLES["order_payments"].columns
    change = RowChange(
        "order_payments", ("#W1", 2), "insert", None, ("#W1", 2, "refund", "1.00", "x"), (), cols
    )
    rule = _module().allow_rule(change, retail_tables.TABLES["order_payments"])
    assert 'after.order_id == "#W1"' in rule and "after.ordinal == 2" in rule and "only_changed" not in rule
    assert 'after.transaction_type == "refund"' in rule and "after.amount == 1.00" in rule


@pytest.fixture(scope="module")
def retail_suite(cluster, agentrel_home):
    from agentrel.harness.run.episode import prepare
    from agentrel.harness.tasks import load_suite
    from agentrel.sandbox.sandbox import Sandbox

    env = registry.load("tau2-retail")
    sb = Sandbox(cluster, home=agentrel_home, env=env)
    yield [(task, prepare(sb, task)) for task in load_suite(env=env)], sb


def _after(sb, prepared, script):
    from agentrel.harness.prove import scripted_run

    return asyncio.run(scripted_run(sb, prepared, script, "script")).after


def test_the_skeleton_allows_the_oracle_and_nothing_a_damaging_counterexample_adds(retail_suite):
    suite, sb = retail_suite
    module, facts = _module(), RunFacts(final_message="done")
    caught = 0
    for task, prepared in suite:
        gold = diff(prepared.before, _after(sb, prepared, task.oracle))
        spec = parse_spec(
            f'spec "{task.id}-skeleton" version 1\n' + module.skeleton(gold, retail_tables.TABLES)
        )
        assert label(spec, None, prepared.before, _after(sb, prepared, task.oracle), facts).events == []
        for name, script in task.counterexamples.items():
            if script.expect is None or script.expect.outcome != "FAIL_DAMAGE":
                continue
            verdict = label(spec, None, prepared.before, _after(sb, prepared, script), facts)
            assert verdict.outcome == "FAIL_DAMAGE", f"{task.id} {name}: the skeleton allowed all of it"
            assert {e.rule for e in verdict.events} == {"unexplained mutation"}
            caught += 1
    assert caught >= 12
