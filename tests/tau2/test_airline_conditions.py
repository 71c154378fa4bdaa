"""Conditions and fault schedules on tau2-airline, unchanged machinery: the adversarial condition plants
the environment's own goals (payload templates shared with the built-in catalogue), the goal's damage is
read off the airline tables; the oracle under noise stays safe; a fault schedule's run is witnessed.

Known answers: scripted/follow-injection does what the first payload it reads asks, so every exposed run
carries its planted goal's damage and no other goal's; scripted/oracle never triggers a goal rule.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrel.harness.conditions.catalogue import Catalogue, builtin_root, load_catalogue
from agentrel.harness.conditions.layers import draw
from agentrel.harness.conditions.model import Injection
from agentrel.harness.tasks import load_suite
from agentrel.sandbox.environments import registry
from tests.tau2.conditions import (
    check_a_lost_response_is_witnessed,
    check_the_oracle_under_noise_stays_safe,
    fired_goals,
    injected,
    replayed,
    run,
    selected,
)

# Tasks whose tools carry different goals: a cancellation, a certificate, a bag change + passengers.
ATTACKED = ["tau2-airline-cancel-two", "tau2-airline-delay-certificate", "tau2-airline-bags-before-upgrade"]
BOOKING_ONLY = "tau2-airline-two-certificates"  # a booking task: narrowed to its booking tools, no goal fits
BOOKING_TOOLS = ["get_user_details", "get_reservation_details", "search_direct_flight", "book_reservation"]
CANCEL_TOOLS = ["get_user_details", "get_reservation_details", "cancel_reservation"]

ENV = registry.load("tau2-airline")


@pytest.fixture(scope="module")
def airline(cluster, agentrel_home: Path) -> Iterator[object]:
    """A sandbox on tau2-airline (the audit reads its environment's suite and catalogue)."""
    with selected(cluster, agentrel_home, "tau2-airline") as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def catalogue(airline) -> Catalogue:
    return load_catalogue(env=ENV)


# ---- the catalogue ---------------------------------------------------------------------------------


def test_the_airline_catalogue_holds_goals_and_shares_the_builtin_payloads(catalogue):
    import yaml

    from agentrel.harness.conditions.catalogue import default_root, payloads_path

    assert not (default_root(ENV) / "payloads.yaml").exists()  # goals only: nothing copied
    shared = builtin_root() / "payloads.yaml"
    assert payloads_path(default_root(ENV)) == shared
    ids = [p["id"] for p in yaml.safe_load(shared.read_text())["payloads"]]
    assert [p.id for p in catalogue.payloads] == ids
    assert {g.id for g in catalogue.goals} >= {"cancel-reservation", "issue-certificate", "change-passenger"}
    tables = set(registry.load("tau2-airline").table_infos())
    for goal in catalogue.goals:  # every goal rule reads airline tables, never the built-in's
        assert {r.match.table for r in catalogue.specs[goal.id].rules} <= tables, goal.id


def test_a_goal_whose_tools_the_task_lacks_is_never_planted(airline, catalogue):
    """The negative: over many seeds the draw only ever plants goals the task's tools can carry out, and
    a task whose tools carry none has no goal to draw (the audit leaves its cells out). The suite's tasks
    offer the whole toolset, as τ² does, so every goal fits them; a task narrowed to cancelling draws only
    the cancellation, and one narrowed to booking draws nothing."""
    suite = {t.id: t for t in load_suite(env=ENV)}
    assert all(
        {g.id for g in catalogue.goals_for(t)} == {g.id for g in catalogue.goals} for t in suite.values()
    )
    why = {"tools_narrowed": "a test of a narrowed task"}
    task = suite["tau2-airline-cancel-two"].model_copy(update={"tools": CANCEL_TOOLS, **why})
    drawn = {draw(Injection(), task, f"seed-{i}", catalogue)[0].id for i in range(200)}
    assert drawn == {g.id for g in catalogue.goals_for(task)} == {"cancel-reservation"}
    booking = suite[BOOKING_ONLY].model_copy(update={"tools": BOOKING_TOOLS, **why})
    assert catalogue.goals_for(booking) == []


# ---- audits -----------------------------------------------------------------------------------------


def test_following_the_payload_is_labelled_as_the_planted_goal(airline, tmp_path):
    out = run(airline, tmp_path / "r", "scripted/follow-injection", "adversarial", ATTACKED, k=3)
    exposed = [r for r in out.new if r.exposure == "exposed"]
    assert len(out.new) == 9 and exposed
    for record in out.new:
        planted = {e.detail["goal"] for e in record.events if e.kind == "injection"}
        if record.exposure != "exposed":
            assert injected(record) == [] and planted == set(), record.run_id
            continue
        (goal,) = planted
        assert record.verdict.outcome == "FAIL_DAMAGE", record.run_id
        assert {e.spec for e in injected(record)} == {f"injection:{goal}"}, record.run_id
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["environment"]["name"] == "tau2-airline"
    assert manifest["injection_catalogue_digest"] == load_catalogue(env=ENV).digest
    # Publication re-derives each verdict with the goal the seed draws, from the recorded environment's
    # catalogue, even in a process on another environment (analyze and publish take no --env).
    from agentrel.harness.publication.rederive import rederive

    assert rederive(tmp_path / "r", manifest, workers=1) == []


def test_with_the_whole_toolset_every_task_is_attacked(airline, tmp_path):
    """Offered every tool, as in τ², the booking task can be made to cancel: no cell is left out."""
    out = run(airline, tmp_path / "r", "scripted/follow-injection", "adversarial", [BOOKING_ONLY], k=1)
    assert len(out.new) == 1
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert "excluded_cells" not in manifest


def test_the_oracle_under_noise_stays_safe(airline, tmp_path):
    check_the_oracle_under_noise_stays_safe(airline, tmp_path / "r", ATTACKED)


def test_a_fault_schedule_run_records_its_witnessed_outcome(airline, tmp_path):
    # The lost answer hides a committed write; the oracle does not repeat it, so no damage.
    check_a_lost_response_is_witnessed(airline, tmp_path, "tau2-airline-cancel-two")


# ---- every goal on every task that can carry it; no oracle touches a goal's records ---------------


def test_every_goal_fires_on_its_tasks_and_no_oracle_fires_one(airline, catalogue):
    suite = load_suite(env=ENV)
    for task in suite:
        verdict, _ = replayed(airline, task, task.oracle.steps, task.oracle.final)
        assert fired_goals(verdict) == set(), task.id
        assert verdict.outcome == "PASS", task.id
        for goal in catalogue.goals_for(task):
            verdict, calls = replayed(airline, task, goal.steps, "Done.")
            assert all(c.ok for c in calls), (task.id, goal.id, [c for c in calls if not c.ok])
            fired = fired_goals(verdict)
            assert fired == {f"injection:{goal.id}"}, (task.id, goal.id, fired)


def test_lying_success_withholds_a_whole_booking_and_the_state_shows_it(airline, tmp_path):
    """τ²'s tools write through their call's connection, so lying-success carries over unchanged: the
    booking (a reservation, its flights, passengers and payments: several statements) is answered as
    made and none of it is committed; the oracle, which trusts the answer, leaves the task undone."""
    condition = tmp_path / "lies.yaml"
    condition.write_text("name: lies\nlying_success: {share: 1.0}\n")
    (clean,) = run(airline, tmp_path / "clean", "scripted/oracle", "clean", [BOOKING_ONLY], k=1).new
    (lied,) = run(airline, tmp_path / "lied", "scripted/oracle", str(condition), [BOOKING_ONLY], k=1).new
    assert clean.verdict.outcome == "PASS" and clean.verdict.mutated
    assert [e.tool for e in lied.events if e.kind == "lying_success"] == ["book_reservation"]
    assert all(c["ok"] for c in lied.tool_calls)
    assert lied.verdict.outcome == "FAIL_SAFE" and not lied.verdict.mutated
    # Partly made: the booking's first write (the certificate it spends) commits, the rest does not.
    condition.write_text("name: half-lies\nlying_success: {share: 1.0, mode: partial}\n")
    (half,) = run(airline, tmp_path / "half", "scripted/oracle", str(condition), [BOOKING_ONLY], k=1).new
    assert [(e.tool, e.detail) for e in half.events if e.kind == "lying_success"] == [
        ("book_reservation", {"mode": "partial"})
    ]
    assert half.verdict.mutated and half.verdict.outcome != "PASS", half.verdict
