"""Withholding a tool call's commit (sandbox/tools/withhold.py), on a real run database: the tool's own
answer, and nothing it wrote committed (`all`), or only its first writing statement (`after-first-write`),
whatever path its statements took (`execute`, a cursor)."""

from __future__ import annotations

from typing import Any

import pytest

from agentrel.sandbox.environments.enterprise.tools import all_tools
from agentrel.sandbox.tools import Tool, ToolBox, ToolContext
from agentrel.sandbox.tools.base import obj
from agentrel.sandbox.tools.idempotency import KEY, honouring_keys

REFUND = {"payment_id": 1, "amount": "10.00", "reason": "goodwill"}
NOTE = (
    "INSERT INTO work_notes (record_table, record_id, author_id, note, created_at) VALUES (%s, 1, 1, %s, %s)"
)


def three_notes(ctx: ToolContext, args: dict[str, Any]) -> Any:
    """Three writing statements, the second through a cursor, reads between them."""
    at = "2026-03-02T09:00:00Z"
    ctx.conn.execute(NOTE, ("incidents", f"{args['tag']} one", at))
    ctx.conn.execute("SELECT count(*) FROM work_notes")
    with ctx.conn.cursor() as cur:
        cur.execute(NOTE, ("incidents", f"{args['tag']} two", at))
    ctx.conn.execute("UPDATE work_notes SET note = note WHERE false")  # writes no row: not a write
    ctx.conn.execute(NOTE, ("incidents", f"{args['tag']} three", at))
    return {"written": 3}


TOOLS = {
    **all_tools(),
    "three_notes": honouring_keys(
        Tool(
            "three_notes", "test", obj({"tag": {"type": "string"}}, ["tag"]), "reversible-write", three_notes
        ),
    ),
}


@pytest.fixture()
def box(sandbox):
    name = sandbox.dbs.create_run(sandbox.seed_template())
    with ToolBox(sandbox.dbs.tool_conninfo(name), TOOLS, acting_user_id=1) as tb:
        yield tb
    sandbox.dbs.drop(name)


def notes(tb: ToolBox, tag: str) -> list[str]:
    found = tb.call("list_work_notes", {"record_table": "incidents", "record_id": 1, "limit": 50})
    return [n["note"] for n in found.content["items"] if n["note"].startswith(tag)]


def refunds(tb: ToolBox) -> int:
    return tb.call("list_refunds", {"payment_id": 1}).content["total"]


def test_withheld_whole_the_answer_is_the_tools_and_nothing_commits_not_even_the_key(box):
    n0 = refunds(box)
    lie = box.call("issue_refund", {**REFUND, KEY: "k"}, withhold="all")
    assert lie.ok and lie.withheld and lie.kept == 0 and lie.content["refunded"]["amount"] == "10.00"
    assert refunds(box) == n0  # the truth: nothing was refunded
    real = box.call("issue_refund", {**REFUND, KEY: "k"})
    assert real.ok and not real.replayed and not real.withheld  # the key was left free
    assert refunds(box) == n0 + 1
    # A withheld call that wrote nothing withheld nothing; a failed one is a plain error.
    read = box.call("list_refunds", {"payment_id": 1}, withhold="all")
    assert read.ok and not read.withheld
    bad = box.call("issue_refund", {**REFUND, "payment_id": 10**9}, withhold="all")
    assert not bad.ok and not bad.withheld


def test_cut_after_the_first_write_keeps_exactly_the_first_writing_statement(box):
    cut = box.call("three_notes", {"tag": "a", KEY: "k"}, withhold="after-first-write")
    assert cut.ok and cut.withheld and cut.kept == 1 and cut.content == {"written": 3}
    assert notes(box, "a") == ["a one"]  # the cursor's write and the last one rolled back
    # The call committed (partly), so its key is taken: a retry with it is answered, not redone.
    again = box.call("three_notes", {"tag": "a", KEY: "k"})
    assert again.replayed and notes(box, "a") == ["a one"]
    # Without withholding, every statement commits.
    assert box.call("three_notes", {"tag": "b"}).ok and notes(box, "b") == ["b one", "b two", "b three"]


def test_a_call_with_one_writing_statement_has_nothing_to_cut_and_is_withheld_whole(box):
    n0 = refunds(box)
    lie = box.call("issue_refund", REFUND, withhold="after-first-write")
    assert lie.ok and lie.withheld and lie.kept == 0 and refunds(box) == n0
