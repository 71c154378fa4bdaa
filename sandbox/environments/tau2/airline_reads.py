"""τ²-airline on the relational port, the read side: the run database's rows in τ²'s model shapes (a user,
a reservation, a direct flight), the argument shapes τ²'s models accept, and the tools that change
nothing (lookups, searches; `calculate` and the hand-off are generic_tools.py's, shared with retail). The
writing tools are airline_tools.py's."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from agentrel.sandbox.environments.tau2.airline_tables import CABINS
from agentrel.sandbox.environments.tau2.generic_tools import one, q
from agentrel.sandbox.tools.base import ToolContext, ToolError

NOW = "2024-05-15T15:00:00"  # τ²-airline's fixed clock
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_IDS = tuple(f"certificate_{n}" for n in (3221322, 3221323, 3221324))
Args = dict[str, Any]


def _dollars(text: Any) -> int | float:
    amount = Decimal(str(text))
    return int(amount) if amount == amount.to_integral_value() else float(amount)


# -- reads in τ²'s model shapes ---------------------------------------------------------------------------


def _user_row(ctx: ToolContext, user_id: Any) -> dict[str, Any]:
    user = one(ctx, "SELECT * FROM users WHERE user_id = %s", (user_id,))
    if user is None:
        raise ToolError(f"User {user_id} not found")
    return user


def _methods(ctx: ToolContext, user_id: str) -> dict[str, dict[str, Any]]:
    found = q(ctx, "SELECT * FROM payment_methods WHERE user_id = %s ORDER BY ordinal", (user_id,))
    return {m["payment_id"]: m for m in found}


def _method_json(m: dict[str, Any]) -> dict[str, Any]:
    if m["source"] == "credit_card":
        return {
            "source": "credit_card",
            "id": m["payment_id"],
            "brand": m["brand"],
            "last_four": m["last_four"],
        }
    return {"source": m["source"], "id": m["payment_id"], "amount": float(Decimal(m["amount"]))}


def user_json(ctx: ToolContext, user_id: Any) -> dict[str, Any]:
    u = _user_row(ctx, user_id)
    uid = u["user_id"]
    saved = q(ctx, "SELECT * FROM saved_passengers WHERE user_id = %s ORDER BY ordinal", (uid,))
    booked = q(
        ctx, "SELECT reservation_id FROM user_reservations WHERE user_id = %s ORDER BY ordinal", (uid,)
    )
    return {
        "user_id": uid,
        "name": {"first_name": u["first_name"], "last_name": u["last_name"]},
        "address": {k: u[k] for k in ("address1", "address2", "city", "country", "state", "zip")},
        "email": u["email"],
        "dob": u["dob"],
        "payment_methods": {pid: _method_json(m) for pid, m in _methods(ctx, uid).items()},
        "saved_passengers": [{k: p[k] for k in ("first_name", "last_name", "dob")} for p in saved],
        "membership": u["membership"],
        "reservations": [r["reservation_id"] for r in booked],
    }


def _reservation_row(ctx: ToolContext, reservation_id: Any) -> dict[str, Any]:
    found = one(ctx, "SELECT * FROM reservations WHERE reservation_id = %s", (reservation_id,))
    if found is None:
        raise ToolError(f"Reservation {reservation_id} not found")
    return found


def _legs(ctx: ToolContext, rid: str) -> list[dict[str, Any]]:
    found = q(ctx, "SELECT * FROM reservation_flights WHERE reservation_id = %s ORDER BY ordinal", (rid,))
    return [
        {
            "flight_number": f["flight_number"],
            "origin": f["origin"],
            "destination": f["destination"],
            "date": f["date"],
            "price": _dollars(f["price"]),
        }
        for f in found
    ]


def _passengers(ctx: ToolContext, rid: str) -> list[dict[str, Any]]:
    found = q(ctx, "SELECT * FROM reservation_passengers WHERE reservation_id = %s ORDER BY ordinal", (rid,))
    return [{k: p[k] for k in ("first_name", "last_name", "dob")} for p in found]


def _payments(ctx: ToolContext, rid: str) -> list[dict[str, Any]]:
    found = q(ctx, "SELECT * FROM reservation_payments WHERE reservation_id = %s ORDER BY ordinal", (rid,))
    return [{"payment_id": p["payment_id"], "amount": _dollars(p["amount"])} for p in found]


def reservation_json(ctx: ToolContext, reservation_id: Any) -> dict[str, Any]:
    r = _reservation_row(ctx, reservation_id)
    rid = r["reservation_id"]
    return {
        "reservation_id": rid,
        **{k: r[k] for k in ("user_id", "origin", "destination", "flight_type", "cabin")},
        "flights": _legs(ctx, rid),
        "passengers": _passengers(ctx, rid),
        "payment_history": _payments(ctx, rid),
        **{k: r[k] for k in ("created_at", "total_baggages", "nonfree_baggages", "insurance", "status")},
    }


def _flight(ctx: ToolContext, number: Any) -> dict[str, Any]:
    found = one(ctx, "SELECT * FROM flights WHERE flight_number = %s", (number,))
    if found is None:
        raise ToolError(f"Flight {number} not found")
    return found


def _instance(ctx: ToolContext, number: Any, date: Any) -> dict[str, Any]:
    _flight(ctx, number)
    found = one(ctx, "SELECT * FROM flight_dates WHERE flight_number = %s AND date = %s", (number, date))
    if found is None:
        raise ToolError(f"Flight {number} not found on date {date}")
    return found


def _seats(d: dict[str, Any]) -> dict[str, int]:
    return {c: d[f"available_{c}"] for c in CABINS}


def _prices(d: dict[str, Any]) -> dict[str, int | float]:
    return {c: _dollars(d[f"price_{c}"]) for c in CABINS}


def _direct(
    ctx: ToolContext, date: Any, origin: Any = None, destination: Any = None, leave_after: Any = None
) -> list[dict[str, Any]]:
    """Available direct flights on `date`, in τ²'s flight order (its document's)."""
    found = q(
        ctx,
        "SELECT f.*, d.status, d.available_basic_economy, d.available_economy, d.available_business, "
        "d.price_basic_economy, d.price_economy, d.price_business FROM flights f "
        "JOIN flight_dates d ON d.flight_number = f.flight_number AND d.date = %s "
        "WHERE d.status = 'available' ORDER BY f.ordinal",
        (date,),
    )
    out = []
    for f in found:
        if origin is not None and f["origin"] != origin:
            continue
        if destination is not None and f["destination"] != destination:
            continue
        if leave_after is not None and not f["scheduled_departure_time_est"] >= leave_after:
            continue
        out.append(
            {
                "flight_number": f["flight_number"],
                "origin": f["origin"],
                "destination": f["destination"],
                "status": "available",
                "scheduled_departure_time_est": f["scheduled_departure_time_est"],
                "scheduled_arrival_time_est": f["scheduled_arrival_time_est"],
                "date": None,
                "available_seats": _seats(f),
                "prices": _prices(f),
            }
        )
    return out


# -- argument shapes (τ²'s models; a malformed one is an error before anything is read) -------------------


def _records(value: Any, fields: Mapping[str, type], what: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise ToolError(f"{what} must be a list")
    out = []
    for item in value:
        if not isinstance(item, dict) or set(item) != set(fields):
            raise ToolError(f"each of {what} must have exactly the fields {', '.join(fields)}")
        for k, t in fields.items():
            if not isinstance(item[k], t) or isinstance(item[k], bool):
                raise ToolError(f"{what}.{k} must be a {t.__name__}")
        out.append({k: item[k] for k in fields})
    return out


FLIGHT_INFO: dict[str, type] = {"flight_number": str, "date": str}
PASSENGER: dict[str, type] = {"first_name": str, "last_name": str, "dob": str}
PAYMENT: dict[str, type] = {"payment_id": str, "amount": int}


# -- the tools ---------------------------------------------------------------------------------------------


def get_user_details(ctx: ToolContext, args: Args) -> Any:
    return user_json(ctx, args["user_id"])


def get_reservation_details(ctx: ToolContext, args: Args) -> Any:
    return reservation_json(ctx, args["reservation_id"])


def get_flight_status(ctx: ToolContext, args: Args) -> Any:
    return _instance(ctx, args["flight_number"], args["date"])["status"]


def search_direct_flight(ctx: ToolContext, args: Args) -> Any:
    return _direct(ctx, args["date"], args["origin"], args["destination"])


def search_onestop_flight(ctx: ToolContext, args: Args) -> Any:
    date = args["date"]
    out = []
    for first_leg in _direct(ctx, date, args["origin"], None):
        first_leg["date"] = date
        # τ²'s next day: the day of month plus one, unpadded, in May 2024.
        date2 = f"2024-05-{int(date[-2:]) + 1}" if "+1" in first_leg["scheduled_arrival_time_est"] else date
        for second in _direct(
            ctx, date2, first_leg["destination"], args["destination"], first_leg["scheduled_arrival_time_est"]
        ):
            second["date"] = date2
            out.append([first_leg, second])
    return out


def list_all_airports(ctx: ToolContext, args: Args) -> Any:
    from agentrel.sandbox.environments.tau2.airline_env import airports

    return [{"iata": iata, "city": city} for iata, city in airports()]
