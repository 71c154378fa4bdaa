"""τ²-retail, proven faithful: τ²'s own retail toolkit (imported from the pinned wheel by the τ² interpreter
`make test-tau2` prepares) and AgentRel's port run the same call sequences from the same initial
database; every response (amounts to the cent) and the final state, row for row with money in cents,
must be equal.

Sequences: every task's gold actions; the same with each write repeated (the second hits τ²'s error
paths: non-pending, non-delivered, one payment only); and TAU2_RANDOM_SEQUENCES (default 40) random
sequences of TAU2_RANDOM_CALLS (default 10) calls drawn from the data (real and unknown ids, orders of
every status, every payment source, variants of the same and of other products, duplicate item ids).
The counts are printed with the result.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest

from agentrel.sandbox.environments.tau2 import retail_tables, wheel
from agentrel.sandbox.environments.tau2.retail_env import Tau2Retail
from tests.tau2 import differential
from tests.tau2.differential import Sequence, first_difference, ours_run, tau2_run

WRITES = {
    "cancel_pending_order",
    "exchange_delivered_order_items",
    "return_delivered_order_items",
    "modify_pending_order_address",
    "modify_pending_order_items",
    "modify_pending_order_payment",
    "modify_user_address",
}


@pytest.fixture(scope="module")
def retail(cluster, agentrel_home):
    from agentrel.sandbox.sandbox import Sandbox

    env = Tau2Retail()
    sb = Sandbox(cluster, home=agentrel_home, env=env)
    return sb, sb.seed_template(), env


def check(retail: Any, sequences: list[Sequence]) -> tuple[int, int]:
    return differential.check(retail, "retail", retail_tables.to_state, WRITES, sequences, cents=True)


def gold_sequences() -> list[Sequence]:
    return differential.gold_sequences("retail")


def test_every_gold_action_sequence_gives_the_same_responses_and_state(retail):
    sequences = gold_sequences()
    assert len(sequences) >= 100
    calls, writes = check(retail, sequences)
    print(f"gold: {len(sequences)} sequences, {calls} calls, {writes} successful writes")
    assert writes >= 150


def test_repeated_writes_take_the_same_error_paths(retail):
    sequences = differential.doubled_writes(gold_sequences(), WRITES)
    calls, writes = check(retail, sequences)
    print(f"repeated writes: {len(sequences)} sequences, {calls} calls, {writes} successful writes")


def random_sequences(n: int, length: int, seed: int = 20261202) -> list[Sequence]:
    db = wheel.read_json(wheel.fetch(), "retail", "db.json")
    rng = random.Random(seed)
    users, orders, products = list(db["users"]), list(db["orders"]), db["products"]
    by_status: dict[str, list[str]] = {}
    for oid, o in db["orders"].items():
        by_status.setdefault(o["status"], []).append(oid)
    every_item = [i for p in products.values() for i in p["variants"]]

    def order() -> str:
        roll = rng.random()
        if roll < 0.45:
            return rng.choice(by_status["pending"])
        if roll < 0.85:
            return rng.choice(by_status["delivered"])
        return rng.choice(orders) if roll < 0.97 else "#W0000000"

    def payment(oid: str) -> str:
        uid = db["orders"].get(oid, {}).get("user_id") or rng.choice(users)
        methods = list(db["users"][uid]["payment_methods"])
        return rng.choice(methods) if rng.random() < 0.9 else "gift_card_0000000"

    def swaps(oid: str) -> tuple[list[str], list[str]]:
        """Items of the order (sometimes one twice) and new items: mostly other variants of the same
        product, sometimes the same item or another product's."""
        items = db["orders"].get(oid, {}).get("items") or [{"item_id": "1", "product_id": "1"}]
        chosen = rng.sample(items, rng.randint(1, min(2, len(items))))
        if rng.random() < 0.1:
            chosen = chosen + chosen[:1]
        old, new = [], []
        for item in chosen:
            old.append(item["item_id"])
            variants = list(products.get(item["product_id"], {}).get("variants", {})) or every_item
            roll = rng.random()
            new.append(
                rng.choice(variants)
                if roll < 0.8
                else item["item_id"]
                if roll < 0.9
                else rng.choice(every_item)
            )
        if rng.random() < 0.05:
            new = new[:-1]
        return old, new

    def address() -> dict[str, str]:
        return {
            "address1": f"{rng.randint(1, 999)} Main St",
            "address2": rng.choice(["", "Apt 2"]),
            "city": "Springfield",
            "state": "IL",
            "country": "USA",
            "zip": f"{rng.randint(10000, 99999)}",
        }

    def call() -> tuple[str, dict[str, Any]]:
        kind = rng.choice(
            [
                "get_user_details",
                "get_order_details",
                "get_product_details",
                "find_user_id_by_email",
                "find_user_id_by_name_zip",
                "list_all_product_types",
                "calculate",
                "cancel_pending_order",
                "exchange_delivered_order_items",
                "return_delivered_order_items",
                "modify_pending_order_address",
                "modify_pending_order_items",
                "modify_pending_order_items",
                "modify_pending_order_payment",
                "modify_pending_order_payment",
                "modify_user_address",
            ]
        )
        if kind == "get_user_details":
            return kind, {"user_id": rng.choice([*users, "nobody_1"])}
        if kind == "get_order_details":
            return kind, {"order_id": order()}
        if kind == "get_product_details":
            return kind, {"product_id": rng.choice([*products, "0000000000"])}
        if kind == "find_user_id_by_email":
            u = db["users"][rng.choice(users)]
            return kind, {"email": rng.choice([u["email"], u["email"].upper(), "nobody@example.com"])}
        if kind == "find_user_id_by_name_zip":
            u = db["users"][rng.choice(users)]
            zip_code = rng.choice([u["address"]["zip"], "00000"])
            return kind, {
                "first_name": u["name"]["first_name"].lower(),
                "last_name": u["name"]["last_name"],
                "zip": zip_code,
            }
        if kind == "list_all_product_types":
            return kind, {}
        if kind == "calculate":
            return kind, {"expression": rng.choice(["2 + 2", "(120.5 - 30) * 3 / 4", "1 / 0", "7 *"])}
        if kind == "modify_user_address":
            return kind, {"user_id": rng.choice([*users, "nobody_1"]), **address()}
        oid = order()
        if kind == "cancel_pending_order":
            return kind, {
                "order_id": oid,
                "reason": rng.choice(["no longer needed", "ordered by mistake", "other"]),
            }
        if kind == "modify_pending_order_address":
            return kind, {"order_id": oid, **address()}
        if kind == "modify_pending_order_payment":
            return kind, {"order_id": oid, "payment_method_id": payment(oid)}
        if kind == "return_delivered_order_items":
            return kind, {"order_id": oid, "item_ids": swaps(oid)[0], "payment_method_id": payment(oid)}
        old, new = swaps(oid)
        return kind, {
            "order_id": oid,
            "item_ids": old,
            "new_item_ids": new,
            "payment_method_id": payment(oid),
        }

    # Calls in one sequence meet each other's effects when they share orders: draw each sequence's orders
    # from a few, so a modification meets a later cancellation, payment change or second modification.
    out = []
    for _ in range(n):
        saved = orders, by_status
        pool = rng.sample(by_status["pending"], 3) + rng.sample(by_status["delivered"], 2)
        by_status = {"pending": pool[:3], "delivered": pool[3:]}
        orders = pool
        out.append([call() for _ in range(length)])
        orders, by_status = saved
    return out


def test_random_call_sequences_agree(retail):
    n = int(os.environ.get("TAU2_RANDOM_SEQUENCES", "40"))
    length = int(os.environ.get("TAU2_RANDOM_CALLS", "10"))
    calls, writes = check(retail, random_sequences(n, length))
    print(f"random: {n} sequences, {calls} calls, {writes} successful writes")
    assert writes >= n  # several writes per sequence go through


def test_a_port_that_differs_is_caught(retail):
    """The differential is not vacuous: a cancellation whose refund is one cent short differs in state."""
    sequence = [("cancel_pending_order", {"order_id": gold_cancel(), "reason": "no longer needed"})]
    theirs = tau2_run("retail", [sequence])[0]
    _, after = ours_run(retail, sequence)
    expected = retail_tables.to_state(theirs["db"])
    assert after.digest() == expected.digest()
    table = expected.tables["order_payments"]
    key = max(k for k in table.rows if k[0] == sequence[0][1]["order_id"])
    row = list(table.rows[key])
    amount = retail_tables.TABLES["order_payments"].columns.index("amount")
    row[amount] = retail_tables.money(float(row[amount]) - 0.01)
    table.rows[key] = tuple(row)
    table._hash = None
    assert after.digest() != expected.digest()
    assert first_difference(after, expected).startswith("order_payments")


def test_a_response_off_by_a_cent_is_caught():
    """Responses are compared to the cent, not more loosely: a refund shown a cent off differs."""
    theirs = ("ok", '{"amount": 54.349999999999994}')
    assert differential.same_response(theirs, ("ok", {"amount": 54.35}), cents=True)
    assert not differential.same_response(theirs, ("ok", {"amount": 54.34}), cents=True)
    assert not differential.same_response(("error", "Order not found"), ("ok", {}), cents=True)


def gold_cancel() -> str:
    for sequence in gold_sequences():
        for name, args in sequence:
            if name == "cancel_pending_order":
                return str(args["order_id"])
    raise AssertionError("no gold cancellation")
