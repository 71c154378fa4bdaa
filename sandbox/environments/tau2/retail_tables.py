"""τ²-retail as relational tables: the domain's one JSON document (products, users, orders) as fourteen
tables the diff can read row by row, and back.

Every list becomes rows keyed by (parent, ordinal); every dictionary keyed by id or by name (variants,
payment methods, an item's options) becomes rows keyed by (parent, id) with an `ordinal` column keeping its
order. An address is columns of its user or order. Money (prices, payments, gift-card balances, an
exchange's price difference) is numeric(12,2), rounded to cents: τ²'s amounts are floats of at most two
decimals, which its tools round to cents (or leave a float's last-digit noise on, which the cents drop).
An order's optional lists (the items of an exchange or return request) are rows of `order_request_items`
by kind; whether the list exists at all is whether its payment method is set, which `to_state` checks.
`to_state` and `from_state` are exact inverses on τ²'s data, which tests/tau2 checks byte for byte on the
wheel's own db.json.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from agentrel.dsl.state import State, TableInfo
from agentrel.sandbox.environments.tau2 import relational
from agentrel.sandbox.environments.tau2.relational import by_parent, dicts, money

ADDRESS = ("address1", "address2", "city", "country", "state", "zip")  # τ²'s order of an address's fields
REQUEST_LISTS = {  # an order's optional item lists, and the field whose presence says the list exists
    "exchange_items": "exchange_payment_method_id",
    "exchange_new_items": "exchange_payment_method_id",
    "return_items": "return_payment_method_id",
}
_ADDRESS_COLUMNS = dict.fromkeys(ADDRESS, "text")

_SHAPES: tuple[relational.Shape, ...] = (
    ("products", {"product_id": "text", "ordinal": "int", "name": "text"}, ("product_id",)),
    (
        "variants",
        {"product_id": "text", "item_id": "text", "ordinal": "int", "available": "bool", "price": "numeric"},
        ("product_id", "item_id"),
    ),
    (
        "variant_options",
        {"product_id": "text", "item_id": "text", "name": "text", "ordinal": "int", "value": "text"},
        ("product_id", "item_id", "name"),
    ),
    (
        "users",
        {
            "user_id": "text",
            "ordinal": "int",
            "first_name": "text",
            "last_name": "text",
            **_ADDRESS_COLUMNS,
            "email": "text",
        },
        ("user_id",),
    ),
    (
        "payment_methods",
        {
            "user_id": "text",
            "payment_id": "text",
            "ordinal": "int",
            "source": "text",
            "brand": "text",
            "last_four": "text",
            "balance": "numeric",
        },
        ("user_id", "payment_id"),
    ),
    (
        "orders",
        {
            "order_id": "text",
            "ordinal": "int",
            "user_id": "text",
            **_ADDRESS_COLUMNS,
            "status": "text",
            "cancel_reason": "text",
            "exchange_payment_method_id": "text",
            "exchange_price_difference": "numeric",
            "return_payment_method_id": "text",
        },
        ("order_id",),
    ),
    ("user_orders", {"user_id": "text", "ordinal": "int", "order_id": "text"}, ("user_id", "ordinal")),
    (
        "order_items",
        {
            "order_id": "text",
            "ordinal": "int",
            "name": "text",
            "product_id": "text",
            "item_id": "text",
            "price": "numeric",
        },
        ("order_id", "ordinal"),
    ),
    (
        "order_item_options",
        {"order_id": "text", "item_ordinal": "int", "name": "text", "ordinal": "int", "value": "text"},
        ("order_id", "item_ordinal", "name"),
    ),
    (
        "order_payments",
        {
            "order_id": "text",
            "ordinal": "int",
            "transaction_type": "text",
            "amount": "numeric",
            "payment_method_id": "text",
        },
        ("order_id", "ordinal"),
    ),
    ("order_fulfillments", {"order_id": "text", "ordinal": "int"}, ("order_id", "ordinal")),
    (
        "fulfillment_tracking_ids",
        {"order_id": "text", "fulfillment": "int", "ordinal": "int", "tracking_id": "text"},
        ("order_id", "fulfillment", "ordinal"),
    ),
    (
        "fulfillment_item_ids",
        {"order_id": "text", "fulfillment": "int", "ordinal": "int", "item_id": "text"},
        ("order_id", "fulfillment", "ordinal"),
    ),
    (
        "order_request_items",
        {"order_id": "text", "kind": "text", "ordinal": "int", "item_id": "text"},
        ("order_id", "kind", "ordinal"),
    ),
)

TABLES: dict[str, TableInfo] = relational.tables(_SHAPES)

_REFERENCES = {
    "variants": (("product_id",), "products"),
    "variant_options": (("product_id", "item_id"), "variants"),
    "payment_methods": (("user_id",), "users"),
    "orders": (("user_id",), "users"),
    "user_orders": (("user_id",), "users"),
    "order_items": (("order_id",), "orders"),
    "order_item_options": (("order_id", "item_ordinal"), "order_items"),
    "order_payments": (("order_id",), "orders"),
    "order_fulfillments": (("order_id",), "orders"),
    "fulfillment_tracking_ids": (("order_id", "fulfillment"), "order_fulfillments"),
    "fulfillment_item_ids": (("order_id", "fulfillment"), "order_fulfillments"),
    "order_request_items": (("order_id",), "orders"),
}
# Columns only some rows have: a card's brand and digits, a gift card's balance, an order's request fields.
_NULLABLE = {
    "payment_methods": ("brand", "last_four", "balance"),
    "orders": (
        "cancel_reason",
        "exchange_payment_method_id",
        "exchange_price_difference",
        "return_payment_method_id",
    ),
}


def ddl() -> str:
    """CREATE TABLE statements, parents first, with primary and foreign keys."""
    return relational.ddl(TABLES, _REFERENCES, _NULLABLE)


def cents_float(text: Any) -> float | None:
    """A numeric column's text as the float τ² keeps (its model types every amount as float)."""
    return None if text is None else float(Decimal(str(text)))


# -- JSON -> rows ------------------------------------------------------------------------------------------


def to_rows(db: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """τ²-retail's database document as rows per table (canonical dump values)."""
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
    for i, (pid, product) in enumerate(db["products"].items()):
        out["products"].append({"product_id": pid, "ordinal": i, "name": product["name"]})
        for j, (iid, variant) in enumerate(product["variants"].items()):
            out["variants"].append(
                {
                    "product_id": pid,
                    "item_id": iid,
                    "ordinal": j,
                    "available": variant["available"],
                    "price": money(variant["price"]),
                }
            )
            out["variant_options"] += [
                {"product_id": pid, "item_id": iid, "name": k, "ordinal": n, "value": v}
                for n, (k, v) in enumerate(variant["options"].items())
            ]
    for i, (uid, user) in enumerate(db["users"].items()):
        out["users"].append(
            {
                "user_id": uid,
                "ordinal": i,
                **user["name"],
                **{k: user["address"][k] for k in ADDRESS},
                "email": user["email"],
            }
        )
        for j, (payment_id, method) in enumerate(user["payment_methods"].items()):
            out["payment_methods"].append(
                {
                    "user_id": uid,
                    "payment_id": payment_id,
                    "ordinal": j,
                    "source": method["source"],
                    "brand": method.get("brand"),
                    "last_four": method.get("last_four"),
                    "balance": money(method.get("balance")),
                }
            )
        out["user_orders"] += [
            {"user_id": uid, "ordinal": j, "order_id": o} for j, o in enumerate(user["orders"])
        ]
    for i, (oid, order) in enumerate(db["orders"].items()):
        out["orders"].append(_order_row(oid, i, order))
        for j, item in enumerate(order["items"]):
            out["order_items"].append(
                {"order_id": oid, "ordinal": j, **{k: item[k] for k in ("name", "product_id", "item_id")}}
                | {"price": money(item["price"])}
            )
            out["order_item_options"] += [
                {"order_id": oid, "item_ordinal": j, "name": k, "ordinal": n, "value": v}
                for n, (k, v) in enumerate(item["options"].items())
            ]
        out["order_payments"] += [
            {
                "order_id": oid,
                "ordinal": j,
                "transaction_type": p["transaction_type"],
                "amount": money(p["amount"]),
                "payment_method_id": p["payment_method_id"],
            }
            for j, p in enumerate(order["payment_history"])
        ]
        for j, f in enumerate(order["fulfillments"]):
            out["order_fulfillments"].append({"order_id": oid, "ordinal": j})
            out["fulfillment_tracking_ids"] += [
                {"order_id": oid, "fulfillment": j, "ordinal": n, "tracking_id": t}
                for n, t in enumerate(f["tracking_id"])
            ]
            out["fulfillment_item_ids"] += [
                {"order_id": oid, "fulfillment": j, "ordinal": n, "item_id": t}
                for n, t in enumerate(f["item_ids"])
            ]
        for kind in REQUEST_LISTS:
            out["order_request_items"] += [
                {"order_id": oid, "kind": kind, "ordinal": n, "item_id": t}
                for n, t in enumerate(order.get(kind) or [])
            ]
    return out


def _order_row(oid: str, ordinal: int, order: Mapping[str, Any]) -> dict[str, Any]:
    for kind, marker in REQUEST_LISTS.items():
        if (order.get(kind) is None) != (order.get(marker) is None):
            raise ValueError(f"order {oid}: {kind} and {marker} must be set together")
    lists = ("items", "fulfillments", "payment_history", "address", *REQUEST_LISTS)
    return {
        "order_id": oid,
        "ordinal": ordinal,
        **{k: v for k, v in order.items() if k not in lists},
        **{k: order["address"][k] for k in ADDRESS},
        "exchange_price_difference": money(order.get("exchange_price_difference")),
    }


def to_state(db: Mapping[str, Any]) -> State:
    """The document as a dump-shaped State; a field the tables have no column for is an error, never lost."""
    return relational.to_state(TABLES, to_rows(db))


# -- rows -> JSON --------------------------------------------------------------------------------------------


def _options(rows: list[dict[str, Any]]) -> dict[str, str]:
    return {o["name"]: o["value"] for o in rows}


def from_state(state: State) -> dict[str, Any]:
    """The τ²-retail document of a state: the inverse of `to_state`, keys in τ²'s order (an order's
    optional fields only when set, as in τ²'s file)."""
    variants = by_parent(dicts(state, "variants"), "product_id")
    variant_options = by_parent(dicts(state, "variant_options"), "product_id", "item_id")
    products = {}
    for p in sorted(dicts(state, "products"), key=lambda r: r["ordinal"]):
        pid = p["product_id"]
        products[pid] = {
            "name": p["name"],
            "product_id": pid,
            "variants": {
                v["item_id"]: {
                    "item_id": v["item_id"],
                    "options": _options(variant_options.get((pid, v["item_id"]), [])),
                    "available": v["available"],
                    "price": cents_float(v["price"]),
                }
                for v in variants.get(pid, [])
            },
        }
    methods = by_parent(dicts(state, "payment_methods"), "user_id")
    placed = by_parent(dicts(state, "user_orders"), "user_id")
    users = {}
    for u in sorted(dicts(state, "users"), key=lambda r: r["ordinal"]):
        uid = u["user_id"]
        users[uid] = {
            "user_id": uid,
            "name": {"first_name": u["first_name"], "last_name": u["last_name"]},
            "address": {k: u[k] for k in ADDRESS},
            "email": u["email"],
            "payment_methods": {m["payment_id"]: method_json(m) for m in methods.get(uid, [])},
            "orders": [o["order_id"] for o in placed.get(uid, [])],
        }
    children = {
        name: by_parent(dicts(state, name), "order_id")
        for name in ("order_items", "order_payments", "order_fulfillments")
    }
    options = by_parent(dicts(state, "order_item_options"), "order_id", "item_ordinal")
    tracking = by_parent(dicts(state, "fulfillment_tracking_ids"), "order_id", "fulfillment")
    shipped = by_parent(dicts(state, "fulfillment_item_ids"), "order_id", "fulfillment")
    requested = by_parent(dicts(state, "order_request_items"), "order_id", "kind")
    orders = {}
    for o in sorted(dicts(state, "orders"), key=lambda r: r["ordinal"]):
        oid = o["order_id"]
        full = order_document(
            o,
            items=[
                item_json(i, options.get((oid, i["ordinal"]), []))
                for i in children["order_items"].get(oid, [])
            ],
            fulfillments=[
                {
                    "tracking_id": [t["tracking_id"] for t in tracking.get((oid, f["ordinal"]), [])],
                    "item_ids": [t["item_id"] for t in shipped.get((oid, f["ordinal"]), [])],
                }
                for f in children["order_fulfillments"].get(oid, [])
            ],
            payments=[payment_json(p) for p in children["order_payments"].get(oid, [])],
            requested={k: [r["item_id"] for r in requested.get((oid, k), [])] for k in REQUEST_LISTS},
        )
        orders[oid] = {k: v for k, v in full.items() if v is not None}
    return {"products": products, "users": users, "orders": orders}


# -- one object in τ²'s model shape (shared with the tools' reads) ------------------------------------------


def method_json(m: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"source": m["source"], "id": m["payment_id"]}
    if m["source"] == "credit_card":
        out |= {"brand": m["brand"], "last_four": m["last_four"]}
    elif m["source"] == "gift_card":
        out["balance"] = cents_float(m["balance"])
    return out


def item_json(item: Mapping[str, Any], options: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        **{k: item[k] for k in ("name", "product_id", "item_id")},
        "price": cents_float(item["price"]),
        "options": _options(options),
    }


def payment_json(p: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "transaction_type": p["transaction_type"],
        "amount": cents_float(p["amount"]),
        "payment_method_id": p["payment_method_id"],
    }


def order_document(
    o: Mapping[str, Any],
    items: list[dict[str, Any]],
    fulfillments: list[dict[str, Any]],
    payments: list[dict[str, Any]],
    requested: Mapping[str, list[str]],
) -> dict[str, Any]:
    """An order in τ²'s model shape, every optional field present (None when unset), in its order."""
    return {
        "order_id": o["order_id"],
        "user_id": o["user_id"],
        "address": {k: o[k] for k in ADDRESS},
        "items": items,
        "status": o["status"],
        "fulfillments": fulfillments,
        "payment_history": payments,
        "cancel_reason": o["cancel_reason"],
        "exchange_items": requested["exchange_items"]
        if o["exchange_payment_method_id"] is not None
        else None,
        "exchange_new_items": (
            requested["exchange_new_items"] if o["exchange_payment_method_id"] is not None else None
        ),
        "exchange_payment_method_id": o["exchange_payment_method_id"],
        "exchange_price_difference": cents_float(o["exchange_price_difference"]),
        "return_items": requested["return_items"] if o["return_payment_method_id"] is not None else None,
        "return_payment_method_id": o["return_payment_method_id"],
    }
