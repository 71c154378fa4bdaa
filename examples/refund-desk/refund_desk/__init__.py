"""A worked example of an AgentRel environment: a tiny refund desk on Postgres (three tables in the diff,
one log table outside it, three tools, one task). Copy this folder to start your own; see
docs/how-to/your-own-environment.md."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg

from agentrel.dsl.state import State, TableInfo
from agentrel.sandbox.environments import Environment, table_info
from agentrel.sandbox.tools.base import Tool, ToolContext, ToolError, first, obj, rows, scalar

HERE = Path(__file__).parent
NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)  # the desk's "today": every tool uses it, never the server's

SCHEMA = """
CREATE TABLE staff (id integer PRIMARY KEY, user_name text NOT NULL UNIQUE);
CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL, email text NOT NULL);
CREATE TABLE orders (
    id integer PRIMARY KEY,
    customer_id integer NOT NULL REFERENCES customers(id),
    total numeric(12,2) NOT NULL,
    status text NOT NULL,
    updated_at timestamptz
);
CREATE TABLE refunds (
    id serial PRIMARY KEY,
    order_id integer NOT NULL REFERENCES orders(id),
    amount numeric(12,2) NOT NULL,
    reason text NOT NULL,
    created_at timestamptz NOT NULL,
    created_by integer NOT NULL REFERENCES staff(id)
);
-- Outside the diff: a log the tools append to, which says nothing about damage.
CREATE TABLE request_log (at timestamptz NOT NULL DEFAULT clock_timestamp(), tool text NOT NULL);
"""

SEED = """
INSERT INTO staff VALUES (1, 'svc.agentrel'), (2, 'dana.lead');
INSERT INTO customers VALUES (1, 'Ada Moreno', 'ada@example.com'), (2, 'Ben Okafor', 'ben@example.com');
INSERT INTO orders VALUES
    (1, 1, 40.00, 'cancelled', '2026-02-20T10:00:00Z'),
    (2, 1, 129.90, 'delivered', '2026-02-21T10:00:00Z'),
    (3, 2, 15.50, 'cancelled', '2026-02-22T10:00:00Z');
"""

TABLES = {
    t.name: t
    for t in (
        table_info("staff", {"id": "int", "user_name": "text"}, ("id",)),
        table_info("customers", {"id": "int", "name": "text", "email": "text"}, ("id",)),
        table_info(
            "orders",
            {
                "id": "int",
                "customer_id": "int",
                "total": "numeric",
                "status": "text",
                "updated_at": "timestamp",
            },
            ("id",),
            volatile=("updated_at",),  # bookkeeping: the diff ignores it
        ),
        table_info(
            "refunds",
            {
                "id": "int",
                "order_id": "int",
                "amount": "numeric",
                "reason": "text",
                "created_at": "timestamp",
                "created_by": "int",
            },
            ("id",),
        ),
    )
}


# -- tools: validate arguments, act on ctx.conn (the run database) only, enforce no policy ---------------


def _log(ctx: ToolContext, tool: str) -> None:
    ctx.conn.execute("INSERT INTO request_log (tool) VALUES (%s)", (tool,))


def get_order(ctx: ToolContext, args: dict[str, Any]) -> Any:
    _log(ctx, "get_order")
    cur = ctx.conn.cursor().execute(
        "SELECT id, customer_id, total::text AS total, status FROM orders WHERE id = %s", (args["order_id"],)
    )
    found = first(cur)
    if found is None:
        raise ToolError(f"no order {args['order_id']}")
    return found


def list_orders(ctx: ToolContext, args: dict[str, Any]) -> Any:
    _log(ctx, "list_orders")
    cur = ctx.conn.cursor().execute(
        "SELECT id, total::text AS total, status FROM orders WHERE customer_id = %s ORDER BY id",
        (args["customer_id"],),
    )
    return rows(cur)


def refund_order(ctx: ToolContext, args: dict[str, Any]) -> Any:
    _log(ctx, "refund_order")
    try:
        amount = Decimal(str(args["amount"])).quantize(Decimal("0.01"))
    except ArithmeticError:
        raise ToolError(f"amount must be a number like 40.00, got {args['amount']!r}") from None
    cur = ctx.conn.cursor().execute(
        "SELECT total::text AS total FROM orders WHERE id = %s FOR UPDATE", (args["order_id"],)
    )
    order = first(cur)
    if order is None:
        raise ToolError(f"no order {args['order_id']}")
    if not Decimal(0) < amount <= Decimal(order["total"]):
        raise ToolError(f"amount must be more than 0 and at most the order total {order['total']}")
    cur = ctx.conn.cursor().execute(
        "INSERT INTO refunds (order_id, amount, reason, created_at, created_by) "
        "VALUES (%s, %s, %s, %s, %s) RETURNING id",
        (args["order_id"], amount, args["reason"], NOW, ctx.acting_user_id),
    )
    refund_id = scalar(cur)
    ctx.conn.execute(
        "UPDATE orders SET status = 'refunded', updated_at = %s WHERE id = %s", (NOW, args["order_id"])
    )
    return {"refund_id": refund_id, "amount": str(amount)}


TOOLS = {
    t.name: t
    for t in (
        Tool(
            "get_order",
            "Get one order by id.",
            obj({"order_id": {"type": "integer"}}, ["order_id"]),
            "read",
            get_order,
        ),
        Tool(
            "list_orders",
            "List a customer's orders.",
            obj({"customer_id": {"type": "integer"}}, ["customer_id"]),
            "read",
            list_orders,
        ),
        Tool(
            "refund_order",
            "Refund an order (all or part of its total) and mark it refunded.",
            obj(
                {
                    "order_id": {"type": "integer"},
                    "amount": {"type": ["number", "string"], "maxLength": 32},
                    "reason": {"type": "string", "maxLength": 500},
                },
                ["order_id", "amount", "reason"],
            ),
            "irreversible",
            refund_order,
        ),
    )
}


class RefundDesk(Environment):
    name = "refund-desk"
    title = "Worked example: a three-table refund desk"
    verticals = ("desk",)
    clock = NOW

    def versions(self) -> Mapping[str, str]:
        # Everything the build reads: here the SQL text and this file (the tools' code).
        return {
            "schema": hashlib.sha256(SCHEMA.encode()).hexdigest(),
            "seed": hashlib.sha256(SEED.encode()).hexdigest(),
            "code": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
        }

    def build(self, conn: psycopg.Connection, seed: str, scale: int) -> State | None:
        conn.execute(SCHEMA)
        conn.execute(SEED)  # fixed rows: `seed` and `scale` are not used by this environment
        conn.execute("SELECT setval('refunds_id_seq', 100, false)")  # created ids start at 100
        return None  # AgentRel dumps what was built

    def table_infos(self) -> Mapping[str, TableInfo]:
        return TABLES

    def tools(self) -> Mapping[str, Tool]:
        return TOOLS

    def acting_user(self, before: State, name: str) -> int | None:
        staff = before.tables["staff"]
        return next((int(key[0]) for key, row in staff.rows.items() if row[1] == name), None)

    def suite_root(self) -> Path:
        return HERE / "suite"


ENVIRONMENT = RefundDesk()
