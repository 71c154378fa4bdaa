"""The agent-facing tools on a real run database: results, paging, error paths, isolation, exports."""

import pytest

from sandbox.dump import dump_database
from sandbox.tools import ToolBox, all_tools


@pytest.fixture()
def run_db(sandbox):
    tpl = sandbox.seed_template()
    name = sandbox.dbs.create_run(tpl)
    yield name
    sandbox.dbs.drop(name)


@pytest.fixture()
def box(sandbox, run_db):
    with ToolBox(sandbox.server.conninfo(run_db), all_tools(), acting_user_id=1) as tb:
        yield tb


def test_every_tool_has_a_schema_a_description_and_a_reversibility_tag():
    tools = all_tools()
    assert len(tools) >= 100
    for tool in tools.values():
        assert tool.parameters["type"] == "object" and tool.description
        assert tool.reversibility in ("read", "reversible-write", "compensable", "irreversible")
        assert tool.openai_schema()["function"]["parameters"] is tool.parameters
        assert tool.anthropic_schema()["input_schema"] is tool.parameters
    assert tools["send_customer_email"].reversibility == "irreversible"
    assert tools["delete_incident"].reversibility == "irreversible"
    assert tools["list_incidents"].reversibility == "read"
    assert tools["create_invoice"].reversibility == "irreversible"  # no delete twin


def test_list_reports_total_and_pages_explicitly(box):
    first = box.call("list_incidents", {"state": "new", "limit": 5})
    assert first.ok
    total = first.content["total"]
    assert total > 5 and first.content["returned"] == 5 and first.content["next_offset"] == 5
    last = box.call("list_incidents", {"state": "new", "limit": 5, "offset": total - 2})
    assert last.content["returned"] == 2 and last.content["next_offset"] is None
    assert all(i["state"] == "new" for i in first.content["items"])


def test_get_by_number_and_money_comes_back_exact(box):
    inc = box.call("get_incident", {"number": "INC0001000"})
    assert inc.ok and inc.content["id"] == 1
    invoice = box.call("get_invoice", {"id": 1})
    assert isinstance(invoice.content["amount"], str) and "." in invoice.content["amount"]


@pytest.mark.parametrize(
    ("tool", "args", "fragment"),
    [
        ("get_incident", {"id": 99999999}, "no incident with id=99999999"),
        ("update_incident", {"id": 1, "colour": "red"}, "unknown field(s) colour"),
        ("update_incident", {"id": "one", "state": "new"}, "id must be integer"),
        ("create_contact", {"account_id": 1}, "missing required field(s)"),
        (
            "create_contact",
            {
                "account_id": 99999999,
                "first_name": "A",
                "last_name": "B",
                "email": "a@b",
                "phone": "1",
                "portal_role": "user",
            },
            "constraint violated",
        ),
        ("issue_refund", {"payment_id": 1, "amount": "lots", "reason": "x"}, "amount"),
        ("delete_entitlements_where", {"filters": {}}, "refusing to delete every row"),
        ("list_incidents", {"limit": 500}, "limit must be <= 50"),
        ("no_such_tool", {}, "unknown tool"),
    ],
)
def test_bad_calls_come_back_as_tool_errors(box, tool, args, fragment):
    result = box.call(tool, args)
    assert not result.ok
    assert fragment in result.content["error"]


def test_malformed_json_arguments_are_a_tool_error(box):
    result = box.call("list_incidents", '{"state": ')
    assert not result.ok and "not valid JSON" in result.content["error"]


def test_a_failed_call_rolls_back_and_the_next_call_works(box, sandbox, run_db):
    before = dump_database(sandbox.server.conninfo(run_db)).digest()
    assert not box.call("update_incident", {"id": 1, "priority": "high"}).ok
    assert dump_database(sandbox.server.conninfo(run_db)).digest() == before
    assert box.call("update_incident", {"id": 1, "priority": 1}).ok


def test_writes_touch_only_their_run_database(sandbox, box, run_db):
    tpl = sandbox.seed_template()
    other = sandbox.dbs.create_run(tpl)
    try:
        assert box.call("send_customer_email", {"contact_id": 3, "subject": "RMA", "body": "steps"}).ok
        assert box.call("delete_ci_relationship", {"id": 5}).ok
        assert dump_database(sandbox.server.conninfo(run_db)).digest() != tpl.digest
        assert dump_database(sandbox.server.conninfo(other)).digest() == tpl.digest
        assert dump_database(sandbox.server.conninfo(tpl.name)).digest() == tpl.digest
    finally:
        sandbox.dbs.drop(other)


def test_bulk_tools_report_what_they_touched(box):
    result = box.call(
        "update_cases_where", {"filters": {"queue_id": 2, "state": "open"}, "set": {"priority": 1}}
    )
    assert result.ok
    ids = result.content["ids"]
    assert result.content["updated"] == len(ids) > 0
    listed = box.call("list_cases", {"queue_id": 2, "state": "open", "limit": 50})
    assert sorted(c["id"] for c in listed.content["items"]) == ids[:50]
    assert all(c["priority"] == 1 for c in listed.content["items"])


def test_work_notes_are_written_as_the_acting_user(box):
    note = box.call("add_work_note", {"record_table": "incidents", "record_id": 3, "note": "checked"})
    assert note.ok and note.content["created"]["author_id"] == 1


def test_a_runaway_statement_is_cut_off_as_a_tool_error(sandbox, run_db):
    from sandbox.tools.base import Tool, obj

    def slow(ctx, args):
        ctx.conn.execute("SELECT pg_sleep(5)")

    tools = {"slow": Tool("slow", "sleeps", obj({}), "read", slow)}
    with ToolBox(sandbox.server.conninfo(run_db), tools, acting_user_id=1, call_timeout_s=0.2) as box:
        result = box.call("slow", {})
        assert not result.ok and "timed out" in result.content["error"]
        assert box.call("slow", {}).content == {"error": "the tool call timed out"}  # connection still usable
