"""Primary-key row diff of two full-state dumps. Pure: no database, no clock.

Rows are tuples, so most unchanged rows are settled by one C-level tuple comparison; changed
columns are computed only for the rows that differ. Volatile columns (the dump's own plus any the
caller adds) are left out: an update that changes only volatile columns is no change at all. A key
present on one side only is an insert or a delete, so a primary-key edit shows as a delete plus an
insert.

``diff_tables`` is the labeler's form (per table, per kind, plain tuples: cheap to build for 100,000
changes); ``diff`` wraps the same result in ``RowChange`` records sorted by table and key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Set
from dataclasses import dataclass
from itertools import compress, filterfalse
from operator import itemgetter, ne
from typing import Literal, NamedTuple, TypeVar

from agentrel.dsl.errors import DiffError
from agentrel.dsl.state import Key, Row, State, TableInfo, TableState, Value, key_order

ChangeKind = Literal["insert", "delete", "update"]
KINDS: tuple[ChangeKind, ...] = ("insert", "delete", "update")
# One change as the labeler reads it: (before row, after row, key); a row is None where absent.
Change = tuple[Row | None, Row | None, Key]
T = TypeVar("T")


class RowChange(NamedTuple):
    """One changed row. ``before``/``after`` give the row as a dict (None where absent); the tuple
    forms ``before_row``/``after_row`` are what the labeler reads."""

    table: str
    key: Key
    kind: ChangeKind
    before_row: Row | None
    after_row: Row | None
    changed_columns: tuple[str, ...]
    columns: tuple[str, ...]

    @property
    def before(self) -> dict[str, Value] | None:
        return None if self.before_row is None else dict(zip(self.columns, self.before_row, strict=True))

    @property
    def after(self) -> dict[str, Value] | None:
        return None if self.after_row is None else dict(zip(self.columns, self.after_row, strict=True))


@dataclass(frozen=True, slots=True)
class TableDiff:
    """The changes of one table, by kind, in no particular order."""

    info: TableInfo
    volatile: frozenset[str]
    inserts: list[Change]
    deletes: list[Change]
    updates: list[Change]

    def changed_columns(self, before: Row | None, after: Row | None) -> tuple[str, ...]:
        """The non-volatile columns an update changed (empty for inserts and deletes)."""
        if before is None or after is None:
            return ()
        changed = compress(self.info.columns, map(ne, before, after))
        return tuple(filterfalse(self.volatile.__contains__, changed) if self.volatile else changed)

    def __len__(self) -> int:
        return len(self.inserts) + len(self.deletes) + len(self.updates)

    def by_kind(self) -> Iterator[tuple[ChangeKind, list[Change]]]:
        yield "insert", self.inserts
        yield "delete", self.deletes
        yield "update", self.updates


def diff(
    before: State, after: State, extra_volatile: Mapping[str, Set[str]] | None = None
) -> list[RowChange]:
    """Every row change from ``before`` to ``after``, sorted by table, then key.

    Raises DiffError when the dumps do not hold the same tables with the same columns and primary key,
    or when ``extra_volatile`` names an unknown table or column, or a primary-key column.
    """
    out: list[RowChange] = []
    for td in diff_tables(before, after, extra_volatile):
        name, cols = td.info.name, td.info.columns
        rows = [
            RowChange(name, k, kind, b, a, td.changed_columns(b, a), cols)
            for kind, changes in td.by_kind()
            for b, a, k in changes
        ]
        out += sort_by_key(rows, lambda c: c.key)
    return out


def sort_by_key(items: list[T], key: Callable[[T], Key]) -> list[T]:
    """``items`` sorted by ``key(item)``; keys of mixed types (never seen in a real dump) fall back to
    a type-tagged order so sorting cannot fail."""
    try:
        return sorted(items, key=key)
    except TypeError:
        return sorted(items, key=lambda i: key_order(key(i)))


def diff_tables(
    before: State, after: State, extra_volatile: Mapping[str, Set[str]] | None = None
) -> list[TableDiff]:
    """One ``TableDiff`` per table that changed, in table-name order."""
    out = []
    for name, (_, volatile) in sorted(check_comparable(before, after, extra_volatile).items()):
        td = diff_table(before.tables[name], after.tables[name], volatile)
        if len(td):
            out.append(td)
    return out


def check_comparable(
    before: State, after: State, extra_volatile: Mapping[str, Set[str]] | None
) -> dict[str, tuple[TableInfo, frozenset[str]]]:
    """Table name -> (info, volatile columns), after checking both dumps describe the same schema."""
    only_before = sorted(set(before.tables) - set(after.tables))
    only_after = sorted(set(after.tables) - set(before.tables))
    if only_before or only_after:
        parts = []
        if only_before:
            parts.append(f"only in the before dump: {', '.join(only_before)}")
        if only_after:
            parts.append(f"only in the after dump: {', '.join(only_after)}")
        raise DiffError(
            f"the dumps hold different tables ({'; '.join(parts)}); a whole table cannot be diffed"
        )
    extra = dict(extra_volatile or {})
    unknown_tables = sorted(set(extra) - set(before.tables))
    if unknown_tables:
        raise DiffError(f"volatile columns given for unknown table(s): {', '.join(unknown_tables)}")
    out: dict[str, tuple[TableInfo, frozenset[str]]] = {}
    for name, tb in before.tables.items():
        bi, ai = tb.info, after.tables[name].info
        if bi.columns != ai.columns or bi.primary_key != ai.primary_key:
            raise DiffError(
                f"table {name}: the dumps disagree on its columns or primary key ({list(bi.columns)}"
                f" key {list(bi.primary_key)} vs {list(ai.columns)} key {list(ai.primary_key)})"
            )
        volatile = frozenset(bi.volatile | ai.volatile | set(extra.get(name, ())))
        unknown = sorted(volatile - set(bi.columns))
        if unknown:
            raise DiffError(f"table {name}: volatile column(s) {', '.join(unknown)} not among its columns")
        in_key = sorted(volatile & set(bi.primary_key))
        if in_key:
            raise DiffError(f"table {name}: primary-key column(s) {', '.join(in_key)} cannot be volatile")
        out[name] = (bi, volatile)
    return out


def diff_table(before: TableState, after: TableState, volatile: frozenset[str] = frozenset()) -> TableDiff:
    """The changes of one table."""
    info, brows, arows = before.info, before.rows, after.rows
    if brows == arows:
        return TableDiff(info, volatile, [], [], [])
    get = arows.get
    # One pass at C speed over the bulk of the rows; a missing key reads as None, unequal to any row.
    differing = [(b, a, k) for k, b in brows.items() if (a := get(k)) != b]
    deletes: list[Change] = [c for c in differing if c[1] is None]
    if volatile:  # an update counts only when a non-volatile column differs
        stable = itemgetter(*[i for i, c in enumerate(info.columns) if c not in volatile])
        updates: list[Change] = [c for c in differing if c[1] is not None and stable(c[0]) != stable(c[1])]
    else:
        updates = [c for c in differing if c[1] is not None]
    inserts: list[Change] = []
    if len(arows) != len(brows) - len(deletes):  # some keys exist only after: inserts
        # In the after dump's order: dumps are stored sorted by key, so every list here comes out
        # already sorted and sorting the events later is a cheap merge of runs.
        inserts = [(None, a, k) for k, a in arows.items() if k not in brows]
    return TableDiff(info, volatile, inserts, deletes, updates)
