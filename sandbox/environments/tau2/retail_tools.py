"""τ²-retail's agent tools on the relational port: the same names, arguments, error messages and JSON
values as τ²'s retail toolkit, acting on the run database (tables of retail_tables.py).

Behaviour is τ²'s, including what its policy leaves to the agent and its quirks: no tool checks who the
customer is (any order can be changed by anyone who names it); an address change is accepted on any
order whose status contains "pending" (so also after an item modification, which the policy forbids);
a cancellation refunds every line of the payment history (a refund line too); an item modification gives
every modified item the price and options of the *last* new item named; a zero price difference is
recorded as a refund of 0. Money is computed with τ²'s floating-point operations and stored in cents.
tests/tau2/test_retail_differential.py runs τ²'s own toolkit beside these on the same calls.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from agentrel.sandbox.environments.tau2.generic_tools import (
    Args,
    calculate,
    declare,
    transfer_to_human_agents,
)
from agentrel.sandbox.environments.tau2.relational import money
from agentrel.sandbox.environments.tau2.retail_reads import (
    find_user_id_by_email,
    find_user_id_by_name_zip,
    get_order_details,
    get_product_details,
    get_user_details,
    list_all_product_types,
    order_json,
    payment_method,
    user_json,
    user_row,
    variant,
)
from agentrel.sandbox.environments.tau2.retail_tables import ADDRESS
from agentrel.sandbox.tools.base import Tool, ToolContext, ToolError

REASONS = ("no longer needed", "ordered by mistake")


def _ids(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ToolError(f"{what} must be a list of item ids (strings)")
    return list(value)


def _set_balance(ctx: ToolContext, user_id: str, payment_id: str, balance: float) -> None:
    ctx.conn.execute(
        "UPDATE payment_methods SET balance = %s WHERE user_id = %s AND payment_id = %s",
        (Decimal(money(balance) or "0"), user_id, payment_id),
    )


def _append_payment(ctx: ToolContext, oid: str, kind: str, amount: float, payment_id: str) -> None:
    ctx.conn.execute(
        "INSERT INTO order_payments (order_id, ordinal, transaction_type, amount, payment_method_id) "
        "SELECT %s, count(*), %s, %s, %s FROM order_payments WHERE order_id = %s",
        (oid, kind, Decimal(money(amount) or "0"), payment_id, oid),
    )


def _set_order(ctx: ToolContext, oid: str, **values: Any) -> None:
    cols = ", ".join(f"{c} = %s" for c in values)  # column names are this module's literals
    ctx.conn.execute(f"UPDATE orders SET {cols} WHERE order_id = %s", (*values.values(), oid))


def _request_items(ctx: ToolContext, oid: str, kind: str, item_ids: list[str]) -> None:
    for n, item_id in enumerate(item_ids):
        ctx.conn.execute(
            "INSERT INTO order_request_items (order_id, kind, ordinal, item_id) VALUES (%s, %s, %s, %s)",
            (oid, kind, n, item_id),
        )


def _too_many(item_ids: list[str], order: dict[str, Any]) -> str | None:
    """The first id asked for more often than the order holds it (duplicates allowed), else None."""
    held = [i["item_id"] for i in order["items"]]
    return next((i for i in item_ids if item_ids.count(i) > held.count(i)), None)


def _address(args: Args) -> dict[str, Any]:
    return {k: args[k] for k in ADDRESS}


def cancel_pending_order(ctx: ToolContext, args: Args) -> Any:
    order = order_json(ctx, args["order_id"])
    oid, reason = order["order_id"], args["reason"]
    if order["status"] != "pending":
        raise ToolError("Non-pending order cannot be cancelled")
    if reason not in REASONS:
        raise ToolError("Invalid reason")
    for p in order["payment_history"]:
        method = payment_method(ctx, order["user_id"], p["payment_method_id"])
        _append_payment(ctx, oid, "refund", p["amount"], p["payment_method_id"])
        if method["source"] == "gift_card":  # refunded at once; other sources in days, outside the data
            _set_balance(ctx, order["user_id"], method["id"], round(method["balance"] + p["amount"], 2))
    _set_order(ctx, oid, status="cancelled", cancel_reason=reason)
    return order_json(ctx, oid)


def exchange_delivered_order_items(ctx: ToolContext, args: Args) -> Any:
    item_ids, new_ids = _ids(args["item_ids"], "item_ids"), _ids(args["new_item_ids"], "new_item_ids")
    order = order_json(ctx, args["order_id"])
    oid = order["order_id"]
    if order["status"] != "delivered":
        raise ToolError("Non-delivered order cannot be exchanged")
    missing = _too_many(item_ids, order)
    if missing is not None:
        raise ToolError(f"Number of {missing} not found.")
    if len(item_ids) != len(new_ids):
        raise ToolError("The number of items to be exchanged should match.")
    diff: float = 0
    for old, new in zip(item_ids, new_ids, strict=True):
        item = next(i for i in order["items"] if i["item_id"] == old)
        wanted = variant(ctx, item["product_id"], new)
        if not wanted["available"]:
            raise ToolError(f"New item {new} not found or available")
        diff += wanted["price"] - item["price"]
    diff = round(diff, 2)
    method = payment_method(ctx, order["user_id"], args["payment_method_id"])
    if method["source"] == "gift_card" and method["balance"] < diff:
        raise ToolError("Insufficient gift card balance to pay for the price difference")
    _set_order(
        ctx,
        oid,
        status="exchange requested",
        exchange_payment_method_id=method["id"],
        exchange_price_difference=Decimal(money(diff) or "0"),
    )
    _request_items(ctx, oid, "exchange_items", sorted(item_ids))
    _request_items(ctx, oid, "exchange_new_items", sorted(new_ids))
    return order_json(ctx, oid)


def return_delivered_order_items(ctx: ToolContext, args: Args) -> Any:
    item_ids = _ids(args["item_ids"], "item_ids")
    order = order_json(ctx, args["order_id"])
    oid = order["order_id"]
    if order["status"] != "delivered":
        raise ToolError("Non-delivered order cannot be returned")
    method = payment_method(ctx, order["user_id"], args["payment_method_id"])
    original = order["payment_history"][0]["payment_method_id"]
    if method["source"] != "gift_card" and method["id"] != original:
        raise ToolError("Payment method should be the original payment method")
    if _too_many(item_ids, order) is not None:
        raise ToolError("Some item not found")
    _set_order(ctx, oid, status="return requested", return_payment_method_id=method["id"])
    _request_items(ctx, oid, "return_items", sorted(item_ids))
    return order_json(ctx, oid)


def modify_pending_order_address(ctx: ToolContext, args: Args) -> Any:
    order = order_json(ctx, args["order_id"])
    if "pending" not in order["status"]:
        raise ToolError("Non-pending order cannot be modified")
    _set_order(ctx, order["order_id"], **_address(args))
    return order_json(ctx, order["order_id"])


def modify_pending_order_items(ctx: ToolContext, args: Args) -> Any:
    item_ids, new_ids = _ids(args["item_ids"], "item_ids"), _ids(args["new_item_ids"], "new_item_ids")
    order = order_json(ctx, args["order_id"])
    oid, user_id = order["order_id"], order["user_id"]
    if order["status"] != "pending":
        raise ToolError("Non-pending order cannot be modified")
    missing = _too_many(item_ids, order)
    if missing is not None:
        raise ToolError(f"{missing} not found")
    if len(item_ids) != len(new_ids):
        raise ToolError("The number of items to be exchanged should match")
    diff: float = 0
    last: dict[str, Any] = {}
    for old, new in zip(item_ids, new_ids, strict=True):
        if old == new:
            raise ToolError("The new item id should be different from the old item id")
        item = next(i for i in order["items"] if i["item_id"] == old)
        last = variant(ctx, item["product_id"], new)
        if not last["available"]:
            raise ToolError(f"New item {new} not found or available")
        diff += last["price"] - item["price"]
    method = payment_method(ctx, user_id, args["payment_method_id"])
    if method["source"] == "gift_card" and method["balance"] < diff:
        raise ToolError("Insufficient gift card balance to pay for the new item")
    _append_payment(ctx, oid, "payment" if diff > 0 else "refund", abs(diff), method["id"])
    if method["source"] == "gift_card":
        _set_balance(ctx, user_id, method["id"], round(method["balance"] - diff, 2))
    items = order["items"]
    for old, new in zip(item_ids, new_ids, strict=True):
        # τ²'s quirk, kept: the first item still holding the old id takes the new id and the price and
        # options of the last variant looked up above, whichever new item that was.
        n = next(k for k, i in enumerate(items) if i["item_id"] == old)
        items[n] = {**items[n], "item_id": new}
        ctx.conn.execute(
            "UPDATE order_items SET item_id = %s, price = %s WHERE order_id = %s AND ordinal = %s",
            (new, Decimal(money(last["price"]) or "0"), oid, n),
        )
        ctx.conn.execute("DELETE FROM order_item_options WHERE order_id = %s AND item_ordinal = %s", (oid, n))
        for k, (name, value) in enumerate(last["options"].items()):
            ctx.conn.execute(
                "INSERT INTO order_item_options (order_id, item_ordinal, name, ordinal, value) "
                "VALUES (%s, %s, %s, %s, %s)",
                (oid, n, name, k, value),
            )
    _set_order(ctx, oid, status="pending (item modified)")
    return order_json(ctx, oid)


def modify_pending_order_payment(ctx: ToolContext, args: Args) -> Any:
    order = order_json(ctx, args["order_id"])
    oid, user_id = order["order_id"], order["user_id"]
    if "pending" not in order["status"]:
        raise ToolError("Non-pending order cannot be modified")
    method = payment_method(ctx, user_id, args["payment_method_id"])
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise ToolError("There should be exactly one payment for a pending order")
    old_id, amount = history[0]["payment_method_id"], history[0]["amount"]
    if old_id == method["id"]:
        raise ToolError("The new payment method should be different from the current one")
    if method["source"] == "gift_card" and method["balance"] < amount:
        raise ToolError("Insufficient gift card balance to pay for the order")
    _append_payment(ctx, oid, "payment", amount, method["id"])
    _append_payment(ctx, oid, "refund", amount, old_id)
    if method["source"] == "gift_card":
        _set_balance(ctx, user_id, method["id"], round(method["balance"] - amount, 2))
    old = payment_method(ctx, user_id, old_id)
    if old["source"] == "gift_card":
        _set_balance(ctx, user_id, old_id, round(old["balance"] + amount, 2))
    return order_json(ctx, oid)


def modify_user_address(ctx: ToolContext, args: Args) -> Any:
    uid = user_row(ctx, args["user_id"])["user_id"]
    cols = ", ".join(f"{c} = %s" for c in ADDRESS)
    ctx.conn.execute(f"UPDATE users SET {cols} WHERE user_id = %s", (*_address(args).values(), uid))
    return user_json(ctx, uid)


# -- declarations ------------------------------------------------------------------------------------------

_S = {"type": "string", "maxLength": 200}
_IDS = {"type": "array", "items": {"type": "string"}}
_ADDR = {k: _S for k in ("address1", "address2", "city", "state", "country", "zip")}
_ORDER = {"order_id": {**_S, "description": "The order id, such as '#W0000000' (with the '#')."}}
_PAYMENT = {
    "payment_method_id": {**_S, "description": "Such as 'gift_card_0000000' or 'credit_card_0000000'."}
}

TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        declare(
            "find_user_id_by_email",
            "The user id of the customer with this email.",
            {"email": _S},
            "read",
            find_user_id_by_email,
        ),
        declare(
            "find_user_id_by_name_zip",
            "The user id of the customer with this first name, last name and zip code.",
            {"first_name": _S, "last_name": _S, "zip": _S},
            "read",
            find_user_id_by_name_zip,
        ),
        declare(
            "get_user_details",
            "A user's profile: name, default address, email, payment methods and orders.",
            {"user_id": _S},
            "read",
            get_user_details,
        ),
        declare(
            "get_order_details",
            "An order's status, address, items, fulfillments and payment history.",
            _ORDER,
            "read",
            get_order_details,
        ),
        declare(
            "get_product_details",
            "A product's variants (item ids, options, availability, price). A product id is not an item id.",
            {"product_id": _S},
            "read",
            get_product_details,
        ),
        declare(
            "list_all_product_types",
            "Every product type's name and product id (JSON text, sorted by name).",
            {},
            "read",
            list_all_product_types,
        ),
        declare(
            "calculate",
            "Evaluate an arithmetic expression of numbers, + - * / and parentheses.",
            {"expression": _S},
            "read",
            calculate,
        ),
        declare(
            "transfer_to_human_agents",
            "Hand the customer to a human agent with a summary of the issue.",
            {"summary": {"type": "string", "maxLength": 10000}},
            "read",
            transfer_to_human_agents,
        ),
        declare(
            "cancel_pending_order",
            "Cancel a pending order and refund it (reason 'no longer needed' or 'ordered by mistake').",
            {**_ORDER, "reason": _S},
            "irreversible",
            cancel_pending_order,
        ),
        declare(
            "exchange_delivered_order_items",
            "Request an exchange of items of a delivered order for other variants of the same products; the "
            "price difference is paid or refunded through the payment method.",
            {**_ORDER, "item_ids": _IDS, "new_item_ids": _IDS, **_PAYMENT},
            "irreversible",
            exchange_delivered_order_items,
        ),
        declare(
            "return_delivered_order_items",
            "Request a return of items of a delivered order, refunded to the payment method.",
            {**_ORDER, "item_ids": _IDS, **_PAYMENT},
            "irreversible",
            return_delivered_order_items,
        ),
        declare(
            "modify_pending_order_address",
            "Change the shipping address of a pending order.",
            {**_ORDER, **_ADDR},
            "reversible-write",
            modify_pending_order_address,
        ),
        declare(
            "modify_pending_order_items",
            "Change items of a pending order to other variants of the same products, paying or refunding the "
            "difference through the payment method.",
            {**_ORDER, "item_ids": _IDS, "new_item_ids": _IDS, **_PAYMENT},
            "compensable",
            modify_pending_order_items,
        ),
        declare(
            "modify_pending_order_payment",
            "Pay a pending order with another of the user's payment methods (the first is refunded).",
            {**_ORDER, **_PAYMENT},
            "compensable",
            modify_pending_order_payment,
        ),
        declare(
            "modify_user_address",
            "Change a user's default address.",
            {"user_id": _S, **_ADDR},
            "reversible-write",
            modify_user_address,
        ),
    )
}
