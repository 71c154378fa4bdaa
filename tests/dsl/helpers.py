"""Small dumps and specs for the DSL tests."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentrel.dsl.api import RunFacts, Verdict, label, parse_spec
from agentrel.dsl.state import Row, State, TableInfo

TICKETS = TableInfo(
    "tickets",
    ("id", "status", "priority", "assignee", "amount", "opened", "updated_at", "legal_hold"),
    ("id",),
    frozenset({"updated_at"}),
    ("int", "text", "text", "text", "numeric", "date", "timestamp", "bool"),
)
LINKS = TableInfo("links", ("a", "b", "kind"), ("a", "b"), frozenset(), ("int", "int", "text"))
CREDITS = TableInfo(
    "credits", ("id", "case_id", "amount", "note"), ("id",), frozenset(), ("int", "int", "numeric", "text")
)
SCHEMA = {t.name: t for t in (TICKETS, LINKS, CREDITS)}

TS = "2026-01-01T00:00:00Z"


def ticket(id: int, status: str = "open", amount: str = "100.00", **kw: object) -> Row:
    values = {
        "id": id,
        "status": status,
        "priority": "p3",
        "assignee": "alice",
        "amount": amount,
        "opened": "2026-01-01",
        "updated_at": TS,
        "legal_hold": False,
    }
    values.update(kw)
    return tuple(values[c] for c in TICKETS.columns)  # type: ignore[misc]


def base_state() -> State:
    """Five tickets, three links (composite keys), one credit."""
    state = State.empty(SCHEMA.values())
    for i in range(1, 6):
        state.tables["tickets"].add(ticket(i))
    for a, b in ((1, 2), (1, 3), (2, 3)):
        state.tables["links"].add((a, b, "depends_on"))
    state.tables["credits"].add((1, 1, "50.00", "old"))
    return state


def changed(
    state: State, *, put: Iterable[tuple[str, Row]] = (), drop: Iterable[tuple[str, tuple]] = ()
) -> State:
    """A deep copy of ``state`` with rows upserted (``put``) and keys deleted (``drop``)."""
    out = copy.deepcopy(state)
    for table, row in put:
        out.tables[table].add(row)
    for table, key in drop:
        del out.tables[table].rows[key]
    return out


HEADER = 'spec "t" version 1\n'


def run(
    body: str,
    after: State,
    before: State | None = None,
    params: dict | None = None,
    facts: RunFacts | None = None,
) -> Verdict:
    spec = parse_spec(HEADER + body, "t.dmg")
    return label(spec, params, before or base_state(), after, facts or RunFacts(final_message="done"))


def rules(verdict: Verdict) -> list[tuple[str, tuple, str]]:
    return [(e.rule, tuple(e.key), e.op) for e in verdict.events]


def write_lines(path: Path, lines: Iterable[Any]) -> Path:
    """A gzipped dump file of exactly these lines: strings as they are, anything else as JSON."""
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    return path
