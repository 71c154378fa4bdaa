"""A run's changed rows grouped per business record, as the environment declares its records
(`Environment.record_links`): an ERP's one act (posting an invoice) writes the invoice, its lines, a
move and its move lines, and a reader judges the invoice. Each change joins the record of the row its
links lead to, followed to the top; a row no link leads anywhere from is a record of its own. Pure: the
changes, the links and the two dumps in, the records out (environments without links are not grouped).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from agentrel.dsl.state import State, Value
from agentrel.harness.view.relabel import LabelledChange
from agentrel.sandbox.environments.contract import RecordLink

#: A record's id: its key's one value (links join single-column keys), or a whole composite key.
RecordKey: TypeAlias = Value | tuple[Value, ...]
MAX_DEPTH = 8  # links are a forest; a declared cycle stops here instead of looping


@dataclass
class BusinessRecord:
    table: str  # the record's top table (an invoice's account_invoice)
    key: RecordKey  # its id
    changes: list[LabelledChange] = field(default_factory=list)

    @property
    def tables(self) -> list[str]:
        return sorted({c.table for c in self.changes})


def group_by_record(
    changes: Sequence[LabelledChange], links: Sequence[RecordLink], before: State, after: State
) -> list[BusinessRecord]:
    """The changes under their business records, in the order each record first appears (a record whose
    own row changed first, then the others)."""
    roots = _Roots(links, before, after)
    records: dict[tuple[str, RecordKey], BusinessRecord] = {}
    for c in changes:
        row = c.after if c.after is not None else c.before
        top = roots.top(c.table, c.key[0] if len(c.key) == 1 else c.key, row, c.columns)
        records.setdefault(top, BusinessRecord(top[0], top[1])).changes.append(c)
    return list(records.values())


class _Roots:
    def __init__(self, links: Sequence[RecordLink], before: State, after: State) -> None:
        self.links: dict[str, list[RecordLink]] = {}
        for link in links:
            self.links.setdefault(link.table, []).append(link)
        self.states = (after, before)  # a deleted row's parent is found where it was
        self._by_column: dict[tuple[int, str, str], dict[Value, Value]] = {}

    def top(
        self, table: str, key: RecordKey, row: tuple[Value, ...] | None, columns: Sequence[str]
    ) -> tuple[str, RecordKey]:
        for _ in range(MAX_DEPTH):
            parent = self._parent(table, key, row, columns)
            if parent is None:
                break
            table, key = parent
            row, columns = self._row(table, key)
        return table, key

    def _parent(
        self, table: str, key: RecordKey, row: tuple[Value, ...] | None, columns: Sequence[str]
    ) -> tuple[str, RecordKey] | None:
        for link in self.links.get(table, ()):
            if link.via == "child":
                if row is not None and link.column in columns:
                    found = row[list(columns).index(link.column)]
                    if found is not None:
                        return link.parent, found
            else:
                found = self._holder(link.parent, link.column, key)
                if found is not None:
                    return link.parent, found
        return None

    def _row(self, table: str, key: RecordKey) -> tuple[tuple[Value, ...] | None, Sequence[str]]:
        whole = key if isinstance(key, tuple) else (key,)
        for state in self.states:
            t = state.tables.get(table)
            if t is not None and whole in t.rows:
                return t.rows[whole], t.info.columns
        return None, ()

    def _holder(self, table: str, column: str, value: RecordKey) -> Value | None:
        """The id of the row of `table` whose `column` holds `value` (after the run, else before)."""
        for i, state in enumerate(self.states):
            t = state.tables.get(table)
            if t is None or column not in t.info.columns:
                continue
            index = self._by_column.get((i, table, column))
            if index is None:
                at, key_at = t.info.columns.index(column), t.info.key_positions[0]
                index = {r[at]: r[key_at] for r in t.rows.values() if r[at] is not None}
                self._by_column[(i, table, column)] = index
            if value in index:
                return index[value]
        return None
