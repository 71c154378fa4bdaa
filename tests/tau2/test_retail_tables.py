"""τ²-retail's relational port: its document as tables and back, exactly, and in Postgres with a key on
every table."""

from __future__ import annotations

import copy
import json

import psycopg
import pytest

from agentrel.sandbox.environments.tau2 import retail_tables as rt
from agentrel.sandbox.environments.tau2 import wheel
from tests.tau2.ports import PRIMARY_KEYS, port_database


@pytest.fixture(scope="module")
def retail_db(tau2_wheel):
    return wheel.read_json(tau2_wheel, "retail", "db.json")


def test_the_document_round_trips_byte_for_byte(retail_db):
    state = rt.to_state(retail_db)
    counts = {n: len(t.rows) for n, t in state.tables.items()}
    assert counts["users"] == len(retail_db["users"]) == 500
    assert counts["orders"] == len(retail_db["orders"]) == 1000
    assert counts["products"] == 50
    assert counts["variants"] == sum(len(p["variants"]) for p in retail_db["products"].values())
    assert counts["order_items"] == sum(len(o["items"]) for o in retail_db["orders"].values())
    assert json.dumps(rt.from_state(state)) == json.dumps(retail_db)


def test_an_order_after_an_exchange_round_trips(retail_db):
    """The optional lists: an exchange request's items, an empty return request, a cancel reason."""
    db = copy.deepcopy(retail_db)
    delivered = [o for o in db["orders"].values() if o["status"] == "delivered"]
    first, second = delivered[0], delivered[1]
    first |= {
        "status": "exchange requested",
        "exchange_items": [first["items"][0]["item_id"]],
        "exchange_new_items": ["1234567890"],
        "exchange_payment_method_id": first["payment_history"][0]["payment_method_id"],
        "exchange_price_difference": -12.5,
    }
    second |= {"status": "return requested", "return_items": [], "return_payment_method_id": "paypal_1"}
    assert json.dumps(rt.from_state(rt.to_state(db))) == json.dumps(db)


def test_a_request_list_without_its_payment_method_is_refused(retail_db):
    """The attack: a list the tables would silently drop (its presence is its payment method's)."""
    db = copy.deepcopy(retail_db)
    next(iter(db["orders"].values()))["return_items"] = ["1"]
    with pytest.raises(ValueError, match="return_items and return_payment_method_id must be set together"):
        rt.to_state(db)


def test_a_field_without_a_column_is_refused_not_dropped(retail_db):
    db = copy.deepcopy(retail_db)
    next(iter(db["orders"].values()))["gift_wrap"] = True
    with pytest.raises(ValueError, match=r"orders: τ² field\(s\) \['gift_wrap'\] have no column"):
        rt.to_state(db)


def test_a_changed_balance_changes_one_row(retail_db):
    db = copy.deepcopy(retail_db)
    user = next(
        u
        for u in db["users"].values()
        if any(m["source"] == "gift_card" for m in u["payment_methods"].values())
    )
    card = next(m for m in user["payment_methods"].values() if m["source"] == "gift_card")
    card["balance"] = round(card["balance"] + 0.01, 2)
    changed = rt.to_state(db).delta(rt.to_state(retail_db))
    assert list(changed) == ["payment_methods"]
    (row,) = changed["payment_methods"][0].values()
    assert row[rt.TABLES["payment_methods"].columns.index("balance")] == rt.money(card["balance"])


def test_postgres_holds_exactly_the_rows(cluster, retail_db):
    """DDL and COPY into a fresh database, dumped back: the same digest, and a primary key per table."""
    state = rt.to_state(retail_db)
    with port_database(cluster, "agentrel_run_tau2_retail_tables", rt, state) as (digest, conninfo):
        assert digest == state.digest()
        with psycopg.connect(conninfo) as conn:
            keys = conn.execute(PRIMARY_KEYS).fetchone()
            money = conn.execute(
                "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'public' "
                "AND data_type = 'numeric' AND numeric_precision = 12 AND numeric_scale = 2"
            ).fetchone()
        assert keys == (len(rt.TABLES),)
        assert money == (5,)  # two prices, a payment amount, a balance, a price difference
