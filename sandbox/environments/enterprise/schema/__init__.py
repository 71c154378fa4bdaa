"""The enterprise sandbox schema (SQLAlchemy Core), one module per vertical, and its plain description."""

from __future__ import annotations

import hashlib
from functools import cache

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.schema import CreateIndex, CreateTable

from agentrel.dsl.state import TableInfo
from agentrel.sandbox.environments.enterprise.schema import csm, itsm  # noqa: F401  (importing registers the tables)
from agentrel.sandbox.environments.enterprise.schema.base import metadata

__all__ = ["ddl", "metadata", "schema_digest", "sorted_tables", "table_infos"]


def sorted_tables() -> list[sa.Table]:
    """Tables in foreign-key dependency order (parents first)."""
    return list(metadata.sorted_tables)


def _kind(col: sa.Column) -> str:
    t = col.type
    if isinstance(t, sa.Boolean):
        return "bool"
    if isinstance(t, sa.Integer):
        return "int"
    if isinstance(t, sa.Numeric):
        return "numeric"
    if isinstance(t, sa.DateTime):
        return "timestamp"
    if isinstance(t, sa.Date):
        return "date"
    return "text"


@cache
def table_infos() -> dict[str, TableInfo]:
    """The schema as the diff and the spec checker see it: columns, primary key, volatile columns, kinds."""
    infos = {}
    for t in sorted_tables():
        cols = tuple(c.name for c in t.columns)
        infos[t.name] = TableInfo(
            name=t.name,
            columns=cols,
            primary_key=tuple(c.name for c in t.primary_key.columns),
            volatile=frozenset(c.name for c in t.columns if c.info.get("volatile")),
            kinds=tuple(_kind(c) for c in t.columns),
        )
    return infos


@cache
def ddl() -> str:
    """CREATE statements for the whole schema, in dependency order (Postgres dialect)."""
    dialect = postgresql.dialect()
    parts = []
    for t in sorted_tables():
        parts.append(str(CreateTable(t).compile(dialect=dialect)).strip() + ";")
        for idx in sorted(t.indexes, key=lambda i: i.name or ""):
            parts.append(str(CreateIndex(idx).compile(dialect=dialect)).strip() + ";")
    return "\n\n".join(parts) + "\n"


def schema_digest() -> str:
    return hashlib.sha256(ddl().encode()).hexdigest()
