"""τ²-airline, proven faithful: τ²'s own toolkit (imported from the pinned wheel by the τ² interpreter
`make test-tau2` prepares) and AgentRel's port run the same call sequences from the same initial
database; every response and the final state, row for row with money in cents, must be equal.

Sequences: every task's gold actions; the same with each write repeated (the second hits τ²'s error
paths: too many ids, balances spent, seats gone); and TAU2_RANDOM_SEQUENCES (default 40) random
sequences of TAU2_RANDOM_CALLS (default 10) calls drawn from the data (real and unknown ids, every
payment source, available and unavailable flights). The counts are printed with the result.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest

from agentrel.sandbox.environments.tau2 import airline_tables, wheel
from agentrel.sandbox.environments.tau2.airline_env import Tau2Airline
from tests.tau2 import differential
from tests.tau2.differential import Sequence, first_difference, ours_run, tau2_run

WRITES = {
    "book_reservation",
    "cancel_reservation",
    "send_certificate",
    "update_reservation_baggages",
    "update_reservation_flights",
    "update_reservation_passengers",
}


@pytest.fixture(scope="module")
def airline(cluster, agentrel_home):
    from agentrel.sandbox.sandbox import Sandbox

    env = Tau2Airline()
    sb = Sandbox(cluster, home=agentrel_home, env=env)
    return sb, sb.seed_template(), env


def check(airline: Any, sequences: list[Sequence]) -> tuple[int, int]:
    return differential.check(airline, "airline", airline_tables.to_state, WRITES, sequences)


def gold_sequences() -> list[Sequence]:
    return differential.gold_sequences("airline")


def test_every_gold_action_sequence_gives_the_same_responses_and_state(airline):
    sequences = gold_sequences()
    assert len(sequences) >= 40
    calls, writes = check(airline, sequences)
    print(f"gold: {len(sequences)} sequences, {calls} calls, {writes} successful writes")
    assert writes >= 40


def test_repeated_writes_take_the_same_error_paths(airline):
    sequences = differential.doubled_writes(gold_sequences(), WRITES)
    calls, writes = check(airline, sequences)
    print(f"repeated writes: {len(sequences)} sequences, {calls} calls, {writes} successful writes")


def random_sequences(n: int, length: int, seed: int = 20261201) -> list[Sequence]:
    db = wheel.read_json(wheel.fetch(), "airline", "db.json")
    rng = random.Random(seed)
    users, reservations, flights = list(db["users"]), list(db["reservations"]), list(db["flights"])
    dates = [f"2024-05-{d:02d}" for d in range(1, 31)]
    cabins = ["basic_economy", "economy", "business"]

    def user() -> str:
        return rng.choice(users) if rng.random() < 0.9 else "nobody_0000"

    def reservation() -> str:
        return rng.choice([*reservations, "HATHAT"]) if rng.random() < 0.9 else "ZZZZZZ"

    def payment(uid: str) -> str:
        methods = list(db["users"].get(uid, {}).get("payment_methods", {}))
        return (
            rng.choice([*methods, "certificate_3221322"]) if methods and rng.random() < 0.9 else "gift_card_0"
        )

    def flight_infos(k: int) -> list[dict[str, str]]:
        return [{"flight_number": rng.choice(flights), "date": rng.choice(dates[10:25])} for _ in range(k)]

    def people(k: int) -> list[dict[str, str]]:
        return [{"first_name": f"P{i}", "last_name": "Q", "dob": "1990-01-01"} for i in range(k)]

    def call() -> tuple[str, dict[str, Any]]:
        kind = rng.choice(
            [
                "get_user_details",
                "get_reservation_details",
                "search_direct_flight",
                "search_onestop_flight",
                "get_flight_status",
                "send_certificate",
                "cancel_reservation",
                "update_reservation_baggages",
                "update_reservation_flights",
                "update_reservation_passengers",
                "book_reservation",
                "calculate",
            ]
        )
        if kind == "get_user_details":
            return kind, {"user_id": user()}
        if kind == "get_reservation_details":
            return kind, {"reservation_id": reservation()}
        if kind in ("search_direct_flight", "search_onestop_flight"):
            f = db["flights"][rng.choice(flights)]
            return kind, {
                "origin": f["origin"],
                "destination": rng.choice([f["destination"], "JFK"]),
                "date": rng.choice(dates),
            }
        if kind == "get_flight_status":
            return kind, {"flight_number": rng.choice([*flights, "HAT999"]), "date": rng.choice(dates)}
        if kind == "send_certificate":
            return kind, {"user_id": user(), "amount": rng.choice([50, 100, 250, 1000])}
        if kind == "cancel_reservation":
            return kind, {"reservation_id": reservation()}
        if kind == "calculate":
            return kind, {"expression": rng.choice(["2 + 2", "(120 - 30) * 3 / 4", "1 / 0", "7 *", "2 ** 5"])}
        rid = reservation()
        owner = db["reservations"].get(rid, {}).get("user_id", user())
        if kind == "update_reservation_baggages":
            return kind, {
                "reservation_id": rid,
                "total_baggages": rng.randint(0, 5),
                "nonfree_baggages": rng.randint(0, 3),
                "payment_id": payment(owner),
            }
        if kind == "update_reservation_flights":
            legs = db["reservations"].get(rid, {}).get("flights", [])
            keep = [
                {"flight_number": f["flight_number"], "date": f["date"]}
                for f in legs[: rng.randint(0, len(legs))]
            ]
            return kind, {
                "reservation_id": rid,
                "cabin": rng.choice(cabins),
                "flights": keep + flight_infos(rng.randint(0, 1)),
                "payment_id": payment(owner),
            }
        if kind == "update_reservation_passengers":
            n = len(db["reservations"].get(rid, {}).get("passengers", [])) or 1
            return kind, {"reservation_id": rid, "passengers": people(rng.choice([n, n, n + 1]))}
        uid = user()
        n = rng.randint(1, 2)
        return kind, {
            "user_id": uid,
            "origin": "JFK",
            "destination": "LAX",
            "flight_type": "one_way",
            "cabin": rng.choice(cabins),
            "flights": flight_infos(rng.randint(1, 2)),
            "passengers": people(n),
            "payment_methods": [{"payment_id": payment(uid), "amount": rng.choice([100, 500, 1000])}],
            "total_baggages": 1,
            "nonfree_baggages": rng.randint(0, 1),
            "insurance": rng.choice(["yes", "no"]),
        }

    return [[call() for _ in range(length)] for _ in range(n)]


def test_random_call_sequences_agree(airline):
    n = int(os.environ.get("TAU2_RANDOM_SEQUENCES", "40"))
    length = int(os.environ.get("TAU2_RANDOM_CALLS", "10"))
    calls, writes = check(airline, random_sequences(n, length))
    print(f"random: {n} sequences, {calls} calls, {writes} successful writes")
    assert writes >= n  # about one in four calls is a write that goes through


def test_a_port_that_differs_is_caught(airline):
    """The differential is not vacuous: a cancellation that refunds one dollar short differs in state."""
    sequence = [("cancel_reservation", {"reservation_id": gold_cancel()})]
    theirs = tau2_run("airline", [sequence])[0]
    _, after = ours_run(airline, sequence)
    expected = airline_tables.to_state(theirs["db"])
    assert after.digest() == expected.digest()
    table = expected.tables["reservation_payments"]
    key = max(k for k in table.rows if k[0] == sequence[0][1]["reservation_id"])
    row = list(table.rows[key])
    row[-1] = airline_tables.money(float(row[-1]) + 1)
    table.rows[key] = tuple(row)
    table._hash = None
    assert after.digest() != expected.digest()
    assert first_difference(after, expected).startswith("reservation_payments")


def gold_cancel() -> str:
    for sequence in gold_sequences():
        for name, args in sequence:
            if name == "cancel_reservation":
                return str(args["reservation_id"])
    raise AssertionError("no gold cancellation")
