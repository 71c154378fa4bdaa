"""The primary-key row diff: known answers, schema errors and properties."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrel.dsl.api import DiffError, diff
from agentrel.dsl.state import State, TableInfo
from tests.dsl.helpers import LINKS, TICKETS, base_state, changed, ticket


def test_self_diff_is_empty() -> None:
    assert diff(base_state(), base_state()) == []


def test_kinds_rows_and_changed_columns() -> None:
    after = changed(
        base_state(),
        put=[("tickets", ticket(2, "closed", amount="1.00")), ("links", (9, 1, "x"))],
        drop=[("links", (1, 3))],
    )
    changes = diff(base_state(), after)
    assert [(c.table, c.key, c.kind, c.changed_columns) for c in changes] == [
        ("links", (1, 3), "delete", ()),
        ("links", (9, 1), "insert", ()),
        ("tickets", (2,), "update", ("status", "amount")),
    ]
    delete, insert, update = changes
    assert delete.before == {"a": 1, "b": 3, "kind": "depends_on"} and delete.after is None
    assert insert.before is None and insert.after == {"a": 9, "b": 1, "kind": "x"}
    assert update.before is not None and update.before["status"] == "open"
    assert update.after is not None and update.after["status"] == "closed"


def test_primary_key_edit_is_delete_plus_insert() -> None:
    before = base_state()
    after = changed(before, put=[("links", (1, 4, "depends_on"))], drop=[("links", (1, 3))])
    assert [(c.key, c.kind) for c in diff(before, after)] == [((1, 3), "delete"), ((1, 4), "insert")]


def test_volatile_columns_from_dump_and_caller() -> None:
    after = changed(
        base_state(), put=[("tickets", ticket(1, updated_at="2027-01-01T00:00:00Z", priority="p1"))]
    )
    assert [c.changed_columns for c in diff(base_state(), after)] == [("priority",)]
    assert diff(base_state(), after, {"tickets": {"priority"}}) == []


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ({"nope": {"x"}}, "unknown table"),
        ({"tickets": {"nope"}}, "volatile column(s) nope not among its columns"),
        ({"tickets": {"id"}}, "primary-key column(s) id cannot be volatile"),
    ],
)
def test_bad_volatile_override(extra: dict, fragment: str) -> None:
    with pytest.raises(DiffError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        diff(base_state(), base_state(), extra)


def test_table_in_one_dump_only_is_an_error() -> None:
    after = base_state()
    after.tables["extra"] = State.empty([TableInfo("extra", ("id",), ("id",))]).tables["extra"]
    with pytest.raises(DiffError, match="only in the after dump: extra"):
        diff(base_state(), after)
    with pytest.raises(DiffError, match="only in the before dump: extra"):
        diff(after, base_state())


def test_changed_columns_or_key_is_an_error() -> None:
    after = State.empty(
        [TICKETS, TableInfo("links", ("a", "b", "kind"), ("a",)), base_state().tables["credits"].info]
    )
    with pytest.raises(DiffError, match="table links: the dumps disagree"):
        diff(base_state(), after)


def test_mixed_type_keys_still_sort() -> None:
    info = TableInfo("m", ("k", "v"), ("k",))
    before, after = State.empty([info]), State.empty([info])
    for k in ("a", 1, None, "b", 2):
        after.tables["m"].add((k, 0))
    assert [c.key for c in diff(before, after)] == [(None,), (1,), (2,), ("a",), ("b",)]


# ---- properties -------------------------------------------------------------------------------

link_rows = st.dictionaries(
    st.tuples(st.integers(0, 4), st.integers(0, 4)), st.sampled_from(["d", "b", "r"]), max_size=12
)


def _links(rows: dict) -> State:
    state = State.empty([LINKS])
    for (a, b), kind in rows.items():
        state.tables["links"].add((a, b, kind))
    return state


@settings(max_examples=60, deadline=None)
@given(link_rows)
def test_property_self_diff_is_empty(rows: dict) -> None:
    state = _links(rows)
    assert diff(state, copy.deepcopy(state)) == []


@settings(max_examples=60, deadline=None)
@given(link_rows, link_rows)
def test_property_diff_accounts_for_every_key(rows_a: dict, rows_b: dict) -> None:
    changes = diff(_links(rows_a), _links(rows_b))
    by_kind = {k: {c.key for c in changes if c.kind == k} for k in ("insert", "delete", "update")}
    assert by_kind["insert"] == set(rows_b) - set(rows_a)
    assert by_kind["delete"] == set(rows_a) - set(rows_b)
    assert by_kind["update"] == {k for k in set(rows_a) & set(rows_b) if rows_a[k] != rows_b[k]}
    assert [c.key for c in changes] == sorted(c.key for c in changes)
