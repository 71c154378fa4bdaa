"""τ²-airline as relational tables: the domain's one JSON document (flights, users, reservations) as
ten tables the diff can read row by row, and back.

Every list becomes rows keyed by (parent, ordinal); every dictionary keyed by id becomes rows keyed by
(parent, id) with an `ordinal` column keeping its order. Money is numeric(12,2), rounded to cents
(τ²'s prices and payments are whole dollars, gift-card and certificate balances dollars with cents).
Times τ² keeps as text without a zone (`2024-05-01T06:26:00`, `06:00:00`) stay text: converting them
would invent a zone τ² does not have. `to_state` and `from_state` are exact inverses on τ²'s data, which
tests/tau2 checks byte for byte on the wheel's own db.json.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from agentrel.dsl.state import State, TableInfo
from agentrel.sandbox.environments.tau2 import relational
from agentrel.sandbox.environments.tau2.relational import by_parent as _by_parent
from agentrel.sandbox.environments.tau2.relational import dicts as _dicts
from agentrel.sandbox.environments.tau2.relational import money

CABINS = ("basic_economy", "economy", "business")  # τ²'s order of a flight date's seats and prices

# name -> (columns with kinds, primary key); parents before children.
_SHAPES: tuple[tuple[str, dict[str, str], tuple[str, ...]], ...] = (
    (
        "users",
        {
            "user_id": "text",
            "ordinal": "int",
            "first_name": "text",
            "last_name": "text",
            "address1": "text",
            "address2": "text",
            "city": "text",
            "country": "text",
            "state": "text",
            "zip": "text",
            "email": "text",
            "dob": "text",
            "membership": "text",
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
            "amount": "numeric",
        },
        ("user_id", "payment_id"),
    ),
    (
        "saved_passengers",
        {"user_id": "text", "ordinal": "int", "first_name": "text", "last_name": "text", "dob": "text"},
        ("user_id", "ordinal"),
    ),
    (
        "flights",
        {
            "flight_number": "text",
            "ordinal": "int",
            "origin": "text",
            "destination": "text",
            "scheduled_departure_time_est": "text",
            "scheduled_arrival_time_est": "text",
        },
        ("flight_number",),
    ),
    (
        "flight_dates",
        {
            "flight_number": "text",
            "date": "text",
            "status": "text",
            "actual_departure_time_est": "text",
            "estimated_departure_time_est": "text",
            "actual_arrival_time_est": "text",
            "estimated_arrival_time_est": "text",
            **{f"available_{c}": "int" for c in CABINS},
            **{f"price_{c}": "numeric" for c in CABINS},
        },
        ("flight_number", "date"),
    ),
    (
        "reservations",
        {
            "reservation_id": "text",
            "ordinal": "int",
            "user_id": "text",
            "origin": "text",
            "destination": "text",
            "flight_type": "text",
            "cabin": "text",
            "created_at": "text",
            "total_baggages": "int",
            "nonfree_baggages": "int",
            "insurance": "text",
            "status": "text",
        },
        ("reservation_id",),
    ),
    (
        "reservation_flights",
        {
            "reservation_id": "text",
            "ordinal": "int",
            "origin": "text",
            "destination": "text",
            "flight_number": "text",
            "date": "text",
            "price": "numeric",
        },
        ("reservation_id", "ordinal"),
    ),
    (
        "reservation_passengers",
        {
            "reservation_id": "text",
            "ordinal": "int",
            "first_name": "text",
            "last_name": "text",
            "dob": "text",
        },
        ("reservation_id", "ordinal"),
    ),
    (
        "reservation_payments",
        {"reservation_id": "text", "ordinal": "int", "payment_id": "text", "amount": "numeric"},
        ("reservation_id", "ordinal"),
    ),
    (
        "user_reservations",
        {"user_id": "text", "ordinal": "int", "reservation_id": "text"},
        ("user_id", "ordinal"),
    ),
)

TABLES: dict[str, TableInfo] = relational.tables(_SHAPES)

_REFERENCES = {
    "payment_methods": (("user_id",), "users"),
    "saved_passengers": (("user_id",), "users"),
    "flight_dates": (("flight_number",), "flights"),
    "reservations": (("user_id",), "users"),
    "reservation_flights": (("reservation_id",), "reservations"),
    "reservation_passengers": (("reservation_id",), "reservations"),
    "reservation_payments": (("reservation_id",), "reservations"),
    "user_reservations": (("user_id",), "users"),
}
# Columns every row has (the rest are absent for some rows in τ²'s data, so nullable).
_NULLABLE = {
    "users": {"address2"},
    "payment_methods": {"brand", "last_four", "amount"},
    "flight_dates": {
        c for c in TABLES["flight_dates"].columns if c not in ("flight_number", "date", "status")
    },
    "reservations": {"status"},
}


def ddl() -> str:
    """CREATE TABLE statements, parents first, with primary and foreign keys."""
    return relational.ddl(TABLES, _REFERENCES, _NULLABLE)


def _dollars(text: Any) -> int:
    amount = Decimal(str(text))
    if amount != amount.to_integral_value():
        raise ValueError(f"{text} is not whole dollars")
    return int(amount)


# -- JSON -> rows ------------------------------------------------------------------------------------------


def to_rows(db: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """τ²-airline's database document as rows per table (canonical dump values)."""
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
    for i, (uid, user) in enumerate(db["users"].items()):
        address = user["address"]
        out["users"].append(
            {
                "user_id": uid,
                "ordinal": i,
                **user["name"],
                **{k: address.get(k) for k in ("address1", "address2", "city", "country", "state", "zip")},
                "email": user["email"],
                "dob": user["dob"],
                "membership": user["membership"],
            }
        )
        for j, (pid, method) in enumerate(user["payment_methods"].items()):
            out["payment_methods"].append(
                {
                    "user_id": uid,
                    "payment_id": pid,
                    "ordinal": j,
                    "source": method["source"],
                    "brand": method.get("brand"),
                    "last_four": method.get("last_four"),
                    "amount": money(method.get("amount")),
                }
            )
        out["saved_passengers"] += [
            {"user_id": uid, "ordinal": j, **p} for j, p in enumerate(user["saved_passengers"])
        ]
        out["user_reservations"] += [
            {"user_id": uid, "ordinal": j, "reservation_id": r} for j, r in enumerate(user["reservations"])
        ]
    for i, (number, flight) in enumerate(db["flights"].items()):
        out["flights"].append(
            {
                "flight_number": number,
                "ordinal": i,
                **{k: v for k, v in flight.items() if k not in ("flight_number", "dates")},
            }
        )
        for date, status in flight["dates"].items():
            seats, prices = status.get("available_seats") or {}, status.get("prices") or {}
            out["flight_dates"].append(
                {
                    "flight_number": number,
                    "date": date,
                    **{k: v for k, v in status.items() if k not in ("available_seats", "prices")},
                    **{f"available_{c}": seats.get(c) for c in CABINS},
                    **{f"price_{c}": money(prices.get(c)) for c in CABINS},
                }
            )
    for i, (rid, res) in enumerate(db["reservations"].items()):
        nested = ("reservation_id", "flights", "passengers", "payment_history")
        out["reservations"].append(
            {"reservation_id": rid, "ordinal": i, **{k: v for k, v in res.items() if k not in nested}}
        )
        for j, f in enumerate(res["flights"]):
            out["reservation_flights"].append(
                {"reservation_id": rid, "ordinal": j, **f, "price": money(f["price"])}
            )
        out["reservation_passengers"] += [
            {"reservation_id": rid, "ordinal": j, **p} for j, p in enumerate(res["passengers"])
        ]
        out["reservation_payments"] += [
            {"reservation_id": rid, "ordinal": j, "payment_id": p["payment_id"], "amount": money(p["amount"])}
            for j, p in enumerate(res["payment_history"])
        ]
    return out


def to_state(db: Mapping[str, Any]) -> State:
    """The document as a dump-shaped State; a field the tables have no column for is an error, never lost."""
    return relational.to_state(TABLES, to_rows(db))


# -- rows -> JSON --------------------------------------------------------------------------------------------


def _status(row: Mapping[str, Any]) -> dict[str, Any]:
    """A flight date's status object, its keys in τ²'s order (departure before arrival)."""
    out: dict[str, Any] = {"status": row["status"]}
    if row["available_economy"] is not None:
        out["available_seats"] = {c: row[f"available_{c}"] for c in CABINS}
        out["prices"] = {c: _dollars(row[f"price_{c}"]) for c in CABINS}
    for when in ("departure", "arrival"):
        for kind in ("actual", "estimated"):
            value = row[f"{kind}_{when}_time_est"]
            if value is not None:
                out[f"{kind}_{when}_time_est"] = value
    return out


def from_state(state: State) -> dict[str, Any]:
    """The τ²-airline document of a state: the inverse of `to_state`, keys in τ²'s order."""
    methods = _by_parent(_dicts(state, "payment_methods"), "user_id")
    saved = _by_parent(_dicts(state, "saved_passengers"), "user_id")
    booked = _by_parent(_dicts(state, "user_reservations"), "user_id")
    users = {}
    for u in sorted(_dicts(state, "users"), key=lambda r: r["ordinal"]):
        uid = u["user_id"]
        address_keys = ("address1", "address2", "city", "country", "state", "zip")
        users[uid] = {
            "user_id": uid,
            "name": {"first_name": u["first_name"], "last_name": u["last_name"]},
            "address": {k: u[k] for k in address_keys if u[k] is not None},
            "email": u["email"],
            "dob": u["dob"],
            "payment_methods": {
                m["payment_id"]: {"source": m["source"], "id": m["payment_id"]}
                | (
                    {"brand": m["brand"], "last_four": m["last_four"]}
                    if m["source"] == "credit_card"
                    else {"amount": float(Decimal(m["amount"]))}
                )
                for m in methods.get(uid, [])
            },
            "saved_passengers": [
                {k: p[k] for k in ("first_name", "last_name", "dob")} for p in saved.get(uid, [])
            ],
            "membership": u["membership"],
            "reservations": [r["reservation_id"] for r in booked.get(uid, [])],
        }
    dates: dict[str, dict[str, Any]] = {}
    for d in sorted(_dicts(state, "flight_dates"), key=lambda r: (r["flight_number"], r["date"])):
        dates.setdefault(d["flight_number"], {})[d["date"]] = _status(d)
    flights = {}
    for f in sorted(_dicts(state, "flights"), key=lambda r: r["ordinal"]):
        n = f["flight_number"]
        flights[n] = {
            "origin": f["origin"],
            "destination": f["destination"],
            "flight_number": n,
            "scheduled_departure_time_est": f["scheduled_departure_time_est"],
            "scheduled_arrival_time_est": f["scheduled_arrival_time_est"],
            "dates": dates.get(n, {}),
        }
    legs = _by_parent(_dicts(state, "reservation_flights"), "reservation_id")
    people = _by_parent(_dicts(state, "reservation_passengers"), "reservation_id")
    paid = _by_parent(_dicts(state, "reservation_payments"), "reservation_id")
    reservations = {}
    for r in sorted(_dicts(state, "reservations"), key=lambda r: r["ordinal"]):
        rid = r["reservation_id"]
        res = {
            "reservation_id": rid,
            **{k: r[k] for k in ("user_id", "origin", "destination", "flight_type", "cabin")},
            "flights": [
                {
                    **{k: f[k] for k in ("origin", "destination", "flight_number", "date")},
                    "price": _dollars(f["price"]),
                }
                for f in legs.get(rid, [])
            ],
            "passengers": [
                {k: p[k] for k in ("first_name", "last_name", "dob")} for p in people.get(rid, [])
            ],
            "payment_history": [
                {"payment_id": p["payment_id"], "amount": _dollars(p["amount"])} for p in paid.get(rid, [])
            ],
            **{k: r[k] for k in ("created_at", "total_baggages", "nonfree_baggages", "insurance")},
        }
        if r["status"] is not None:
            res["status"] = r["status"]
        reservations[rid] = res
    return {"flights": flights, "users": users, "reservations": reservations}
