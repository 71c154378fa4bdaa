"""Aggregate damage rules: known answers on hand-built dumps, nulls, exact decimals, order, checks."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrel.dsl.api import check_spec, parse_spec, print_spec
from agentrel.dsl.state import State
from tests.dsl.helpers import HEADER, SCHEMA, base_state, changed, run

CAP = """
param cap: numeric = 250
allow "credit": insert credits
require "r": exists credits
"""
TWICE = """
damage "two credits on a case" high governance price sum(after.amount) - max(after.amount):
    insert credits group by after.case_id having count > 1
"""


def credits(*rows: tuple[int, int | None, str]) -> State:
    return changed(base_state(), put=[("credits", (i, case, amount, "n")) for i, case, amount in rows])


def agg_events(verdict: object) -> list[tuple[str, tuple, str, int]]:
    return [(e.rule, tuple(e.key), str(e.dollars), e.rows) for e in verdict.events if e.aggregate]  # type: ignore[attr-defined]


def test_one_event_per_violating_group_priced_over_the_group() -> None:
    after = credits((2, 7, "30.00"), (3, 7, "45.50"), (4, 8, "99.00"), (5, 9, "1.00"), (6, 9, "1.00"))
    v = run(TWICE + CAP, after)
    # Group 7: 75.50 - 45.50; group 9: 2.00 - 1.00; group 8 has one credit and no event.
    assert agg_events(v) == [
        ("two credits on a case", (7,), "30.00", 2),
        ("two credits on a case", (9,), "1.00", 2),
    ]
    assert v.outcome == "FAIL_DAMAGE" and v.dollars == Decimal("31.00")
    # Aggregates add damage; they do not explain rows: every credit is still labelled by the allow rule.
    assert v.allowed == {"credit": 5} and all(e.aggregate for e in v.events)
    assert {(e.spec, e.op, e.changed_columns) for e in v.events} == {("t", "insert", ())}


def test_rows_are_labelled_by_row_rules_besides_the_aggregate() -> None:
    body = (
        TWICE
        + 'damage "big" high governance price after.amount - cap: insert credits where after.amount > cap'
    )
    v = run(body + CAP, credits((2, 7, "300.00"), (3, 7, "100.00")))
    assert [(e.rule, e.aggregate, str(e.dollars)) for e in v.events] == [
        ("big", False, "50.00"),  # row events first, by table and key
        ("two credits on a case", True, "100.00"),
    ]
    assert v.allowed == {"credit": 1}


def test_sum_over_the_cap_without_group_by_is_one_group_of_every_matching_change() -> None:
    body = """
    damage "credits above the cap" high governance price sum(after.amount) - cap:
        insert credits where after.case_id == 7 having sum(after.amount) > cap
    """
    v = run(body + CAP, credits((2, 7, "200.00"), (3, 7, "60.01"), (4, 8, "900.00")))
    assert agg_events(v) == [("credits above the cap", (), "10.01", 2)]
    assert agg_events(run(body + CAP, credits((2, 7, "200.00"), (3, 7, "50.00")))) == []  # 250 is not > 250


def test_exact_decimals_and_half_up_cents() -> None:
    body = """
    damage "thirds" low reversible price sum(after.amount) / 3: insert credits having count >= 1
    damage "tiny" low reversible price sum(after.amount) - 0.3: insert credits having sum(after.amount) == 0.3
    """
    v = run(body + CAP, credits((2, 7, "0.10"), (3, 7, "0.20")))  # 0.1 + 0.2 == 0.3 exactly
    assert [(e.rule, str(e.dollars)) for e in v.events] == [("thirds", "0.10"), ("tiny", "0.00")]
    v = run(body + CAP, credits((2, 7, "0.005"), (3, 7, "0.010")))
    assert [(e.rule, str(e.dollars)) for e in v.events] == [("thirds", "0.01")]  # 0.015 / 3 = 0.005 -> 0.01


def test_null_group_keys_join_no_group_and_nulls_are_left_out_of_sums() -> None:
    v = run(TWICE + CAP, credits((2, None, "10.00"), (3, None, "20.00")))
    assert agg_events(v) == []  # two credits without a case are not two credits on one case
    grouped = TWICE.replace("after.case_id having", "coalesce(after.case_id, 0) having")
    assert agg_events(run(grouped + CAP, credits((2, None, "10.00"), (3, None, "20.00")))) == [
        ("two credits on a case", (0,), "10.00", 2)
    ]
    body = """
    damage "s" low reversible price coalesce(sum(after.amount), 99): insert credits having count == 2
    damage "m" low reversible price coalesce(min(after.amount), 77):
        insert credits having max(after.amount) is null
    """
    v = run(body + CAP, credits((2, 7, None), (3, 7, None)))  # type: ignore[arg-type]
    assert [(e.rule, str(e.dollars)) for e in v.events] == [("s", "99.00"), ("m", "77.00")]
    v = run(body + CAP, credits((2, 7, None), (3, 7, "5.00")))  # type: ignore[arg-type]
    assert [(e.rule, str(e.dollars)) for e in v.events] == [("s", "5.00")]


def test_min_max_on_dates_updates_and_composite_group_keys() -> None:
    after = changed(
        base_state(),
        put=[
            ("tickets", (1, "closed", "p1", "bob", "10.00", "2026-01-05", "x", False)),
            ("tickets", (2, "closed", "p1", "bob", "20.00", "2025-12-01", "x", False)),
            ("tickets", (3, "closed", "p2", "bob", "40.00", "2026-01-01", "x", False)),
        ],
    )
    body = """
    damage "early close" medium reversible price max(before.amount) + count:
        update tickets where changed(status) group by after.assignee, after.priority
        having min(after.opened) < "2026-01-02" and max(after.opened) >= date "2025-12-01"
    require "r": exists tickets
    """
    v = run(body, after)
    assert agg_events(v) == [
        ("early close", ("bob", "p1"), "102.00", 2),
        ("early close", ("bob", "p2"), "101.00", 1),
    ]
    assert [e.key for e in v.events if e.aggregate] == [("bob", "p1"), ("bob", "p2")]  # sorted by group key


def test_any_op_groups_inserts_updates_and_deletes_together_per_table() -> None:
    after = changed(
        base_state(),
        put=[("credits", (1, 1, "60.00", "edited")), ("credits", (2, 1, "5.00", "new"))],
        drop=[("links", (1, 2))],
    )
    body = """
    damage "busy" low reversible price count: any * where key is not null having count > 0
    damage "money" low reversible price sum(coalesce(after.amount, before.amount)): any * having count > 0
    require "r": exists tickets
    """
    v = run(body, after)
    # `*` takes every table with the columns the rule reads: links has no amount, so "money" skips it.
    assert agg_events(v) == [("busy", (), "2.00", 2), ("busy", (), "1.00", 1), ("money", (), "65.00", 2)]
    assert [(e.table, e.op) for e in v.events if e.aggregate] == [
        ("credits", "any"),
        ("links", "any"),
        ("credits", "any"),
    ]


def test_a_run_without_matching_changes_has_no_aggregate_events() -> None:
    assert agg_events(run(TWICE + CAP, base_state())) == []
    assert run(TWICE + CAP, base_state()).outcome == "PASS"  # the base state has a credit


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([7, 8, None]), st.decimals("0.01", "999.99", places=2)), max_size=8)
)
def test_known_answer_against_a_direct_count(rows: list[tuple[int | None, Decimal]]) -> None:
    after = credits(*((i + 2, case, str(amount)) for i, (case, amount) in enumerate(rows)))
    expected = []
    for case in (7, 8):
        amounts = [a for c, a in rows if c == case]
        if len(amounts) > 1:
            expected.append(
                ("two credits on a case", (case,), f"{sum(amounts) - max(amounts):.2f}", len(amounts))
            )
    assert agg_events(run(TWICE + CAP, after)) == expected


def test_printer_round_trip_of_aggregate_rules() -> None:
    text = (
        HEADER
        + TWICE
        + CAP
        + """
    damage "sum" high substrate price -(min(after.amount) * 2) + count:
        any * where after.amount > 0 group by (key, after.note), lower(after.note)
        having not (count == 1) or sum(after.amount) >= cap
    """
    )
    spec = parse_spec(text, "p.dmg")
    printed = print_spec(spec)
    assert parse_spec(printed, "p.dmg") == spec
    assert print_spec(parse_spec(printed, "p.dmg")) == printed
    assert "    group by after.case_id having count > 1\n" in printed


REQ = '\nrequire "r": exists tickets'


def problems(body: str) -> list[str]:
    return [str(p) for p in check_spec(parse_spec(HEADER + body + REQ, "c.dmg"), SCHEMA)]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            'damage "a" high substrate: insert credit group by after.case_id having count > 1',
            "c.dmg:2:35: unknown table 'credit' (did you mean 'credits'?)",
        ),
        (
            'damage "a" high substrate: insert credits group by after.case having count > 1',
            "c.dmg:2:52: table credits has no column 'case'",
        ),
        (
            'damage "a" high substrate: insert credits where after.cas == 1 having count > 1',
            "c.dmg:2:49: table credits has no column 'cas'",
        ),
        (
            'damage "a" high substrate: insert credits having sum(after.nope) > 1',
            "c.dmg:2:54: table credits has no column 'nope'",
        ),
        (
            'damage "a" high substrate: insert * group by after.nope having count > 1',
            "c.dmg:2:35: no table has all of the columns nope",
        ),
        (
            'damage "a" high substrate: insert credits having sum(after.note) > 1',
            "c.dmg:2:54: sum() needs numbers, but this is text",
        ),
        (
            'damage "a" high substrate: update credits having max(changed(note)) > 1',
            "c.dmg:2:54: max() needs numbers, text, dates or timestamps, not bool",
        ),
        (
            'damage "a" high substrate: insert credits having min(after.amount) > "x"',
            "c.dmg:2:50: cannot compare numeric with text",
        ),
        (
            'damage "a" high substrate: insert credits having sum(after.amount)',
            "c.dmg:2:50: a having clause must be true or false, but this is numeric",
        ),
        (
            'damage "a" high substrate price max(after.note): insert credits having count > 1',
            "c.dmg:2:33: a price must be a number of dollars, but this is text",
        ),
        (
            'damage "a" high substrate: insert credits having max(after.amount) > cap',
            "c.dmg:2:70: unknown param 'cap' (params: none declared)",
        ),
    ],
)
def test_check_reports_aggregate_problems(body: str, expected: str) -> None:
    assert problems(body) == [expected]
    found = check_spec(parse_spec(HEADER + body + REQ, "c.dmg"), SCHEMA)
    assert found[0].fatal


def test_check_warns_about_before_in_an_insert_aggregate() -> None:
    body = 'damage "a" high substrate: insert credits group by before.case_id having sum(before.amount) > 1'
    assert problems(body) == [
        "c.dmg:2:52: an insert has no before row, so before.case_id is always null here",
        "c.dmg:2:78: an insert has no before row, so before.amount is always null here",
    ]


def test_a_sound_aggregate_rule_has_no_problems_and_is_never_shadowed() -> None:
    body = 'allow "any credit": insert credits\n' + TWICE.replace(
        "credits group", "credits where after.amount > 0 group"
    )
    assert problems(body) == []
