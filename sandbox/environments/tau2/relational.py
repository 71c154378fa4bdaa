"""What every τ² port's table mapping shares: the DDL of a declared set of tables, money in cents, and the
rows of a dump-shaped State back as dictionaries grouped by parent (for the way back to τ²'s document).

A port declares its tables as (name, column kinds, primary key), parents before children, plus which
columns reference a parent and which may be null; everything here is generic over that declaration.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from agentrel.dsl.state import State, TableInfo
from agentrel.sandbox.environments.contract import table_info

Shape = tuple[str, dict[str, str], tuple[str, ...]]
SQL_TYPES = {"text": "text", "int": "integer", "numeric": "numeric(12,2)", "bool": "boolean"}


def tables(shapes: Iterable[Shape]) -> dict[str, TableInfo]:
    return {name: table_info(name, cols, pk) for name, cols, pk in shapes}


def ddl(
    infos: Mapping[str, TableInfo],
    references: Mapping[str, tuple[tuple[str, ...], str]],
    nullable: Mapping[str, Iterable[str]],
) -> str:
    """CREATE TABLE statements, parents first, with primary keys and each child's foreign key to its
    parent (`references[child] = (columns, parent)`, the columns naming the parent's key in order)."""
    parts = []
    for name, info in infos.items():
        optional = set(nullable.get(name, ()))
        cols = [f"{c} {SQL_TYPES[info.kind(c)]}{'' if c in optional else ' NOT NULL'}" for c in info.columns]
        cols.append(f"PRIMARY KEY ({', '.join(info.primary_key)})")
        if name in references:
            own, parent = references[name]
            theirs = infos[parent].primary_key[: len(own)]
            cols.append(f"FOREIGN KEY ({', '.join(own)}) REFERENCES {parent} ({', '.join(theirs)})")
        parts.append(f"CREATE TABLE {name} (\n    " + ",\n    ".join(cols) + "\n);")
    return "\n".join(parts) + "\n"


def money(value: Any) -> str | None:
    """A τ² amount as the dump's numeric text, rounded to cents (half away from zero, as numeric does)."""
    if value is None:
        return None
    return str(Decimal(str(value)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def to_state(infos: Mapping[str, TableInfo], rows: Mapping[str, list[dict[str, Any]]]) -> State:
    """Rows per table as a dump-shaped State; a field the tables have no column for is an error, never
    lost."""
    state = State.empty(infos.values())
    for name, found in rows.items():
        info = infos[name]
        for row in found:
            extra = set(row) - set(info.columns)
            if extra:
                raise ValueError(f"table {name}: τ² field(s) {sorted(extra)} have no column")
            state.tables[name].add(tuple(row.get(c) for c in info.columns))
    return state


def dicts(state: State, name: str) -> list[dict[str, Any]]:
    """A table's rows as column-name dictionaries, in key order."""
    table = state.tables[name]
    cols = table.info.columns
    return [dict(zip(cols, table.rows[k], strict=True)) for k in sorted(table.rows)]


def by_parent(rows: Iterable[dict[str, Any]], *parent: str) -> dict[Any, list[dict[str, Any]]]:
    """Rows grouped by their parent's key (one column, or a tuple of several), each group in ordinal
    order."""

    def key(r: dict[str, Any]) -> Any:
        return r[parent[0]] if len(parent) == 1 else tuple(r[p] for p in parent)

    out: dict[Any, list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda r: (key(r), r["ordinal"])):
        out.setdefault(key(row), []).append(row)
    return out
