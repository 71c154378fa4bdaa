"""``check_spec``: semantic problems against a schema, each with ``file:line:col:``."""

from __future__ import annotations

import pytest

from agentrel.dsl.api import check_spec, parse_spec
from tests.dsl.helpers import HEADER, SCHEMA

REQ = '\nrequire "r": exists tickets'


def problems(body: str) -> list[str]:
    return [str(p) for p in check_spec(parse_spec(HEADER + body + REQ, "c.dmg"), SCHEMA)]


def fatal(body: str, expected: str) -> bool:
    """Whether the problem that starts with ``expected`` is fatal."""
    (found,) = [
        p for p in check_spec(parse_spec(HEADER + body + REQ, "c.dmg"), SCHEMA) if str(p).startswith(expected)
    ]
    return found.fatal


def test_a_sound_spec_has_no_problems() -> None:
    body = """
    param cap: numeric = 250
    param day: date = "2026-01-01"
    volatile tickets(priority)
    damage "over" high governance price after.amount - cap: insert credits where after.amount > cap
    damage "moved" low reversible price abs(before.amount - after.amount):
        update tickets where changed(assignee) and after.opened >= day and key.id in [1, 2]
    allow "link": delete links where key == (1, 2) and before.kind == "depends_on"
    allow "any": any * where lower(coalesce(after.note, before.note, "")) != "x"
    fallback "stray" medium reversible price cap / 2
    """
    assert problems(body) == []


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('allow "a": update ticket', "c.dmg:2:19: unknown table 'ticket' (did you mean 'tickets'?)"),
        (
            'allow "a": update tickets where after.stat == "x"',
            "c.dmg:2:33: table tickets has no column 'stat'",
        ),
        (
            'allow "a": update tickets where after.status == cap',
            "c.dmg:2:49: unknown param 'cap' (params: none declared)",
        ),
        (
            'damage "a" high substrate price after.status: update tickets',
            "c.dmg:2:33: a price must be a number of dollars, but this is text",
        ),
        (
            'damage "a" high substrate price after.amount + after.note: update credits',
            "c.dmg:2:48: cannot + text in a price: arithmetic needs numbers",
        ),
        (
            'allow "a": update tickets where after.amount > "x"',
            "c.dmg:2:33: cannot compare numeric with text",
        ),
        (
            'allow "a": update tickets where after.opened > "soon"',
            "c.dmg:2:33: cannot compare date with text",
        ),
        (
            'allow "a": update tickets where after.status',
            "c.dmg:2:33: a condition must be true or false, but this is text",
        ),
        (
            'allow "a": update tickets where key.status == "x"',
            "c.dmg:2:33: 'status' is not in the primary key",
        ),
        (
            'allow "a": update links where key == (1, 2, 3)',
            "c.dmg:2:31: cannot compare (int, int) with (int, int, int)",
        ),
        (
            'allow "a": update tickets where lower(after.amount) == "x"',
            "c.dmg:2:39: lower() needs text, got numeric",
        ),
        (
            'allow "a": update tickets where after.legal_hold < true',
            "c.dmg:2:33: < needs numbers, text, dates",
        ),
        ('allow "a": update tickets where changed(nope)', "c.dmg:2:33: table tickets has no column 'nope'"),
        ("volatile tickets(nope)", "c.dmg:2:1: volatile: table tickets has no column 'nope'"),
        ("volatile tickets(id)", "c.dmg:2:1: volatile: 'id' is part of the primary key of tickets"),
        ("volatile tix(a)", "c.dmg:2:1: volatile names unknown table 'tix'"),
        (
            'fallback "f" low reversible price after.amount',
            "c.dmg:2:35: a fallback price cannot read row values",
        ),
        ('allow "a": any * where after.zzz == 1', "c.dmg:2:16: no table has all of the columns zzz"),
        (
            'require "q": exists tickets where after.nope == 1',
            "c.dmg:2:35: table tickets has no column 'nope'",
        ),
    ],
)
def test_fatal_problems(body: str, expected: str) -> None:
    found = problems(body)
    assert any(p.startswith(expected) for p in found), found
    assert fatal(body, expected)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            'allow "a": insert tickets where before.status == "x"',
            "c.dmg:2:33: an insert has no before row, so before.status is always null here",
        ),
        (
            'allow "a": delete tickets where after.status == "x"',
            "c.dmg:2:33: a deleted row has no after row, so after.status is always null here",
        ),
        (
            'allow "a": insert tickets where changed(status)',
            "c.dmg:2:33: changed() only means something on updates, but this where is for an insert",
        ),
        (
            'allow "a": any tickets where only_changed(status)',
            "c.dmg:2:30: only_changed() only means something on updates, but this where is for any operation",
        ),
        (
            'require "q": exists tickets where before.status == "x"',
            "c.dmg:2:35: a final-state row has no before row",
        ),
        (
            'damage "d" low reversible: update tickets\nallow "a": update tickets where key == 1',
            "c.dmg:3:1: allow rule 'a' can never match: damage rule 'd' (line 2)"
            " already takes every update on tickets",
        ),
        (
            'damage "d" low reversible: any *\ndamage "e" high substrate: delete links',
            "c.dmg:3:1: damage rule 'e' can never match: damage rule 'd' (line 2)"
            " already takes every change on any table",
        ),
        (
            'allow "a": update tickets\nallow "b": update tickets where key == 1',
            "c.dmg:3:1: allow rule 'b' can never match: allow rule 'a' (line 2)",
        ),
    ],
)
def test_rules_that_can_never_match(body: str, expected: str) -> None:
    found = problems(body)
    assert any(p.startswith(expected) for p in found), found
    assert not fatal(body, expected)


def test_shadowing_needs_an_unconditional_rule_on_the_same_table_and_op() -> None:
    body = """
    damage "d" low reversible: update tickets where key == 1
    damage "e" low reversible: delete tickets
    allow "a": update tickets
    allow "b": update links
    """
    assert problems(body) == []


def test_spec_without_requirements_is_reported() -> None:
    found = [str(p) for p in check_spec(parse_spec(HEADER + 'allow "a": update tickets', "c.dmg"), SCHEMA)]
    assert found == ["c.dmg:1:1: the spec has no require rule, so a run that changes nothing passes"]


def test_problems_are_sorted_by_position() -> None:
    body = 'allow "b": update tickets where after.zz == 1\nallow "a": update tix'
    assert [p.split(":")[1] for p in problems(body)] == ["2", "3"]


def test_composite_key_is_never_compared_with_its_first_column() -> None:
    found = problems('allow "a": delete links where key == 1')
    assert found == ["c.dmg:2:31: cannot compare (int, int) with int"]
    found = problems('allow "a": delete links where key in [1, (1, 2)]')
    assert found == ["c.dmg:2:39: cannot compare (int, int) with int in `in`"]
