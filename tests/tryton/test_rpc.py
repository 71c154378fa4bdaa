"""Tryton's wire encoding and its refusals as tool errors (pure: no server)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

from agentrel.sandbox.environments.tryton import rpc, settings
from agentrel.sandbox.tools.base import ToolError


def test_values_round_trip_in_trytons_json_form() -> None:
    value = {"amount": Decimal("640.00"), "date": dt.date(2026, 3, 2), "ids": [1, 2]}
    wire = json.dumps(rpc.encode(value))
    assert json.loads(wire, object_hook=rpc._decode_object) == value
    assert rpc.plain(value) == {"amount": "640.00", "date": "2026-03-02", "ids": [1, 2]}


def test_a_user_error_reaches_the_agent_with_trytons_own_text() -> None:
    err = rpc.refusal(["UserError", ['You cannot delete invoice "INV/1" because it is posted.', ""]])
    assert isinstance(err, ToolError)
    assert str(err) == 'Tryton refused: You cannot delete invoice "INV/1" because it is posted.'


def test_a_warning_names_what_acknowledging_it_takes() -> None:
    err = rpc.refusal(["UserWarning", ["invoice_date_past_1", "The invoice date is in the past.", ""]])
    assert isinstance(err, rpc.TrytonWarning)
    assert err.name == "invoice_date_past_1"
    assert "acknowledge_warning" in str(err) and "in the past" in str(err)


def test_a_crash_inside_tryton_never_shows_its_traceback() -> None:
    err = rpc.refusal(["division by zero", "Traceback (most recent call last):\n  File secret.py"])
    assert "Traceback" not in str(err) and "secret" not in str(err)


def test_database_uri_for_a_socket_and_for_tcp_with_a_password() -> None:
    sock = settings.database_uri("host='/tmp/a b/sock' port=5432 user=agentrel dbname=x")
    assert sock == "postgresql://agentrel@/?host=%2Ftmp%2Fa%20b%2Fsock&port=5432"
    tcp = settings.database_uri("host=127.0.0.1 port=6543 user=run_1 password=p@ss/w:rd dbname=x")
    assert tcp == "postgresql://run_1:p%40ss%2Fw%3Ard@127.0.0.1/?port=6543"


def test_the_fingerprint_names_every_pinned_distribution() -> None:
    from agentrel.sandbox.environments.tryton.env import ENVIRONMENT

    versions = ENVIRONMENT.versions()
    assert versions["dist:trytond"] == "8.2.1"
    assert versions["dist:trytond-sale-complaint"] == "8.2.0"
    assert versions["pinned_date"] == settings.PINNED_DATE.isoformat()


def test_the_registry_offers_tryton_where_the_extra_is_installed() -> None:
    from agentrel.sandbox.environments import registry

    assert "tryton-erp" in registry.names()
    assert registry.load("tryton-erp").name == "tryton-erp"


def test_the_build_key_follows_the_seed_not_the_tools() -> None:
    from agentrel.sandbox.environments.tryton import build

    assert build.base_name("agentrel", 1) == build.base_name("agentrel", 1)
    assert build.base_name("agentrel", 1) != build.base_name("other", 1)
    assert build.base_name("agentrel", 1) != build.base_name("agentrel", 2)
