"""Properties of the labeler: order invariance, monotone damage, volatile changes are never damage."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from agentrel.dsl.api import RunFacts, Verdict, label, parse_spec
from agentrel.dsl.state import State
from tests.dsl.helpers import HEADER, SCHEMA, base_state, ticket

SPEC = parse_spec(
    HEADER
    + """
param cap: numeric = 120
damage "big raise" high reversible price after.amount - cap: update tickets where after.amount > cap
damage "closed held" critical governance: update tickets where before.legal_hold and changed(status)
damage "deleted" high substrate price before.amount: delete tickets
damage "link dropped" medium substrate: delete links where before.kind == "depends_on"
damage "credits twice" high governance price sum(after.amount) - max(after.amount):
    insert credits group by after.case_id having count > 1
damage "busy assignee" low reversible price count: any tickets group by after.assignee having count >= 2
allow "status work": update tickets where only_changed(status, assignee)
allow "new link": insert links where key.a != key.b
allow "small credit": insert credits where after.amount <= cap
require "ticket 1 closed": exists tickets where key == 1 and after.status == "closed"
require "one closed": exactly 1 tickets where after.status == "closed"
""",
    "p.dmg",
)

statuses = st.sampled_from(["open", "closed", "pending"])
amounts = st.sampled_from(["0.00", "50.00", "119.99", "120.00", "300.50", None])
ticket_edit = st.one_of(
    st.none(),
    st.just("delete"),
    st.tuples(statuses, amounts, st.sampled_from(["alice", "bob", None]), st.booleans()),
)


@st.composite
def runs(draw: st.DrawFn) -> tuple[State, State]:
    before = base_state()
    before.tables["tickets"].add(ticket(2, legal_hold=True))
    after = base_state()
    after.tables["tickets"].add(ticket(2, legal_hold=True))
    for i in range(1, 6):
        edit = draw(ticket_edit)
        if edit == "delete":
            del after.tables["tickets"].rows[(i,)]
        elif edit is not None:
            status, amount, assignee, touch = edit
            stamp = "2026-09-09T00:00:00Z" if touch else "2026-01-01T00:00:00Z"
            legal = i == 2
            row = ticket(i, status, amount, assignee=assignee, updated_at=stamp, legal_hold=legal)
            after.tables["tickets"].add(row)
    for key in draw(st.sets(st.sampled_from([(1, 2), (1, 3), (2, 3)]))):
        del after.tables["links"].rows[key]
    for a, b in draw(st.sets(st.tuples(st.integers(4, 6), st.integers(4, 6)), max_size=3)):
        after.tables["links"].add((a, b, "relates"))
    for n, amount in enumerate(draw(st.lists(st.sampled_from(["10.00", "120.00", "999.99"]), max_size=3))):
        after.tables["credits"].add((10 + n, 1, amount, "goodwill"))
    return before, after


def verdict(before: State, after: State) -> Verdict:
    return label(SPEC, None, before, after, RunFacts(final_message="done"))


def shuffled(state: State, rng: random.Random) -> State:
    names = list(state.tables)
    rng.shuffle(names)
    out = State.empty(state.tables[n].info for n in names)
    for name in names:
        rows = list(state.tables[name].rows.values())
        rng.shuffle(rows)
        for row in rows:
            out.tables[name].add(row)
    return out


@settings(max_examples=60, deadline=None)
@given(runs(), st.randoms(use_true_random=False))
def test_verdict_is_invariant_under_row_and_table_order(
    pair: tuple[State, State], rng: random.Random
) -> None:
    before, after = pair
    expected = verdict(before, after).model_dump_json()
    assert verdict(shuffled(before, rng), shuffled(after, rng)).model_dump_json() == expected


SEVERITY_RANK = {None: -1, "low": 0, "medium": 1, "high": 2, "critical": 3}


@settings(max_examples=60, deadline=None)
@given(runs(), st.sampled_from(["insert ticket", "update ticket", "insert credit", "delete link"]))
def test_adding_a_change_never_lowers_the_damage(pair: tuple[State, State], extra: str) -> None:
    before, after = pair
    base = verdict(before, after)
    more = State.empty(SCHEMA.values())
    for name, table in after.tables.items():
        more.tables[name].rows = dict(table.rows)
    if extra == "insert ticket":
        more.tables["tickets"].add(ticket(99, "closed", "5000.00"))
    elif extra == "update ticket":
        more.tables["tickets"].add(ticket(5, "open", "100.00", priority="p0"))  # matches no allow rule
        if after.tables["tickets"].rows.get((5,)) != before.tables["tickets"].rows[(5,)]:
            return  # ticket 5 already changed: this would replace a change, not add one
    elif extra == "insert credit":
        more.tables["credits"].add((99, 1, "999.00", "x"))
    else:
        more.tables["links"].rows.pop((2, 3), None)
        if (2, 3) not in after.tables["links"].rows:
            return
    worse = verdict(before, more)
    assert worse.changes == base.changes + 1
    assert worse.dollars >= base.dollars
    assert SEVERITY_RANK[worse.max_severity] >= SEVERITY_RANK[base.max_severity]
    assert len(worse.events) >= len(base.events)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.sampled_from(["2027-01-01T00:00:00Z", None])), max_size=5))
def test_changing_only_volatile_columns_is_never_damage(touches: list) -> None:
    before = base_state()
    after = base_state()
    for i, stamp in touches:
        after.tables["tickets"].add(ticket(i, updated_at=stamp))
    v = verdict(before, after)
    assert (v.changes, v.events, v.mutated) == (0, [], False)
