"""Generic tools generated from entity declarations: list, get, create, update, delete, bulk variants."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

import sqlalchemy as sa
from psycopg import sql

from agentrel.sandbox.environments.enterprise.schema import metadata
from agentrel.sandbox.environments.enterprise.seed import NOW
from agentrel.sandbox.environments.enterprise.tools.entities import Entity
from agentrel.sandbox.tools.base import (
    Args,
    Tool,
    ToolContext,
    ToolError,
    cut,
    first,
    iso_value,
    obj,
    rows,
    scalar,
    shown,
    text,
)

MAX_LIMIT = 50
DEFAULT_LIMIT = 20
BOOKKEEPING = ("updated_at", "sys_mod_count")
MONEY_DOC = 'amount in USD, e.g. 250 or "250.00"'
TIME_DOC = "ISO-8601, e.g. 2026-03-02T09:00:00Z (no offset: UTC)"


def json_type(col: sa.Column) -> dict[str, Any]:
    t = col.type
    nullable = bool(col.nullable)
    if isinstance(t, sa.Boolean):
        schema: dict[str, Any] = {"type": "boolean"}
    elif isinstance(t, sa.Integer):
        schema = {"type": "integer"}
    elif isinstance(t, sa.Numeric):
        schema = {"type": ["number", "string"], "maxLength": 32, "description": MONEY_DOC}
        return {**schema, "type": [*schema["type"], "null"]} if nullable else schema
    elif isinstance(t, sa.DateTime):
        schema = {"type": "string", "format": "date-time", "maxLength": 64, "description": TIME_DOC}
    elif isinstance(t, sa.Date):
        schema = {"type": "string", "format": "date", "maxLength": 32, "description": "e.g. 2026-03-02"}
    else:
        schema = text()
    if nullable:
        schema["type"] = [schema["type"], "null"]
    return schema


def to_sql_value(col: sa.Column, value: Any) -> Any:
    """Coerce a JSON argument for `col`; money becomes an exact Decimal, never a float, and dates and
    timestamps are parsed here, never by the server (see `iso_value`)."""
    if value is None:
        return None
    if isinstance(col.type, sa.Numeric) and not isinstance(col.type, sa.Integer):
        try:
            amount = Decimal(str(value))
        except InvalidOperation:
            raise ToolError(f"{col.name} must be an amount like 250.00, got {shown(value)}") from None
        if not amount.is_finite():
            raise ToolError(f"{col.name} must be a finite amount")
        return amount
    if isinstance(col.type, sa.DateTime | sa.Date) and isinstance(value, str):
        return iso_value("date-time" if isinstance(col.type, sa.DateTime) else "date", value, col.name)
    return value


def cents(col: sa.Column, value: Any) -> Decimal:
    """A money argument as the column will store it: rounded to cents (half away from zero, as numeric
    rounds), so a check on the result is a check on what is stored ("0.004" stores 0.00)."""
    amount, scale = to_sql_value(col, value), getattr(col.type, "scale", None) or 0
    try:
        return Decimal(amount).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    except InvalidOperation:
        raise ToolError(f"{col.name} is too large, got {shown(value)}") from None


def literal_pattern(query: str) -> str:
    """An ILIKE pattern matching `query` as plain text: its %, _ and \\ match only themselves."""
    escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class EntityTools:
    """Builds the generic tools of one entity."""

    def __init__(self, entity: Entity) -> None:
        self.e = entity
        self.table: sa.Table = metadata.tables[entity.table]
        self.pk = [c.name for c in self.table.primary_key.columns]
        self.columns = [c.name for c in self.table.columns]

    def col(self, name: str) -> sa.Column:
        return self.table.c[name]

    def tools(self) -> list[Tool]:
        e = self.e
        out = [self.list_tool()]
        if self.pk == ["id"]:
            out.append(self.get_tool())
        if e.create:
            out.append(self.create_tool())
        if e.writable and self.pk == ["id"]:
            out.append(self.update_tool())
        if e.delete:
            out.append(self.delete_tool())
        if e.bulk_update:
            out.append(self.bulk_update_tool())
        if e.bulk_delete:
            out.append(self.bulk_delete_tool())
        return out

    # ---- shared SQL pieces -------------------------------------------------------------------------
    def _where(self, filters: Args, query: str | None) -> tuple[sql.Composable, list[Any]]:
        clauses: list[sql.Composable] = []
        params: list[Any] = []
        for name, value in sorted(filters.items()):
            if value is None:
                clauses.append(sql.SQL("{} IS NULL").format(sql.Identifier(name)))
            else:
                clauses.append(sql.SQL("{} = %s").format(sql.Identifier(name)))
                params.append(to_sql_value(self.col(name), value))
        if query:
            ors = [sql.SQL("{}::text ILIKE %s").format(sql.Identifier(c)) for c in self.e.search]
            clauses.append(sql.SQL("({})").format(sql.SQL(" OR ").join(ors)))
            params.extend([literal_pattern(query)] * len(ors))
        if not clauses:
            return sql.SQL("TRUE"), params
        return sql.SQL(" AND ").join(clauses), params

    def _filter_props(self) -> dict[str, Any]:
        return {f: json_type(self.col(f)) for f in self.e.filters}

    def _fetch(self, ctx: ToolContext, key: Args) -> dict[str, Any] | None:
        where, params = self._where(key, None)
        cur = ctx.conn.execute(
            sql.SQL("SELECT * FROM {} WHERE {}").format(sql.Identifier(self.table.name), where), params
        )
        return first(cur)

    def _require(self, ctx: ToolContext, key: Args) -> dict[str, Any]:
        row = self._fetch(ctx, key)
        if row is None:
            given = ", ".join(f"{k}={v}" for k, v in key.items())
            raise ToolError(f"no {self.e.name} with {cut(given)}")
        return row

    # ---- tools -------------------------------------------------------------------------------------
    def list_tool(self) -> Tool:
        e = self.e
        props = {
            **self._filter_props(),
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
            "offset": {"type": "integer", "minimum": 0, "default": 0},
        }
        if e.search:
            props["query"] = text(f"case-insensitive text in {', '.join(e.search)}, matched literally")
        filters_doc = f" Filter by exact {', '.join(e.filters)}." if e.filters else ""
        search_doc = " `query` searches text." if e.search else ""

        def handler(ctx: ToolContext, args: Args) -> Any:
            limit, offset = int(args.pop("limit", DEFAULT_LIMIT)), int(args.pop("offset", 0))
            query = args.pop("query", None)
            where, params = self._where(args, query)
            table = sql.Identifier(self.table.name)
            total = scalar(
                ctx.conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE {}").format(table, where), params)
            )
            order = sql.SQL(", ").join(sql.Identifier(c) for c in self.pk)
            cur = ctx.conn.execute(
                sql.SQL("SELECT * FROM {} WHERE {} ORDER BY {} LIMIT %s OFFSET %s").format(
                    table, where, order
                ),
                [*params, limit, offset],
            )
            items = rows(cur)
            nxt = offset + len(items)
            return {
                "total": total,
                "offset": offset,
                "returned": len(items),
                "items": items,
                "next_offset": nxt if nxt < total else None,
            }

        return Tool(
            f"list_{e.plural}",
            f"List {e.plural} ({e.summary}).{filters_doc}{search_doc} Results are paged: `total` is the "
            f"full count and `next_offset` the offset of the next page (null on the last).",
            obj(props),
            "read",
            handler,
        )

    def get_tool(self) -> Tool:
        e = self.e
        props: dict[str, Any] = {"id": {"type": "integer"}}
        if e.number:
            props[e.number] = text()

        def handler(ctx: ToolContext, args: Args) -> Any:
            if len(args) != 1:
                raise ToolError(f"give exactly one of: {', '.join(props)}")
            return self._require(ctx, args)

        by = f" by id or {e.number}" if e.number else " by id"
        return Tool(f"get_{e.name}", f"Get one {e.name}{by} ({e.summary}).", obj(props), "read", handler)

    def _insertable(self) -> list[str]:
        return [c for c in self.columns if c not in BOOKKEEPING and not (c == "id" and self.pk == ["id"])]

    def create_tool(self) -> Tool:
        e = self.e
        cols = self._insertable()
        defaults = {
            c: NOW for c in cols if isinstance(self.col(c).type, sa.DateTime) and not self.col(c).nullable
        }
        required = [
            c
            for c in cols
            if not self.col(c).nullable and c not in defaults and not isinstance(self.col(c).type, sa.Boolean)
        ]
        props = {c: json_type(self.col(c)) for c in cols}
        # Flags left out take the ordinary value: a new record is active, not on hold, not opted out.
        flags = {
            c: c == "active"
            for c in cols
            if isinstance(self.col(c).type, sa.Boolean) and not self.col(c).nullable
        }

        def handler(ctx: ToolContext, args: Args) -> Any:
            values = {**defaults, **flags, **args}
            if "updated_at" in self.columns:
                values["updated_at"] = NOW
            names = sorted(values)
            stmt = sql.SQL("INSERT INTO {} ({}) VALUES ({}) RETURNING *").format(
                sql.Identifier(self.table.name),
                sql.SQL(", ").join(sql.Identifier(n) for n in names),
                sql.SQL(", ").join(sql.Placeholder() for _ in names),
            )
            cur = ctx.conn.execute(stmt, [to_sql_value(self.col(n), values[n]) for n in names])
            return {"created": first(cur)}

        return Tool(
            f"create_{e.name}",
            f"Create a {e.name} ({e.summary}).",
            obj(props, required),
            "reversible-write" if e.delete else "irreversible",
            handler,
        )

    def _set_clause(self, fields: Args) -> tuple[sql.Composable, list[Any]]:
        parts: list[sql.Composable] = [sql.SQL("{} = %s").format(sql.Identifier(k)) for k in sorted(fields)]
        params = [to_sql_value(self.col(k), fields[k]) for k in sorted(fields)]
        if "updated_at" in self.columns:
            parts += [sql.SQL("updated_at = %s"), sql.SQL("sys_mod_count = sys_mod_count + 1")]
            params.append(NOW)
        return sql.SQL(", ").join(parts), params

    def update_tool(self) -> Tool:
        e = self.e
        props = {"id": {"type": "integer"}, **{c: json_type(self.col(c)) for c in e.writable}}

        def handler(ctx: ToolContext, args: Args) -> Any:
            key = {"id": args.pop("id")}
            if not args:
                raise ToolError(f"nothing to update: give at least one of {', '.join(e.writable)}")
            self._require(ctx, key)
            set_clause, params = self._set_clause(args)
            ctx.conn.execute(
                sql.SQL("UPDATE {} SET {} WHERE id = %s").format(sql.Identifier(self.table.name), set_clause),
                [*params, key["id"]],
            )
            return {"updated": self._fetch(ctx, key)}

        return Tool(
            f"update_{e.name}",
            f"Update fields of one {e.name} by id. Writable: {', '.join(e.writable)}.",
            obj(props, ["id"]),
            "reversible-write",
            handler,
        )

    def delete_tool(self) -> Tool:
        e = self.e
        props = {c: {"type": "integer"} for c in self.pk}

        def handler(ctx: ToolContext, args: Args) -> Any:
            row = self._require(ctx, args)
            where, params = self._where(args, None)
            ctx.conn.execute(
                sql.SQL("DELETE FROM {} WHERE {}").format(sql.Identifier(self.table.name), where), params
            )
            return {"deleted": row}

        return Tool(
            f"delete_{e.name}",
            f"Delete one {e.name} by {' and '.join(self.pk)}. This cannot be undone.",
            obj(props, self.pk),
            "irreversible",
            handler,
        )

    def bulk_update_tool(self) -> Tool:
        e = self.e
        props = {
            "filters": obj(self._filter_props()),
            "set": obj({c: json_type(self.col(c)) for c in e.writable}),
        }

        def handler(ctx: ToolContext, args: Args) -> Any:
            filters, fields = args["filters"], args["set"]
            if not filters:
                raise ToolError("filters must name at least one field; refusing to update every row")
            if not fields:
                raise ToolError(f"set must name at least one of {', '.join(e.writable)}")
            where, wparams = self._where(filters, None)
            set_clause, sparams = self._set_clause(fields)
            cur = ctx.conn.execute(
                sql.SQL("UPDATE {} SET {} WHERE {} RETURNING id").format(
                    sql.Identifier(self.table.name), set_clause, where
                ),
                [*sparams, *wparams],
            )
            ids = sorted(r[0] for r in cur.fetchall())
            return {"updated": len(ids), "ids": ids}

        return Tool(
            f"update_{e.plural}_where",
            f"Update every {e.name} matching all the given filters (exact match). Affects all matches.",
            obj(props, ["filters", "set"]),
            "reversible-write",
            handler,
        )

    def bulk_delete_tool(self) -> Tool:
        e = self.e
        props = {"filters": obj(self._filter_props())}

        def handler(ctx: ToolContext, args: Args) -> Any:
            filters = args["filters"]
            if not filters:
                raise ToolError("filters must name at least one field; refusing to delete every row")
            where, params = self._where(filters, None)
            cur = ctx.conn.execute(
                sql.SQL("DELETE FROM {} WHERE {} RETURNING {}").format(
                    sql.Identifier(self.table.name),
                    where,
                    sql.SQL(", ").join(sql.Identifier(c) for c in self.pk),
                ),
                params,
            )
            keys = sorted(r[0] if len(r) == 1 else list(r) for r in cur.fetchall())
            return {"deleted": len(keys), "keys": keys}

        return Tool(
            f"delete_{e.plural}_where",
            f"Delete every {e.name} matching all the given filters (exact match). Cannot be undone.",
            obj(props, ["filters"]),
            "irreversible",
            handler,
        )
