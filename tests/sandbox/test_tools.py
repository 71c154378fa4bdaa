"""The agent-facing tools on a real run database: results, paging, error paths, isolation, exports."""

import pytest

from agentrel.harness.agents.anthropic import AnthropicWire
from agentrel.harness.agents.openai import OpenAIWire
from agentrel.sandbox.dump import dump_database
from agentrel.sandbox.environments.enterprise.schema import table_infos
from agentrel.sandbox.environments.enterprise.tools import all_tools
from agentrel.sandbox.tools import ToolBox


@pytest.fixture()
def run_db(sandbox):
    tpl = sandbox.seed_template()
    name = sandbox.dbs.create_run(tpl)
    yield name
    sandbox.dbs.drop(name)


@pytest.fixture()
def box(sandbox, run_db):
    with ToolBox(sandbox.dbs.tool_conninfo(run_db), all_tools(), acting_user_id=1) as tb:
        yield tb


def test_every_tool_has_a_schema_a_description_and_a_reversibility_tag():
    tools = all_tools()
    assert len(tools) >= 100
    for tool in tools.values():
        assert tool.parameters["type"] == "object" and tool.description
        assert tool.reversibility in ("read", "reversible-write", "compensable", "irreversible")
        # One neutral description; each provider's wire format is its adapter's.
        assert OpenAIWire("m", {}).tool_schema(tool)["function"]["parameters"] is tool.parameters
        assert AnthropicWire("m", {}).tool_schema(tool)["input_schema"] is tool.parameters
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


def test_unparsed_arguments_are_a_tool_error(box):
    # The run session's pipeline parses the model's text (tests/harness/test_pipeline.py); a string that
    # reaches the tool box anyway is refused, not parsed.
    result = box.call("list_incidents", '{"state": ')
    assert not result.ok and "arguments must be object" in result.content["error"]


def test_a_failed_call_rolls_back_and_the_next_call_works(box, sandbox, run_db):
    before = dump_database(sandbox.server.conninfo(run_db), table_infos().values()).digest()
    assert not box.call("update_incident", {"id": 1, "priority": "high"}).ok
    assert dump_database(sandbox.server.conninfo(run_db), table_infos().values()).digest() == before
    assert box.call("update_incident", {"id": 1, "priority": 1}).ok


def test_writes_touch_only_their_run_database(sandbox, box, run_db):
    tpl = sandbox.seed_template()
    other = sandbox.dbs.create_run(tpl)
    try:
        assert box.call("send_customer_email", {"contact_id": 3, "subject": "RMA", "body": "steps"}).ok
        assert box.call("delete_ci_relationship", {"id": 5}).ok
        assert dump_database(sandbox.server.conninfo(run_db), table_infos().values()).digest() != tpl.digest
        assert dump_database(sandbox.server.conninfo(other), table_infos().values()).digest() == tpl.digest
        assert sandbox.dbs.dump_template(tpl.name).digest() == tpl.digest
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
    from agentrel.sandbox.tools.base import Tool, obj

    def slow(ctx, args):
        ctx.conn.execute("SELECT pg_sleep(5)")

    tools = {"slow": Tool("slow", "sleeps", obj({}), "read", slow)}
    with ToolBox(sandbox.dbs.tool_conninfo(run_db), tools, acting_user_id=1, call_timeout_s=0.2) as box:
        result = box.call("slow", {})
        assert not result.ok and "timed out" in result.content["error"]
        assert box.call("slow", {}).content == {"error": "the tool call timed out"}  # connection still usable


def test_the_budget_bounds_the_whole_call_not_each_statement(sandbox, run_db):
    import time

    from agentrel.sandbox.tools.base import Tool, obj

    def many_slow(ctx, args):
        ctx.conn.execute(
            "INSERT INTO work_notes (record_table, record_id, author_id, note, created_at) "
            "VALUES ('incidents', 1, 1, 'half done', '2026-03-02T09:00:00Z')"
        )
        for _ in range(args["n"]):
            ctx.conn.execute("SELECT pg_sleep(0.15)")  # each statement well under the budget
        return "done"

    def slow_in_python(ctx, args):
        ctx.conn.execute("DELETE FROM ci_relationships WHERE id = 5")
        time.sleep(0.5)  # no statement runs when the budget ends: the cancel finds nothing to cut
        return "done"

    schema = obj({"n": {"type": "integer"}})
    tools = {
        "many_slow": Tool("many_slow", "sleeps", schema, "irreversible", many_slow),
        "slow_in_python": Tool("slow_in_python", "sleeps", obj({}), "irreversible", slow_in_python),
    }
    before = dump_database(sandbox.server.conninfo(run_db), table_infos().values()).digest()
    with ToolBox(sandbox.dbs.tool_conninfo(run_db), tools, acting_user_id=1, call_timeout_s=0.4) as box:
        t0 = time.perf_counter()
        assert box.call("many_slow", {"n": 6}).content == {"error": "the tool call timed out"}
        assert time.perf_counter() - t0 < 0.7  # six statements would take 0.9 s
        assert box.call("slow_in_python", {}).content == {"error": "the tool call timed out"}
        assert (
            dump_database(sandbox.server.conninfo(run_db), table_infos().values()).digest() == before
        )  # both rolled back
        for _ in range(5):  # no cancel outlives its call and cuts the next one
            assert box.call("many_slow", {"n": 2}).content == "done"


def test_search_matches_its_text_literally(sandbox, box, run_db):
    import psycopg

    with psycopg.connect(sandbox.server.conninfo(run_db)) as conn:
        for needle in ("_", "%", "\\", "a_b", "100%"):
            expected = conn.execute(
                "SELECT count(*) FROM users WHERE strpos(lower(full_name), lower(%(n)s)) > 0 "
                "OR strpos(lower(user_name), lower(%(n)s)) > 0 OR strpos(lower(email), lower(%(n)s)) > 0",
                {"n": needle},
            ).fetchone()[0]
            assert box.call("list_users", {"query": needle}).content["total"] == expected, needle
    everyone = box.call("list_users", {}).content["total"]
    assert box.call("list_users", {"query": "_"}).content["total"] < everyone
    assert 0 < box.call("list_users", {"query": "an"}).content["total"] < everyone


CLOCK_WORDS = ("now", "today", "tomorrow", "yesterday", "infinity", "-infinity", "epoch", "allballs")


@pytest.mark.parametrize("word", [*CLOCK_WORDS, "NOW", " today ", "2026-13-01", "next tuesday"])
@pytest.mark.parametrize(
    ("tool", "field", "good"),
    [
        ("update_user", "contract_end", "2026-06-30"),
        ("update_change_request", "planned_start", "2026-03-02T09:00:00Z"),
    ],
)
def test_dates_and_times_must_be_explicit(box, tool, field, good, word):
    result = box.call(tool, {"id": 1, field: word})
    assert not result.ok and f"{field} must be an ISO-8601" in result.content["error"]
    assert box.call(tool, {"id": 1, field: good}).ok


def test_a_naive_timestamp_is_utc_and_filters_parse_dates_too(box):
    changed = box.call("update_change_request", {"id": 1, "planned_start": "2026-03-02T09:00:00"})
    assert changed.content["updated"]["planned_start"] == "2026-03-02T09:00:00Z"
    assert box.call("update_cases_where", {"filters": {"id": 1}, "set": {"closed_at": "now"}}).ok is False


@pytest.mark.parametrize("amount", ["0.004", 0.004, "0.00", "-0.005", 0])
def test_money_must_be_positive_after_rounding_to_cents(box, amount):
    result = box.call("issue_credit", {"account_id": 1, "amount": amount, "reason": "goodwill"})
    assert not result.ok and "at least 0.01 after rounding to cents" in result.content["error"]


def test_money_is_stored_as_rounded(box):
    result = box.call("issue_credit", {"account_id": 1, "amount": "0.005", "reason": "goodwill"})
    assert result.ok and result.content["credited"]["amount"] == "0.01"
    huge = box.call("issue_refund", {"payment_id": 1, "amount": "1e400", "reason": "x"})
    assert not huge.ok and "amount is too large" in huge.content["error"]


def test_long_text_is_refused_with_a_short_error(box):
    from agentrel.sandbox.tools.base import MAX_TEXT, SHOWN

    assert all_tools()["add_work_note"].parameters["properties"]["note"]["maxLength"] == MAX_TEXT
    ok = box.call("add_work_note", {"record_table": "incidents", "record_id": 3, "note": "x" * MAX_TEXT})
    assert ok.ok
    huge = "x" * 3_000_000
    calls = [
        ("add_work_note", {"record_table": "incidents", "record_id": 3, "note": huge}, "note is 3000000"),
        ("list_users", {"query": huge}, "query is 3000000 characters long; the limit is 10000"),
        ("get_incident", {"number": huge}, "number is 3000000"),
        ("update_incident", {"id": 1, huge: 1}, "unknown field(s) xxx"),
        ("update_incident", {"id": huge}, "id must be integer, got"),
        ("add_work_note", {"record_table": huge, "record_id": 3, "note": "n"}, "record_table"),
        (huge, {}, "unknown tool 'xxx"),
    ]
    for tool, args, fragment in calls:
        result = box.call(tool, args)
        assert not result.ok and fragment in result.content["error"]
        assert "x" * (SHOWN + 1) not in result.content["error"]  # the echo is cut at SHOWN characters
        assert len(result.content["error"]) < 5000  # the unknown-tool error lists every tool name
