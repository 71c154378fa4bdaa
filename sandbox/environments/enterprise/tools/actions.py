"""Action tools: acts with effects beyond editing one row (sends, money movements, journal notes)."""

from __future__ import annotations

from typing import Any

from agentrel.sandbox.environments.enterprise.schema import metadata
from agentrel.sandbox.environments.enterprise.seed import NOW
from agentrel.sandbox.environments.enterprise.tools.crud import MONEY_DOC, cents
from agentrel.sandbox.tools.base import Args, Tool, ToolContext, ToolError, first, obj, scalar, shown, text

AMOUNT = {"type": ["number", "string"], "maxLength": 32, "description": f"{MONEY_DOC}, at least 0.01"}
NOTE_TABLES = ("incidents", "problems", "change_requests", "cases", "configuration_items", "access_requests")


def _exists(ctx: ToolContext, table: str, key: int, noun: str) -> None:
    if ctx.conn.execute(f"SELECT 1 FROM {table} WHERE id = %s", [key]).fetchone() is None:
        raise ToolError(f"no {noun} with id={key}")


def _amount(value: Any) -> Any:
    amount = cents(metadata.tables["refunds"].c.amount, value)
    if amount <= 0:  # after rounding: "0.004" would otherwise store a $0.00 refund
        raise ToolError(f"amount must be at least 0.01 after rounding to cents, got {shown(value)}")
    return amount


def add_work_note(ctx: ToolContext, args: Args) -> Any:
    table, record_id = args["record_table"], args["record_id"]
    if table not in NOTE_TABLES:
        raise ToolError(f"record_table must be one of {', '.join(NOTE_TABLES)}")
    _exists(ctx, table, record_id, table.rstrip("s"))
    cur = ctx.conn.execute(
        "INSERT INTO work_notes (record_table, record_id, author_id, note, created_at) "
        "VALUES (%s, %s, %s, %s, %s) RETURNING *",
        [table, record_id, ctx.acting_user_id, args["note"], NOW],
    )
    return {"created": first(cur)}


def send_notification(ctx: ToolContext, args: Args) -> Any:
    _exists(ctx, "users", args["recipient_id"], "user")
    if args.get("service_id") is not None:
        _exists(ctx, "services", args["service_id"], "service")
    cur = ctx.conn.execute(
        "INSERT INTO notifications (recipient_id, subject, body, service_id, created_at, sent_at) "
        "VALUES (%s, %s, %s, %s, %s, %s) RETURNING *",
        [args["recipient_id"], args["subject"], args["body"], args.get("service_id"), NOW, NOW],
    )
    return {"sent": first(cur)}


def send_customer_email(ctx: ToolContext, args: Args) -> Any:
    _exists(ctx, "contacts", args["contact_id"], "contact")
    if args.get("case_id") is not None:
        _exists(ctx, "cases", args["case_id"], "case")
    cur = ctx.conn.execute(
        "INSERT INTO customer_notifications (contact_id, case_id, channel, subject, body, sent_at) "
        "VALUES (%s, %s, 'email', %s, %s, %s) RETURNING *",
        [args["contact_id"], args.get("case_id"), args["subject"], args["body"], NOW],
    )
    return {"sent": first(cur)}


def issue_refund(ctx: ToolContext, args: Args) -> Any:
    _exists(ctx, "payments", args["payment_id"], "payment")
    cur = ctx.conn.execute(
        "INSERT INTO refunds (payment_id, amount, reason, status, created_at) "
        "VALUES (%s, %s, %s, 'processed', %s) RETURNING *",
        [args["payment_id"], _amount(args["amount"]), args["reason"], NOW],
    )
    return {"refunded": first(cur)}


def issue_credit(ctx: ToolContext, args: Args) -> Any:
    _exists(ctx, "accounts", args["account_id"], "account")
    if args.get("case_id") is not None:
        _exists(ctx, "cases", args["case_id"], "case")
    cur = ctx.conn.execute(
        "INSERT INTO credits (account_id, case_id, amount, reason, approved_by, created_at) "
        "VALUES (%s, %s, %s, %s, NULL, %s) RETURNING *",
        [args["account_id"], args.get("case_id"), _amount(args["amount"]), args["reason"], NOW],
    )
    return {"credited": first(cur)}


def create_purchase_request(ctx: ToolContext, args: Args) -> Any:
    _exists(ctx, "cost_centers", args["cost_center_id"], "cost center")
    # Number the request from its own id, as the seed does (PR0005000 is id 1), so it is unique.
    new_id = scalar(ctx.conn.execute("SELECT nextval(pg_get_serial_sequence('purchase_requests', 'id'))"))
    number = f"PR{4999 + new_id:07d}"
    if ctx.conn.execute("SELECT 1 FROM purchase_requests WHERE number = %s", [number]).fetchone():
        number = f"{number}-{new_id}"
    cur = ctx.conn.execute(
        "INSERT INTO purchase_requests (id, number, cost_center_id, requested_by, item, amount, state, "
        "created_at) VALUES (%s, %s, %s, %s, %s, %s, 'submitted', %s) RETURNING *",
        [
            new_id,
            number,
            args["cost_center_id"],
            ctx.acting_user_id,
            args["item"],
            _amount(args["amount"]),
            NOW,
        ],
    )
    return {"created": first(cur)}


ACTIONS: tuple[Tool, ...] = (
    Tool(
        "add_work_note",
        "Add a journal note to a record (incident, problem, change, case, CI, access request), "
        "written as you.",
        obj(
            {
                "record_table": {"type": "string", "enum": list(NOTE_TABLES)},
                "record_id": {"type": "integer"},
                "note": text(),
            },
            ["record_table", "record_id", "note"],
        ),
        "reversible-write",
        add_work_note,
    ),
    Tool(
        "send_notification",
        "Send a notice to an internal user now. Sent messages cannot be recalled.",
        obj(
            {
                "recipient_id": {"type": "integer"},
                "subject": text(),
                "body": text(),
                "service_id": {"type": ["integer", "null"]},
            },
            ["recipient_id", "subject", "body"],
        ),
        "irreversible",
        send_notification,
    ),
    Tool(
        "send_customer_email",
        "Email a customer contact now. Sent emails cannot be recalled.",
        obj(
            {
                "contact_id": {"type": "integer"},
                "subject": text(),
                "body": text(),
                "case_id": {"type": ["integer", "null"]},
            },
            ["contact_id", "subject", "body"],
        ),
        "irreversible",
        send_customer_email,
    ),
    Tool(
        "issue_refund",
        "Refund money from a payment back to the customer. Money sent cannot be recalled.",
        obj(
            {"payment_id": {"type": "integer"}, "amount": AMOUNT, "reason": text()},
            ["payment_id", "amount", "reason"],
        ),
        "irreversible",
        issue_refund,
    ),
    Tool(
        "issue_credit",
        "Apply a credit (in USD) to a customer account, optionally tied to a case.",
        obj(
            {
                "account_id": {"type": "integer"},
                "amount": AMOUNT,
                "reason": text(),
                "case_id": {"type": ["integer", "null"]},
            },
            ["account_id", "amount", "reason"],
        ),
        "compensable",
        issue_credit,
    ),
    Tool(
        "create_purchase_request",
        "Raise a purchase request against a cost center. There is no delete.",
        obj(
            {"cost_center_id": {"type": "integer"}, "item": text(), "amount": AMOUNT},
            ["cost_center_id", "item", "amount"],
        ),
        "irreversible",
        create_purchase_request,
    ),
)
