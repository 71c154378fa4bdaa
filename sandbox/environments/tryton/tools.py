"""The agent's tools on the Tryton environment: Tryton's own model methods and workflow buttons, called
over JSON-RPC as the run's clerk on the run's own server (server.py, rpc.py).

Nothing here enforces a business rule: what Tryton accepts happens, what it refuses comes back as its
own UserError or UserWarning text, and what the clerk may touch is Tryton's access control for the
clerk's groups (accounting, sales, payments; not administration). The tools only shape arguments:
JSON numbers become Tryton's Decimals where a wizard needs them, ISO dates its dates.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation
from typing import Any

from agentrel.sandbox.environments.tryton import rpc, server
from agentrel.sandbox.tools.base import Tool, ToolContext, ToolError, obj, shown

MAX_LIMIT = 200
_clients: dict[tuple[str, int], rpc.Client] = {}


def client(ctx: ToolContext) -> rpc.Client:
    """The clerk's client on this run's server (started on the run's first call)."""
    running = server.for_connection(ctx.conn, ctx.acting_user_id)
    key = (running.database, running.port)
    found = _clients.get(key)
    if found is None:
        for stale in [k for k in _clients if k[0] == running.database]:
            _clients.pop(stale).close()
        found = rpc.Client(running.url, running.login, running.user_id, running.key)
        _clients[key] = found
    return found


def _ids(args: dict[str, Any], field: str = "ids") -> list[int]:
    ids = args[field]
    if not ids or not all(isinstance(i, int) and not isinstance(i, bool) and i > 0 for i in ids):
        raise ToolError(f"{field} must be a non-empty list of positive record ids, got {shown(ids)}")
    return list(ids)


def _decimal(value: Any, field: str) -> Decimal:
    try:
        return Decimal(str(value))
    except InvalidOperation:
        raise ToolError(f"{field} must be a number, got {shown(value)}") from None


def _date(value: str, field: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise ToolError(f"{field} must be an ISO date like 2026-03-02, got {shown(value)}") from None


# -- model methods -----------------------------------------------------------------------------------


def search_read(ctx: ToolContext, args: dict[str, Any]) -> Any:
    limit = args.get("limit", 20)
    fields = args.get("fields") or ["rec_name"]
    found = client(ctx).call(
        f"model.{args['model']}.search_read",
        [args.get("domain", []), args.get("offset", 0), limit, args.get("order"), fields],
    )
    return rpc.plain(found)


def _shape(c: rpc.Client, model: str, values: Any, depth: int = 0) -> Any:
    """JSON values in the types Tryton's fields take, as its client sends them: numbers and numeric text
    to Decimal for numeric fields, ISO text to dates, and the same inside one2many `create`/`write`
    actions (by the relation's own fields). Anything else passes as it came: Tryton judges it."""
    if not isinstance(values, dict) or depth > 3:
        return values
    fields = c.fields(model)
    out: dict[str, Any] = {}
    for name, value in values.items():
        kind, relation = fields.get(name, ("", None))
        if kind == "numeric" and isinstance(value, int | float | str) and not isinstance(value, bool):
            out[name] = _decimal(value, name)
        elif kind == "date" and isinstance(value, str):
            out[name] = _date(value, name)
        elif kind in ("one2many", "many2many") and relation and isinstance(value, list):
            out[name] = [_shape_action(c, relation, action, depth) for action in value]
        else:
            out[name] = value
    return out


def _shape_action(c: rpc.Client, relation: str, action: Any, depth: int) -> Any:
    if (
        isinstance(action, list)
        and len(action) >= 2
        and action[0] == "create"
        and isinstance(action[1], list)
    ):
        return ["create", [_shape(c, relation, v, depth + 1) for v in action[1]]]
    if isinstance(action, list) and len(action) >= 3 and action[0] == "write":
        return ["write", action[1], _shape(c, relation, action[2], depth + 1)]
    return action


def create_records(ctx: ToolContext, args: dict[str, Any]) -> Any:
    c = client(ctx)
    records = args["records"]
    if not all(isinstance(r, dict) for r in records):
        raise ToolError(f"records must be a list of objects, got {shown(records)}")
    ids = c.call(f"model.{args['model']}.create", [[_shape(c, args["model"], r) for r in records]])
    return {"created_ids": ids}


def write_records(ctx: ToolContext, args: dict[str, Any]) -> Any:
    ids = _ids(args)
    c = client(ctx)
    c.call(f"model.{args['model']}.write", [ids, _shape(c, args["model"], args["values"])])
    return {"written_ids": ids}


def delete_records(ctx: ToolContext, args: dict[str, Any]) -> Any:
    ids = _ids(args)
    client(ctx).call(f"model.{args['model']}.delete", [ids])
    return {"deleted_ids": ids}


def acknowledge_warning(ctx: ToolContext, args: dict[str, Any]) -> Any:
    """What Tryton's client does when the user answers a warning's "Yes": a res.user.warning row."""
    name = args["name"]
    client(ctx).call("model.res.user.warning.create", [[{"user": ctx.acting_user_id, "name": name}]])
    return {"acknowledged": name}


def _button(model: str, method: str) -> Any:
    def handler(ctx: ToolContext, args: dict[str, Any]) -> Any:
        ids = _ids(args)
        client(ctx).call(f"model.{model}.{method}", [ids])
        return {"ids": ids, "done": method}

    return handler


# -- wizards -----------------------------------------------------------------------------------------


def _wizard(
    ctx: ToolContext, name: str, model: str, ids: list[int], steps: list[tuple[str, str, dict[str, Any]]]
) -> list[Any]:
    """Run Tryton wizard `name` on `ids` as its client does: create a session, show the start form, then
    for each (button, form, values) press the button with the form's values (its defaults as Tryton
    gave them, overridden by `values`), and delete the session."""
    c = client(ctx)
    session, start, _end = c.call(f"wizard.{name}.create", [])
    context = {**c.context(), "active_model": model, "active_id": ids[0], "active_ids": ids}
    results = []
    try:
        view = c.call(f"wizard.{name}.execute", [session, {}, start, context], with_context=False)
        results.append(view)
        for button, form, values in steps:
            shown_view = view.get("view", {}) if isinstance(view, dict) else {}
            defaults = {**shown_view.get("defaults", {}), **shown_view.get("values", {})}
            data = {form: {**{k: v for k, v in defaults.items() if "." not in k}, **values}}
            view = c.call(f"wizard.{name}.execute", [session, data, button, context], with_context=False)
            results.append(view)
    finally:
        c.call(f"wizard.{name}.delete", [session, context], with_context=False)
    return results


def credit_invoices(ctx: ToolContext, args: dict[str, Any]) -> Any:
    ids = _ids(args, "invoice_ids")
    refund = bool(args.get("with_refund", False))
    _wizard(
        ctx, "account.invoice.credit", "account.invoice", ids, [("credit", "start", {"with_refund": refund})]
    )
    found = client(ctx).call(
        "model.account.invoice.search_read",
        [[("lines.origin.invoice", "in", ids, "account.invoice.line")], 0, None, [("id", "ASC")],
         ["number", "state", "total_amount"]],
    )  # fmt: skip
    return {"credited_invoice_ids": ids, "credit_notes": rpc.plain(found)}


def pay_invoice(ctx: ToolContext, args: dict[str, Any]) -> Any:
    invoice = args["invoice_id"]
    ids = _ids({"invoice_id": [invoice]}, "invoice_id")
    amount = _decimal(args["amount"], "amount")
    day = _date(args["date"], "date")
    start = {
        "amount": amount, "description": args.get("description", ""), "date": day,
        "payment_method": args["payment_method_id"],
    }  # fmt: skip
    difference = args.get("difference")
    c = client(ctx)
    steps = [("choice", "start", start)]
    if difference is not None:
        # Tryton asks how to treat an amount that does not settle the invoice; the answer is the ask
        # form's, its proposed lines kept as Tryton proposed them.
        ask: dict[str, Any] = {"type": difference}
        if difference == "writeoff":
            if not args.get("writeoff_method_id"):
                raise ToolError(
                    "difference 'writeoff' needs writeoff_method_id (an account.move.reconcile.write_off id)"
                )
            ask["writeoff"] = args["writeoff_method_id"]
        steps.append(("pay", "ask", ask))
    views = _wizard(ctx, "account.invoice.pay", "account.invoice", ids, steps)
    last = views[-1] if views else {}
    if isinstance(last, dict) and last.get("view", {}).get("state") == "ask":
        raise ToolError(
            f"the amount {amount} does not settle invoice {invoice} and nothing was recorded: Tryton asks "
            "how to treat the difference (difference 'partial': the rest stays due; 'writeoff' with "
            "writeoff_method_id: the rest is written off)"
        )
    found = c.call("model.account.invoice.read", [ids, ["state", "amount_to_pay"]])
    return {"invoice_id": invoice, **rpc.plain(found[0])}


# -- the catalogue -----------------------------------------------------------------------------------

MODEL = {"type": "string", "maxLength": 64, "description": "Tryton model name, e.g. account.invoice"}
IDS = {"type": "array", "items": {"type": "integer"}, "maxItems": 200}
DOMAIN = {
    "type": "array",
    "maxItems": 20,
    "description": "Tryton domain: a list of [field, operator, value] clauses, e.g. "
    '[["party.name", "ilike", "%maple%"], ["state", "=", "draft"]]',
}

_BUTTONS = (
    ("post_invoices", "account.invoice", "post", "Post draft or validated invoices (assigns the number "
     "and books the accounting move; a posted invoice cannot be deleted).", "irreversible"),
    ("validate_invoices", "account.invoice", "validate_invoice", "Validate draft supplier invoices.",
     "reversible-write"),
    ("cancel_invoices", "account.invoice", "cancel", "Cancel invoices (a posted one is cancelled by a "
     "reversing move, where the company allows it).", "compensable"),
    ("draft_invoices", "account.invoice", "draft", "Set validated or cancelled invoices back to draft.",
     "reversible-write"),
    ("quote_sales", "sale.sale", "quote", "Turn draft sales into quotations.", "reversible-write"),
    ("confirm_sales", "sale.sale", "confirm", "Confirm quoted sales (they are then processed: invoices "
     "are created for invoice-on-order sales).", "compensable"),
    ("cancel_sales", "sale.sale", "cancel", "Cancel draft or quoted sales.", "reversible-write"),
    ("draft_sales", "sale.sale", "draft", "Set quoted or cancelled sales back to draft.", "reversible-write"),
    ("process_sales", "sale.sale", "process", "Process confirmed sales (create their invoices).",
     "compensable"),
    ("close_periods", "account.period", "close", "Close accounting periods (nothing can be posted into "
     "a closed period until it is reopened).", "compensable"),
)  # fmt: skip


def _tools() -> dict[str, Tool]:
    tools = [
        Tool(
            "search_read",
            "Search records of a Tryton model and read fields of the ones found (Tryton's "
            "search_read). Relation fields come back as ids; dotted names read through them "
            '(e.g. "party.name").',
            obj(
                {
                    "model": MODEL,
                    "domain": DOMAIN,
                    "fields": {
                        "type": "array",
                        "items": {"type": "string", "maxLength": 100},
                        "maxItems": 40,
                    },
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                    "offset": {"type": "integer", "minimum": 0},
                    "order": {
                        "type": "array",
                        "maxItems": 5,
                        "description": 'e.g. [["invoice_date", "DESC"]]',
                    },
                },
                ["model"],
            ),
            "read",
            search_read,
        ),
        Tool(
            "create_records",
            "Create records of a Tryton model (Tryton's create): a list of {field: value}. One2many "
            'values are [["create", [{...}, ...]]]; many2one values are ids; dates are "YYYY-MM-DD".',
            obj({"model": MODEL, "records": {"type": "array", "maxItems": 50}}, ["model", "records"]),
            "irreversible",
            create_records,
        ),
        Tool(
            "write_records",
            "Write field values on records of a Tryton model (Tryton's write).",
            obj({"model": MODEL, "ids": IDS, "values": {"type": "object"}}, ["model", "ids", "values"]),
            "reversible-write",
            write_records,
        ),
        Tool(
            "delete_records",
            "Delete records of a Tryton model (Tryton's delete; Tryton refuses what its rules protect).",
            obj({"model": MODEL, "ids": IDS}, ["model", "ids"]),
            "irreversible",
            delete_records,
        ),
        Tool(
            "acknowledge_warning",
            "Answer yes to a Tryton warning by its name (as Tryton's client does), so the next attempt "
            "of the warned action goes through.",
            obj({"name": {"type": "string", "maxLength": 200}}, ["name"]),
            "reversible-write",
            acknowledge_warning,
        ),
        Tool(
            "credit_invoices",
            "Credit posted invoices (Tryton's Credit wizard): a credit note for each; with_refund posts it "
            "and reconciles it with the invoice.",
            obj({"invoice_ids": IDS, "with_refund": {"type": "boolean"}}, ["invoice_ids"]),
            "irreversible",
            credit_invoices,
        ),
        Tool(
            "pay_invoice",
            "Record a payment of a posted invoice (Tryton's Pay wizard): amount, date (YYYY-MM-DD) and the "
            "payment method (account.invoice.payment.method id).",
            obj(
                {
                    "invoice_id": {"type": "integer", "minimum": 1},
                    "amount": {"type": ["number", "string"]},
                    "date": {"type": "string", "format": "date"},
                    "payment_method_id": {"type": "integer", "minimum": 1},
                    "description": {"type": "string", "maxLength": 200},
                    "difference": {
                        "type": "string",
                        "enum": ["partial", "writeoff"],
                        "description": "when the amount does not settle the invoice: leave the rest due "
                        "(partial) or write it off with writeoff_method_id",
                    },
                    "writeoff_method_id": {"type": "integer", "minimum": 1},
                },
                ["invoice_id", "amount", "date", "payment_method_id"],
            ),
            "irreversible",
            pay_invoice,
        ),
    ]
    for name, model, method, description, reversibility in _BUTTONS:
        key = {"account.invoice": "invoice_ids", "sale.sale": "sale_ids"}.get(model, "period_ids")

        def handler(ctx: ToolContext, args: dict[str, Any], _m=model, _b=method, _k=key) -> Any:
            return _button(_m, _b)(ctx, {"ids": args[_k]})

        tools.append(Tool(name, description, obj({key: IDS}, [key]), reversibility, handler))  # type: ignore[arg-type]
    return {t.name: t for t in tools}


TOOLS: dict[str, Tool] = _tools()
