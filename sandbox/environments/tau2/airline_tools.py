"""τ²-airline's agent tools on the relational port: the same names, arguments, error messages and JSON
values as τ²'s airline toolkit, acting on the run database (tables of airline_tables.py).

Behaviour is τ²'s, including what its policy leaves to the agent (no tool enforces a rule) and its
quirks: a cancellation refunds every payment as a negative payment line and releases no seat; a flight
change takes no seat either; certificates are deleted when used for a booking; a one-stop search reaches
the next day's date as `2024-05-<day+1>` unpadded. New ids are τ²'s fixed ones (HATHAT, HATHAU, HATHAV;
certificate_3221322 and the next two) and the clock is τ²'s fixed instant, so runs are deterministic.
tests/tau2/test_airline_differential.py runs τ²'s own toolkit beside these on the same calls.

Deliberate difference: `calculate` evaluates + - * / and ** with an exponent of at most 64 by walking
the expression's syntax tree, where τ² calls eval (a `9**9**9` would hold the call's process for ever).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from agentrel.sandbox.environments.tau2.airline_tables import CABINS
from agentrel.sandbox.tools.base import Tool, ToolContext, ToolError, first, obj, rows

NOW = "2024-05-15T15:00:00"  # τ²-airline's fixed clock
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_IDS = tuple(f"certificate_{n}" for n in (3221322, 3221323, 3221324))
Args = dict[str, Any]


def _dollars(text: Any) -> int | float:
    amount = Decimal(str(text))
    return int(amount) if amount == amount.to_integral_value() else float(amount)


def _q(ctx: ToolContext, query: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    return rows(ctx.conn.cursor().execute(query, params))


def _one(ctx: ToolContext, query: str, params: tuple[Any, ...] = ()) -> dict[str, Any] | None:
    return first(ctx.conn.cursor().execute(query, params))


# -- reads in τ²'s model shapes ---------------------------------------------------------------------------


def _user_row(ctx: ToolContext, user_id: Any) -> dict[str, Any]:
    user = _one(ctx, "SELECT * FROM users WHERE user_id = %s", (user_id,))
    if user is None:
        raise ToolError(f"User {user_id} not found")
    return user


def _methods(ctx: ToolContext, user_id: str) -> dict[str, dict[str, Any]]:
    found = _q(ctx, "SELECT * FROM payment_methods WHERE user_id = %s ORDER BY ordinal", (user_id,))
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
    saved = _q(ctx, "SELECT * FROM saved_passengers WHERE user_id = %s ORDER BY ordinal", (uid,))
    booked = _q(
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
    found = _one(ctx, "SELECT * FROM reservations WHERE reservation_id = %s", (reservation_id,))
    if found is None:
        raise ToolError(f"Reservation {reservation_id} not found")
    return found


def _legs(ctx: ToolContext, rid: str) -> list[dict[str, Any]]:
    found = _q(ctx, "SELECT * FROM reservation_flights WHERE reservation_id = %s ORDER BY ordinal", (rid,))
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
    found = _q(ctx, "SELECT * FROM reservation_passengers WHERE reservation_id = %s ORDER BY ordinal", (rid,))
    return [{k: p[k] for k in ("first_name", "last_name", "dob")} for p in found]


def _payments(ctx: ToolContext, rid: str) -> list[dict[str, Any]]:
    found = _q(ctx, "SELECT * FROM reservation_payments WHERE reservation_id = %s ORDER BY ordinal", (rid,))
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
    found = _one(ctx, "SELECT * FROM flights WHERE flight_number = %s", (number,))
    if found is None:
        raise ToolError(f"Flight {number} not found")
    return found


def _instance(ctx: ToolContext, number: Any, date: Any) -> dict[str, Any]:
    _flight(ctx, number)
    found = _one(ctx, "SELECT * FROM flight_dates WHERE flight_number = %s AND date = %s", (number, date))
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
    found = _q(
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


_OPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ToolError("exponent too large")
        return _OPS[type(node.op)](left, right)
    raise ToolError("invalid syntax")


def calculate(ctx: ToolContext, args: Args) -> Any:
    expression = args["expression"]
    if not all(char in "0123456789+-*/(). " for char in expression):
        raise ToolError("Invalid characters in expression")
    try:
        tree = ast.parse(expression, "<string>", mode="eval")
        return str(round(float(_evaluate(tree)), 2))
    except SyntaxError as exc:
        raise ToolError(str(exc)) from None
    except (ZeroDivisionError, OverflowError) as exc:
        raise ToolError(str(exc)) from None


def transfer_to_human_agents(ctx: ToolContext, args: Args) -> Any:
    return "Transfer successful"


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
        for r in _q(
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
    gone = _one(
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


def _tool(name: str, doc: str, props: dict[str, Any], kind: str, handler: Any) -> Tool:
    return Tool(name, doc, obj(props, list(props)), kind, handler)  # type: ignore[arg-type]


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        _tool(
            "get_user_details",
            "The details of a user, with their payment methods and reservations.",
            {"user_id": _S},
            "read",
            get_user_details,
        ),
        _tool(
            "get_reservation_details",
            "The details of a reservation.",
            {"reservation_id": _S},
            "read",
            get_reservation_details,
        ),
        _tool(
            "get_flight_status",
            "The status of a flight on a date.",
            {"flight_number": _S, "date": _S},
            "read",
            get_flight_status,
        ),
        _tool(
            "search_direct_flight",
            "Direct flights between two airports on a date (YYYY-MM-DD).",
            {"origin": _S, "destination": _S, "date": _S},
            "read",
            search_direct_flight,
        ),
        _tool(
            "search_onestop_flight",
            "One-stop flight pairs between two airports on a date (YYYY-MM-DD).",
            {"origin": _S, "destination": _S, "date": _S},
            "read",
            search_onestop_flight,
        ),
        _tool("list_all_airports", "Every airport served, with its city.", {}, "read", list_all_airports),
        _tool(
            "calculate",
            "Evaluate an arithmetic expression of numbers, + - * / and parentheses.",
            {"expression": _S},
            "read",
            calculate,
        ),
        _tool(
            "transfer_to_human_agents",
            "Hand the customer to a human agent with a summary of the issue.",
            {"summary": {"type": "string", "maxLength": 10000}},
            "read",
            transfer_to_human_agents,
        ),
        _tool(
            "send_certificate",
            "Send a travel certificate of an amount (whole dollars) to a user.",
            {"user_id": _S, "amount": _I},
            "irreversible",
            send_certificate,
        ),
        _tool(
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
        _tool(
            "cancel_reservation",
            "Cancel a whole reservation, refunding its payments.",
            {"reservation_id": _S},
            "irreversible",
            cancel_reservation,
        ),
        _tool(
            "update_reservation_baggages",
            "Change a reservation's bag counts, paying for added non-free bags.",
            {"reservation_id": _S, "total_baggages": _I, "nonfree_baggages": _I, "payment_id": _S},
            "compensable",
            update_reservation_baggages,
        ),
        _tool(
            "update_reservation_flights",
            "Replace a reservation's flights (all of them) and cabin, paying the difference.",
            {"reservation_id": _S, "cabin": _CABIN, "flights": _FLIGHTS, "payment_id": _S},
            "compensable",
            update_reservation_flights,
        ),
        _tool(
            "update_reservation_passengers",
            "Replace a reservation's passengers (the same number of them).",
            {"reservation_id": _S, "passengers": _FLIGHTS},
            "reversible-write",
            update_reservation_passengers,
        ),
    )
}
