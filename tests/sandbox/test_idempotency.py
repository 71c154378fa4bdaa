"""Idempotency keys on a real run database (sandbox/tools/idempotency.py): the first answer for a retried
key, nothing written twice, a reused key refused, keys per run database, and the bookkeeping never in a
dump or a diff."""

from __future__ import annotations

import pytest

from agentrel.dsl.diff import diff
from agentrel.sandbox.dump import dump_database
from agentrel.sandbox.environments.enterprise.schema import table_infos
from agentrel.sandbox.environments.enterprise.tools import all_tools
from agentrel.sandbox.tools import ToolBox
from agentrel.sandbox.tools.idempotency import KEY, honouring_keys


@pytest.fixture()
def run_dbs(sandbox):
    tpl = sandbox.seed_template()
    names = [sandbox.dbs.create_run(tpl), sandbox.dbs.create_run(tpl)]
    yield names
    for name in names:
        sandbox.dbs.drop(name)


def box(sandbox, run_db: str) -> ToolBox:
    return ToolBox(sandbox.dbs.tool_conninfo(run_db), all_tools(), acting_user_id=1)


def refunds(tb: ToolBox, payment_id: int) -> list[dict]:
    found = tb.call("list_refunds", {"payment_id": payment_id})
    assert found.ok, found.content
    return found.content["items"]


REFUND = {"payment_id": 1, "amount": "10.00", "reason": "goodwill"}


def test_only_write_tools_show_the_optional_key_and_a_read_tool_refuses_it(sandbox, run_dbs):
    tools = all_tools()
    for tool in tools.values():
        shown = KEY in tool.parameters["properties"]
        assert shown == tool.mutates == tool.idempotent, tool.name
        assert KEY not in tool.parameters.get("required", [])
    with box(sandbox, run_dbs[0]) as tb:
        read = tb.call("list_refunds", {"payment_id": 1, KEY: "k"})
        assert not read.ok and "unknown field(s) idempotency_key" in read.content["error"]
    with pytest.raises(ValueError, match="read tool"):
        honouring_keys(tools["list_refunds"])


def test_a_retried_key_returns_the_first_answer_and_writes_nothing(sandbox, run_dbs):
    with box(sandbox, run_dbs[0]) as tb:
        before = refunds(tb, 1)
        first = tb.call("issue_refund", {**REFUND, KEY: "refund-1"})
        again = tb.call("issue_refund", {**REFUND, KEY: "refund-1"})
        assert first.ok and not first.replayed
        assert again.ok and again.replayed and again.text() == first.text()
        after = refunds(tb, 1)
        assert len(after) == len(before) + 1 and after[-1]["id"] == first.content["refunded"]["id"]
        # Without a key the same call acts again: keys are the agent's to give.
        tb.call("issue_refund", REFUND)
        assert len(refunds(tb, 1)) == len(before) + 2


def test_the_same_key_for_another_call_is_refused_not_answered_with_the_first(sandbox, run_dbs):
    with box(sandbox, run_dbs[0]) as tb:
        n0 = len(refunds(tb, 1))
        assert tb.call("issue_refund", {**REFUND, KEY: "k"}).ok
        other = tb.call("issue_refund", {**REFUND, "amount": "99.00", KEY: "k"})
        assert not other.ok and not other.replayed
        assert other.content["error"] == (
            'idempotency_key "k" was first used for a different call (other arguments); '
            "give each action its own key"
        )
        tool = tb.call("issue_credit", {"account_id": 1, "amount": "10.00", "reason": "x", KEY: "k"})
        assert not tool.ok and "(another tool)" in tool.content["error"]
        assert len(refunds(tb, 1)) == n0 + 1 and not [r for r in refunds(tb, 1) if r["amount"] == "99.00"]
        blank = tb.call("issue_refund", {**REFUND, KEY: "  "})
        assert not blank.ok and "must be a non-empty string" in blank.content["error"]


def test_keys_are_per_run_database(sandbox, run_dbs):
    with box(sandbox, run_dbs[0]) as a, box(sandbox, run_dbs[1]) as b:
        n0 = len(refunds(b, 1))
        first = a.call("issue_refund", {**REFUND, KEY: "shared"})
        other = b.call("issue_refund", {**REFUND, KEY: "shared"})
        assert first.ok and other.ok and not other.replayed  # the other run never saw the key
        assert len(refunds(b, 1)) == n0 + 1


def test_the_key_store_is_never_dumped_nor_diffed(sandbox, run_dbs):
    infos = table_infos()
    conninfo = sandbox.server.conninfo(run_dbs[0])
    before = dump_database(conninfo, infos.values())
    with box(sandbox, run_dbs[0]) as tb:
        assert tb.call("issue_refund", {**REFUND, KEY: "k"}).ok
        assert tb.call("issue_refund", {**REFUND, KEY: "k"}).replayed
    after = dump_database(conninfo, infos.values())
    assert set(after.tables) == set(infos)
    changes = diff(before, after)
    assert [(c.table, c.kind) for c in changes] == [("refunds", "insert")]
