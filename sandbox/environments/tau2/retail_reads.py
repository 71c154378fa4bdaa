"""τ²-retail on the relational port, the read side: the run database's rows in τ²'s model shapes (a user,
an order, a product, a variant, a payment method), with τ²'s error messages, and the tools that change
nothing (lookups; `calculate` and the hand-off are generic_tools.py's). The writing tools are
retail_tools.py's.

Amounts leave the database as the floats τ²'s models hold (numeric cents as float), so the writing tools
compute with the same floating-point operations τ²'s do and decide the same way at the edges (a gift card
whose balance equals a price difference, a difference of exactly zero).
"""

from __future__ import annotations

import json
from typing import Any

from agentrel.sandbox.environments.tau2.generic_tools import Args, one, q
from agentrel.sandbox.environments.tau2.retail_tables import (
    ADDRESS,
    REQUEST_LISTS,
    cents_float,
    item_json,
    method_json,
    order_document,
    payment_json,
)
from agentrel.sandbox.tools.base import ToolContext, ToolError


def user_row(ctx: ToolContext, user_id: Any) -> dict[str, Any]:
    user = one(ctx, "SELECT * FROM users WHERE user_id = %s", (user_id,))
    if user is None:
        raise ToolError("User not found")
    return user


def user_json(ctx: ToolContext, user_id: Any) -> dict[str, Any]:
    u = user_row(ctx, user_id)
    uid = u["user_id"]
    methods = q(ctx, "SELECT * FROM payment_methods WHERE user_id = %s ORDER BY ordinal", (uid,))
    placed = q(ctx, "SELECT order_id FROM user_orders WHERE user_id = %s ORDER BY ordinal", (uid,))
    return {
        "user_id": uid,
        "name": {"first_name": u["first_name"], "last_name": u["last_name"]},
        "address": {k: u[k] for k in ADDRESS},
        "email": u["email"],
        "payment_methods": {m["payment_id"]: method_json(m) for m in methods},
        "orders": [o["order_id"] for o in placed],
    }


def payment_method(ctx: ToolContext, user_id: Any, payment_id: Any) -> dict[str, Any]:
    """A user's payment method as τ² shows it (a gift card's balance a float)."""
    user_row(ctx, user_id)
    found = one(
        ctx, "SELECT * FROM payment_methods WHERE user_id = %s AND payment_id = %s", (user_id, payment_id)
    )
    if found is None:
        raise ToolError("Payment method not found")
    return method_json(found)


def order_json(ctx: ToolContext, order_id: Any) -> dict[str, Any]:
    o = one(ctx, "SELECT * FROM orders WHERE order_id = %s", (order_id,))
    if o is None:
        raise ToolError("Order not found")
    oid = o["order_id"]
    items = q(ctx, "SELECT * FROM order_items WHERE order_id = %s ORDER BY ordinal", (oid,))
    options = q(
        ctx, "SELECT * FROM order_item_options WHERE order_id = %s ORDER BY item_ordinal, ordinal", (oid,)
    )
    tracking = q(ctx, "SELECT * FROM fulfillment_tracking_ids WHERE order_id = %s ORDER BY ordinal", (oid,))
    shipped = q(ctx, "SELECT * FROM fulfillment_item_ids WHERE order_id = %s ORDER BY ordinal", (oid,))
    fulfillments = q(
        ctx, "SELECT ordinal FROM order_fulfillments WHERE order_id = %s ORDER BY ordinal", (oid,)
    )
    payments = q(ctx, "SELECT * FROM order_payments WHERE order_id = %s ORDER BY ordinal", (oid,))
    requested = q(ctx, "SELECT * FROM order_request_items WHERE order_id = %s ORDER BY ordinal", (oid,))
    return order_document(
        o,
        items=[item_json(i, [x for x in options if x["item_ordinal"] == i["ordinal"]]) for i in items],
        fulfillments=[
            {
                "tracking_id": [t["tracking_id"] for t in tracking if t["fulfillment"] == f["ordinal"]],
                "item_ids": [t["item_id"] for t in shipped if t["fulfillment"] == f["ordinal"]],
            }
            for f in fulfillments
        ],
        payments=[payment_json(p) for p in payments],
        requested={k: [r["item_id"] for r in requested if r["kind"] == k] for k in REQUEST_LISTS},
    )


def product_row(ctx: ToolContext, product_id: Any) -> dict[str, Any]:
    found = one(ctx, "SELECT * FROM products WHERE product_id = %s", (product_id,))
    if found is None:
        raise ToolError("Product not found")
    return found


def _variants(ctx: ToolContext, product_id: str, item_id: Any = None) -> dict[str, dict[str, Any]]:
    where, params = (
        ("AND item_id = %s", (product_id, item_id)) if item_id is not None else ("", (product_id,))
    )
    found = q(ctx, f"SELECT * FROM variants WHERE product_id = %s {where} ORDER BY ordinal", params)
    options = q(ctx, f"SELECT * FROM variant_options WHERE product_id = %s {where} ORDER BY ordinal", params)
    return {
        v["item_id"]: {
            "item_id": v["item_id"],
            "options": {o["name"]: o["value"] for o in options if o["item_id"] == v["item_id"]},
            "available": v["available"],
            "price": cents_float(v["price"]),
        }
        for v in found
    }


def variant(ctx: ToolContext, product_id: Any, item_id: Any) -> dict[str, Any]:
    """A variant of a product as τ² shows it; the product is checked first, as τ² does."""
    product_row(ctx, product_id)
    found = _variants(ctx, product_id, item_id)
    if item_id not in found:
        raise ToolError("Variant not found")
    return found[item_id]


def product_json(ctx: ToolContext, product_id: Any) -> dict[str, Any]:
    p = product_row(ctx, product_id)
    return {"name": p["name"], "product_id": p["product_id"], "variants": _variants(ctx, p["product_id"])}


# -- the tools ---------------------------------------------------------------------------------------------


def get_user_details(ctx: ToolContext, args: Args) -> Any:
    return user_json(ctx, args["user_id"])


def get_order_details(ctx: ToolContext, args: Args) -> Any:
    return order_json(ctx, args["order_id"])


def get_product_details(ctx: ToolContext, args: Args) -> Any:
    return product_json(ctx, args["product_id"])


def find_user_id_by_email(ctx: ToolContext, args: Args) -> Any:
    # Compared in Python, as τ² does (str.lower), not with SQL's lower(): they differ outside ASCII.
    wanted = args["email"].lower()
    for u in q(ctx, "SELECT user_id, email FROM users ORDER BY ordinal"):
        if u["email"].lower() == wanted:
            return u["user_id"]
    raise ToolError("User not found")


def find_user_id_by_name_zip(ctx: ToolContext, args: Args) -> Any:
    first, last, zip_code = args["first_name"].lower(), args["last_name"].lower(), args["zip"]
    for u in q(ctx, "SELECT user_id, first_name, last_name, zip FROM users ORDER BY ordinal"):
        if u["first_name"].lower() == first and u["last_name"].lower() == last and u["zip"] == zip_code:
            return u["user_id"]
    raise ToolError("User not found")


def list_all_product_types(ctx: ToolContext, args: Args) -> Any:
    """τ²'s answer is JSON text (names to ids, names sorted; a repeated name keeps the later product)."""
    names = {
        p["name"]: p["product_id"] for p in q(ctx, "SELECT name, product_id FROM products ORDER BY ordinal")
    }
    return json.dumps(names, sort_keys=True)
