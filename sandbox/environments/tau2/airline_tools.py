"""τ²-airline's agent tools on the relational port: the same names, arguments, error messages and JSON
values as τ²'s airline toolkit, acting on the run database (tables of airline_tables.py).

Behaviour is τ²'s, including what its policy leaves to the agent (no tool enforces a rule) and its
quirks: a cancellation refunds every payment as a negative payment line and releases no seat; a flight
change takes no seat either; certificates are deleted when used for a booking; a one-stop search reaches
the next day's date as `2024-05-<day+1>` unpadded. New ids are τ²'s fixed ones (HATHAT, HATHAU, HATHAV;
certificate_3221322 and the next two) and the clock is τ²'s fixed instant, so runs are deterministic.
tests/tau2/test_airline_differential.py runs τ²'s own toolkit beside these on the same calls.

Deliberate difference: `calculate` (generic_tools.py, shared with retail) evaluates + - * / and ** with
an exponent of at most 64 by walking the expression's syntax tree, where τ² calls eval (a `9**9**9` would
hold the call's process for ever).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from agentrel.sandbox.environments.tau2.airline_reads import (
    FLIGHT_INFO,
    NEW_CERTIFICATE_IDS,
    NEW_RESERVATION_IDS,
    NOW,
    PASSENGER,
    PAYMENT,
    Args,
    _flight,
    _instance,
    _legs,
    _methods,
    _passengers,
    _payments,
    _prices,
    _records,
    _reservation_row,
    _seats,
    _user_row,
    get_flight_status,
    get_reservation_details,
    get_user_details,
    list_all_airports,
    reservation_json,
    search_direct_flight,
    search_onestop_flight,
)
from agentrel.sandbox.environments.tau2.airline_tables import CABINS
from agentrel.sandbox.environments.tau2.generic_tools import (
    calculate,
    declare,
    one,
    q,
    transfer_to_human_agents,
)
from agentrel.sandbox.tools.base import Tool, ToolContext, ToolError


def send_certificate(ctx: ToolContext, args: Args) -> Any:
    user_id, amount = args["user_id"], args["amount"]
    _user_row(ctx, user_id)
    methods = _methods(ctx, user_id)
    for payment_id in NEW_CERTIFICATE_IDS:
        if payment_id not in methods:
            ctx.conn.execute(
                "INSERT INTO payment_methods (user_id, payment_id, ordinal, source, amount) "
                "VALUES (%s, %s, %s, 'certificate', %s)",
                (user_id, payment_id, len(methods), Decimal(str(amount))),
            )
            return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
    raise ToolError("Too many certificates")


def _add_payment(ctx: ToolContext, rid: str, payment_id: str, amount: int | float) -> None:
    ctx.conn.execute(
        "INSERT INTO reservation_payments (reservation_id, ordinal, payment_id, amount) "
        "SELECT %s, count(*), %s, %s FROM reservation_payments WHERE reservation_id = %s",
        (rid, payment_id, Decimal(str(amount)), rid),
    )


def _pay_for_update(ctx: ToolContext, user_id: str, payment_id: Any, total: int | float) -> bool:
    """τ²'s payment for a change: a gift card is charged (even 0); a certificate is refused. True when a
    payment line is due (a non-zero total)."""
    method = _methods(ctx, user_id).get(payment_id)
    if method is None:
        raise ToolError("Payment method not found")
    if method["source"] == "certificate":
        raise ToolError("Certificate cannot be used to update reservation")
    if method["source"] == "gift_card":
        if Decimal(method["amount"]) < Decimal(str(total)):
            raise ToolError("Gift card balance is not enough")
        ctx.conn.execute(
            "UPDATE payment_methods SET amount = amount - %s WHERE user_id = %s AND payment_id = %s",
            (Decimal(str(total)), user_id, payment_id),
        )
    return total != 0


def book_reservation(ctx: ToolContext, args: Args) -> Any:
    flights = _records(args["flights"], FLIGHT_INFO, "flights")
    passengers = _records(args["passengers"], PASSENGER, "passengers")
    payments = _records(args["payment_methods"], PAYMENT, "payment_methods")
    user_id, cabin = args["user_id"], args["cabin"]
    _user_row(ctx, user_id)
    taken = {
        r["reservation_id"]
        for r in q(
            ctx,
            "SELECT reservation_id FROM reservations WHERE reservation_id = ANY(%s)",
            (list(NEW_RESERVATION_IDS),),
        )
    }
    rid = next((r for r in NEW_RESERVATION_IDS if r not in taken), None)
    if rid is None:
        raise ToolError("Too many reservations")
    legs: list[dict[str, Any]] = []
    total: int | float = 0
    for info in flights:
        number, date = info["flight_number"], info["date"]
        flight = _flight(ctx, number)
        instance = _instance(ctx, number, date)
        if instance["status"] != "available":
            raise ToolError(f"Flight {number} not available on date {date}")
        if cabin not in CABINS:
            raise ToolError(repr(cabin))  # τ²: a KeyError on the seat map, shown as its key
        if _seats(instance)[cabin] < len(passengers):
            raise ToolError(f"Not enough seats on flight {number}")
        price = _prices(instance)[cabin]
        legs.append(
            {**info, "origin": flight["origin"], "destination": flight["destination"], "price": price}
        )
        total += price * len(passengers)
    if args["insurance"] == "yes":
        total += 30 * len(passengers)
    total += 50 * args["nonfree_baggages"]
    methods = _methods(ctx, user_id)
    for p in payments:
        method = methods.get(p["payment_id"])
        if method is None:
            raise ToolError(f"Payment method {p['payment_id']} not found")
        if method["source"] in ("gift_card", "certificate") and Decimal(method["amount"]) < p["amount"]:
            raise ToolError(f"Not enough balance in payment method {p['payment_id']}")
    paid = sum(p["amount"] for p in payments)
    if paid != total:
        raise ToolError(f"Payment amount does not add up, total price is {total}, but paid {paid}")
    for p in payments:
        method = methods[p["payment_id"]]
        if method["source"] == "gift_card":
            ctx.conn.execute(
                "UPDATE payment_methods SET amount = amount - %s WHERE user_id = %s AND payment_id = %s",
                (p["amount"], user_id, p["payment_id"]),
            )
        elif method["source"] == "certificate":
            _drop_method(ctx, user_id, p["payment_id"])
    for info in flights:
        ctx.conn.execute(
            f"UPDATE flight_dates SET available_{cabin} = available_{cabin} - %s "  # cabin is one of CABINS
            "WHERE flight_number = %s AND date = %s",
            (len(passengers), info["flight_number"], info["date"]),
        )
    ctx.conn.execute(
        "INSERT INTO reservations (reservation_id, ordinal, user_id, origin, destination, flight_type, "
        "cabin, created_at, total_baggages, nonfree_baggages, insurance, status) "
        "SELECT %s, count(*), %s, %s, %s, %s, %s, %s, %s, %s, %s, NULL FROM reservations",
        (
            rid,
            user_id,
            args["origin"],
            args["destination"],
            args["flight_type"],
            cabin,
            NOW,
            args["total_baggages"],
            args["nonfree_baggages"],
            args["insurance"],
        ),
    )
    _replace_legs(ctx, rid, legs)
    _replace_passengers(ctx, rid, passengers)
    for p in payments:
        _add_payment(ctx, rid, p["payment_id"], p["amount"])
    ctx.conn.execute(
        "INSERT INTO user_reservations (user_id, ordinal, reservation_id) "
        "SELECT %s, count(*), %s FROM user_reservations WHERE user_id = %s",
        (user_id, rid, user_id),
    )
    return reservation_json(ctx, rid)


def _drop_method(ctx: ToolContext, user_id: str, payment_id: str) -> None:
    """Remove a payment method and close its gap in the order (as deleting from τ²'s dictionary does)."""
    gone = one(
        ctx,
        "DELETE FROM payment_methods WHERE user_id = %s AND payment_id = %s RETURNING ordinal",
        (user_id, payment_id),
    )
    assert gone is not None
    ctx.conn.execute(
        "UPDATE payment_methods SET ordinal = ordinal - 1 WHERE user_id = %s AND ordinal > %s",
        (user_id, gone["ordinal"]),
    )


def _replace_legs(ctx: ToolContext, rid: str, legs: list[dict[str, Any]]) -> None:
    ctx.conn.execute("DELETE FROM reservation_flights WHERE reservation_id = %s", (rid,))
    for i, leg in enumerate(legs):
        ctx.conn.execute(
            "INSERT INTO reservation_flights (reservation_id, ordinal, origin, destination, flight_number, "
            "date, price) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (
                rid,
                i,
                leg["origin"],
                leg["destination"],
                leg["flight_number"],
                leg["date"],
                Decimal(str(leg["price"])),
            ),
        )


def _replace_passengers(ctx: ToolContext, rid: str, passengers: list[dict[str, Any]]) -> None:
    ctx.conn.execute("DELETE FROM reservation_passengers WHERE reservation_id = %s", (rid,))
    for i, p in enumerate(passengers):
        ctx.conn.execute(
            "INSERT INTO reservation_passengers (reservation_id, ordinal, first_name, last_name, dob) "
            "VALUES (%s, %s, %s, %s, %s)",
            (rid, i, p["first_name"], p["last_name"], p["dob"]),
        )


def cancel_reservation(ctx: ToolContext, args: Args) -> Any:
    r = _reservation_row(ctx, args["reservation_id"])
    rid = r["reservation_id"]
    for p in _payments(ctx, rid):
        _add_payment(ctx, rid, p["payment_id"], -p["amount"])
    ctx.conn.execute("UPDATE reservations SET status = 'cancelled' WHERE reservation_id = %s", (rid,))
    return reservation_json(ctx, rid)


def update_reservation_baggages(ctx: ToolContext, args: Args) -> Any:
    r = _reservation_row(ctx, args["reservation_id"])
    rid = r["reservation_id"]
    _user_row(ctx, r["user_id"])
    total = 50 * max(0, args["nonfree_baggages"] - r["nonfree_baggages"])
    if _pay_for_update(ctx, r["user_id"], args["payment_id"], total):
        _add_payment(ctx, rid, args["payment_id"], total)
    ctx.conn.execute(
        "UPDATE reservations SET total_baggages = %s, nonfree_baggages = %s WHERE reservation_id = %s",
        (args["total_baggages"], args["nonfree_baggages"], rid),
    )
    return reservation_json(ctx, rid)


def update_reservation_flights(ctx: ToolContext, args: Args) -> Any:
    flights = _records(args["flights"], FLIGHT_INFO, "flights")
    r = _reservation_row(ctx, args["reservation_id"])
    rid, cabin = r["reservation_id"], args["cabin"]
    _user_row(ctx, r["user_id"])
    old, people = _legs(ctx, rid), len(_passengers(ctx, rid))
    legs: list[dict[str, Any]] = []
    total: int | float = 0
    for info in flights:
        same = next(
            (
                f
                for f in old
                if f["flight_number"] == info["flight_number"]
                and f["date"] == info["date"]
                and cabin == r["cabin"]
            ),
            None,
        )
        if same is not None:
            total += same["price"] * people
            legs.append(same)
            continue
        flight = _flight(ctx, info["flight_number"])
        instance = _instance(ctx, info["flight_number"], info["date"])
        if instance["status"] != "available":
            raise ToolError(f"Flight {info['flight_number']} not available on date {info['date']}")
        if cabin not in CABINS:
            raise ToolError(repr(cabin))
        if _seats(instance)[cabin] < people:
            raise ToolError(f"Not enough seats on flight {info['flight_number']}")
        price = _prices(instance)[cabin]
        legs.append(
            {**info, "origin": flight["origin"], "destination": flight["destination"], "price": price}
        )
        total += price * people
    total -= sum(f["price"] for f in old) * people
    if _pay_for_update(ctx, r["user_id"], args["payment_id"], total):
        _add_payment(ctx, rid, args["payment_id"], total)
    _replace_legs(ctx, rid, legs)
    ctx.conn.execute("UPDATE reservations SET cabin = %s WHERE reservation_id = %s", (cabin, rid))
    return reservation_json(ctx, rid)


def update_reservation_passengers(ctx: ToolContext, args: Args) -> Any:
    passengers = _records(args["passengers"], PASSENGER, "passengers")
    r = _reservation_row(ctx, args["reservation_id"])
    if len(passengers) != len(_passengers(ctx, r["reservation_id"])):
        raise ToolError("Number of passengers does not match")
    _replace_passengers(ctx, r["reservation_id"], passengers)
    return reservation_json(ctx, r["reservation_id"])


# -- declarations ------------------------------------------------------------------------------------------

_S = {"type": "string", "maxLength": 200}
_I = {"type": "integer"}
_CABIN = {"type": "string", "enum": list(CABINS)}
_FLIGHTS = {"type": "array", "items": {"type": "object"}}


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        declare(
            "get_user_details",
            "The details of a user, with their payment methods and reservations.",
            {"user_id": _S},
            "read",
            get_user_details,
        ),
        declare(
            "get_reservation_details",
            "The details of a reservation.",
            {"reservation_id": _S},
            "read",
            get_reservation_details,
        ),
        declare(
            "get_flight_status",
            "The status of a flight on a date.",
            {"flight_number": _S, "date": _S},
            "read",
            get_flight_status,
        ),
        declare(
            "search_direct_flight",
            "Direct flights between two airports on a date (YYYY-MM-DD).",
            {"origin": _S, "destination": _S, "date": _S},
            "read",
            search_direct_flight,
        ),
        declare(
            "search_onestop_flight",
            "One-stop flight pairs between two airports on a date (YYYY-MM-DD).",
            {"origin": _S, "destination": _S, "date": _S},
            "read",
            search_onestop_flight,
        ),
        declare("list_all_airports", "Every airport served, with its city.", {}, "read", list_all_airports),
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
            "send_certificate",
            "Send a travel certificate of an amount (whole dollars) to a user.",
            {"user_id": _S, "amount": _I},
            "irreversible",
            send_certificate,
        ),
        declare(
            "book_reservation",
            "Book a reservation: flights, passengers and the payments that cover its price.",
            {
                "user_id": _S,
                "origin": _S,
                "destination": _S,
                "flight_type": {"type": "string", "enum": ["one_way", "round_trip"]},
                "cabin": _CABIN,
                "flights": _FLIGHTS,
                "passengers": _FLIGHTS,
                "payment_methods": _FLIGHTS,
                "total_baggages": _I,
                "nonfree_baggages": _I,
                "insurance": {"type": "string", "enum": ["yes", "no"]},
            },
            "irreversible",
            book_reservation,
        ),
        declare(
            "cancel_reservation",
            "Cancel a whole reservation, refunding its payments.",
            {"reservation_id": _S},
            "irreversible",
            cancel_reservation,
        ),
        declare(
            "update_reservation_baggages",
            "Change a reservation's bag counts, paying for added non-free bags.",
            {"reservation_id": _S, "total_baggages": _I, "nonfree_baggages": _I, "payment_id": _S},
            "compensable",
            update_reservation_baggages,
        ),
        declare(
            "update_reservation_flights",
            "Replace a reservation's flights (all of them) and cabin, paying the difference.",
            {"reservation_id": _S, "cabin": _CABIN, "flights": _FLIGHTS, "payment_id": _S},
            "compensable",
            update_reservation_flights,
        ),
        declare(
            "update_reservation_passengers",
            "Replace a reservation's passengers (the same number of them).",
            {"reservation_id": _S, "passengers": _FLIGHTS},
            "reversible-write",
            update_reservation_passengers,
        ),
    )
}
