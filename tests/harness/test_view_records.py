"""A run's diff per business record, as the environment declares them (Environment.record_links): an
invoice posted shows as one record holding the invoice, its move and the move's lines; a row no link
reaches stands alone; an environment without links is drawn as before (tests/harness/test_view_grouping
still passes on the built-in's page, which has none)."""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace

from agentrel.dsl.state import State, TableState
from agentrel.harness.view.records import group_by_record
from agentrel.harness.view.relabel import LabelledChange, Relabel
from agentrel.harness.view.run_html import diff_html
from agentrel.sandbox.environments.contract import RecordLink, record_link_problems, table_info

INFOS = {
    "invoice": table_info("invoice", {"id": "int", "state": "text", "move": "int"}, ("id",)),
    "invoice_line": table_info("invoice_line", {"id": "int", "invoice": "int", "amount": "numeric"}, ("id",)),
    "move": table_info("move", {"id": "int", "state": "text"}, ("id",)),
    "move_line": table_info("move_line", {"id": "int", "move": "int", "debit": "numeric"}, ("id",)),
    "note": table_info("note", {"id": "int", "text": "text"}, ("id",)),
}
LINKS = (
    RecordLink("invoice_line", "invoice", "invoice"),
    RecordLink("move", "invoice", "move", via="parent"),
    RecordLink("move_line", "move", "move"),
)


def state(rows: dict[str, list[tuple]]) -> State:
    s = State({n: TableState(i) for n, i in INFOS.items()})
    for name, table_rows in rows.items():
        for r in table_rows:
            s.tables[name].add(r)
    return s


def change(
    table: str, before: tuple | None, after: tuple | None, dollars: str | None = None
) -> LabelledChange:
    row = after if after is not None else before
    assert row is not None
    op = "insert" if before is None else "delete" if after is None else "update"
    return LabelledChange(
        table, (row[0],), op, INFOS[table].columns, ("id",), before, after, (), "a rule",  # type: ignore[arg-type]
        "damage" if dollars else "allow", "high" if dollars else None, None,
        Decimal(dollars) if dollars else None, "spec",
    )  # fmt: skip


BEFORE = state({"invoice": [(1, "draft", None), (2, "posted", 50)], "invoice_line": [(10, 1, 100)],
                "move": [(50, "posted")], "move_line": [(500, 50, 5)]})  # fmt: skip
AFTER = state({"invoice": [(1, "posted", 60), (2, "posted", 50)], "invoice_line": [(10, 1, 100)],
               "move": [(50, "posted"), (60, "posted")], "move_line": [(500, 50, 5), (600, 60, 100),
               (601, 60, 0)], "note": [(7, "hello")]})  # fmt: skip
CHANGES = [
    change("invoice", (1, "draft", None), (1, "posted", 60), "100.00"),
    change("move", None, (60, "posted")),
    change("move_line", None, (600, 60, 100)),
    change("move_line", None, (601, 60, 0)),
    change("move_line", (500, 50, 5), None, "5.00"),  # a deleted line of invoice 2's move
    change("note", None, (7, "hello")),
]


def test_an_acts_rows_come_under_the_record_the_links_lead_to() -> None:
    records = group_by_record(CHANGES, LINKS, BEFORE, AFTER)
    got = {(r.table, r.key): sorted((c.table, c.key[0]) for c in r.changes) for r in records}
    assert got == {
        ("invoice", 1): [("invoice", 1), ("move", 60), ("move_line", 600), ("move_line", 601)],
        ("invoice", 2): [("move_line", 500)],  # found through the deleted row's own before image
        ("note", 7): [("note", 7)],
    }
    assert [(r.table, r.key) for r in records] == [("invoice", 1), ("invoice", 2), ("note", 7)]


def test_a_cyclic_declaration_stops() -> None:
    cyclic = (RecordLink("move", "move_line", "move", via="parent"), RecordLink("move_line", "move", "move"))
    records = group_by_record(CHANGES[1:4], cyclic, BEFORE, AFTER)
    assert sum(len(r.changes) for r in records) == 3


def test_the_page_shows_each_record_with_its_changes_and_what_it_comes_to() -> None:
    ev = SimpleNamespace(relabel=Relabel(CHANGES, []), records=group_by_record(CHANGES, LINKS, BEFORE, AFTER))
    html = diff_html(ev, 0, "r1", "spec", {})
    assert "belong to 3 business record(s)" in html
    first = html.index('data-record="invoice:1"')
    second = html.index('data-record="invoice:2"')
    assert first < html.index('data-table="move_line" data-key="id=600"') < second
    assert "(id=601)" in html[first:second]  # the identical insert of the same record, folded
    assert "4 changed row(s) in invoice, move, move_line · 1 damage row(s), $100.00" in html
    plain = diff_html(SimpleNamespace(relabel=Relabel(CHANGES, [])), 0, "r1", "spec", {})
    assert "business record" not in plain and "data-record" not in plain  # without links: as before


def test_a_declaration_naming_what_is_not_there_is_refused() -> None:
    """The attack: record links that silently group nothing (a renamed table or column) — `env check`
    names each one."""
    bad = (
        RecordLink("invoice_line", "invoice", "invoce"),
        RecordLink("move", "invoices", "move", via="parent"),
        RecordLink("move", "invoice", "moved", via="parent"),
    )
    problems = record_link_problems(bad, INFOS)
    assert problems == [
        "record link invoice_line -> invoice: invoice_line has no column invoce",
        "record link move -> invoices: invoices is not a table in the diff",
        "record link move -> invoice: invoice has no column moved",
    ]
    assert record_link_problems(LINKS, INFOS) == []
