"""A receipt of the wrong kind witnesses nothing: the receipts' fault kind (the actuation's and the
witness's) must be the kind the cell was scheduled. The attack: give the `kill` cell the restart run's
receipts, fault id changed, with its receipt log to match, and publish."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from agentrel.harness.faults.receipts import (
    ActuatorReceipt,
    KillActuation,
    KillWitness,
    RestartActuation,
    RestartWitness,
    WitnessReceipt,
    verdict,
)
from agentrel.harness.publication.cells import Cell
from tests.publication import factory

FAULTS = [
    {"task": "itsm-hard", "fault_id": "restart-1", "kind": "restart"},
    {"task": "itsm-hard", "fault_id": "kill-1", "kind": "kill"},
]


def fault_block(fault_id: str, kind: str) -> dict[str, Any]:
    """A witnessed fault outcome of `kind`, as the runner records it."""
    if kind == "restart":
        act: Any = RestartActuation(old_pid=100, old_boot_id="boot-a", new_pid=200, new_boot_id="boot-b")
        wit: Any = RestartWitness(
            pid_before=100, boot_before="boot-a", pid_after=200, boot_after="boot-b", old_wait_status=0,
            client_disconnected=True, client_reconnected=True,
        )  # fmt: skip
    else:
        act = KillActuation(call_id="call-3", pid=300, start_identity="boot-1:4711", in_flight=True)
        wit = KillWitness(
            call_id="call-3", wait_status=-9, proxy_saw_call=True, proxy_forwarded_bytes=0, committed=False,
            client_answered=False, pid=300, start_identity="boot-1:4711",
        )  # fmt: skip
    outcome, reasons = verdict(act, wit)
    assert outcome == "witnessed", reasons
    return {
        "fault_id": fault_id,
        "kind": kind,
        "trigger": "first irreversible call",
        "fired": True,
        "verdict": outcome,
        "reasons": reasons,
        "actuator": ActuatorReceipt(fault_id=fault_id, at=1.5, actuation=act).model_dump(mode="json"),
        "witness": WitnessReceipt(
            fault_id=fault_id, at=2.0, witness=wit, verdict=outcome, reasons=reasons
        ).model_dump(mode="json"),
    }


def run_cli(args, monkeypatch, capsys) -> tuple[int, str, str]:
    from agentrel.harness.cli.main import main

    monkeypatch.setattr(sys, "argv", ["agentrel", *map(str, args)])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main()
    got = capsys.readouterr()
    return int(exited.value.code or 0), got.out, got.err


@pytest.fixture
def results(tmp_path, default_registry):
    """A frozen, complete fault matrix whose restart and kill cells each carry their own receipts."""
    m = factory.manifest(
        models=("scripted/oracle",), tasks=("itsm-hard",), conditions=("clean",), faults=FAULTS
    )
    path, _, _ = factory.frozen_results(tmp_path / "r", m)
    records = [json.loads(line) for line in (path / "runs.jsonl").read_text().splitlines()]
    for r in records:
        if r["fault"]:
            r["fault"] = fault_block(
                r["fault"]["fault_id"], "kill" if "kill" in r["condition"] else "restart"
            )
    factory.write_records(path, records)
    return path


def _strata(out_dir) -> dict[str, tuple[int, int]]:
    doc = json.loads((out_dir / "evidence_report.json").read_bytes())
    return {s["fault_kind"]: (s["registered"], s["witnessed"]) for s in doc["coverage"]}


def test_each_cell_with_receipts_of_its_own_kind_publishes(results, default_registry, monkeypatch, capsys):
    code, _, err = run_cli(["publish", results], monkeypatch, capsys)
    assert code == 0, err
    card = json.loads((results / "scorecard.json").read_bytes())
    assert {(s["fault_kind"], s["witnessed"]) for s in card["proof"]["strata"]} >= {
        ("kill", 3),
        ("restart", 3),
    }


@pytest.mark.parametrize("relabel", [False, True], ids=["record-says-restart", "record-relabelled-kill"])
def test_the_restart_runs_receipts_given_to_the_kill_cell_witness_nothing(
    results, default_registry, tmp_path, monkeypatch, capsys, relabel
):
    records = [json.loads(line) for line in (results / "runs.jsonl").read_text().splitlines()]
    restart = {r["run_index"]: r["fault"] for r in records if r["condition"] == "fault:restart-1"}
    for r in records:
        if r["condition"] == "fault:kill-1":  # the attack: the restart run's receipts, fault id changed
            stolen = json.loads(json.dumps(restart[r["run_index"]]).replace('"restart-1"', '"kill-1"'))
            if relabel:
                stolen["kind"] = "kill"
            r["fault"] = stolen
    factory.write_records(results, records)  # the receipt logs follow the records: they agree
    out = tmp_path / "out"
    code, _, err = run_cli(["publish", results, "--out", out], monkeypatch, capsys)
    assert code == 1 and err.count("\n") == 1 and "not publishable (fault_unwitnessed)" in err, err
    assert not list(out.glob("scorecard.*")) and not factory.registered(default_registry)
    assert _strata(out)["kill"] == (3, 0) and _strata(out)["restart"] == (3, 3)
    doc = json.loads((out / "evidence_report.json").read_bytes())
    why = {u["why"] for u in doc["unwitnessed_faults"]}
    if relabel:  # the record's own kind no longer matches its receipts
        assert why == {"the record names a kill fault and its receipts are of a restart"}
    else:  # record and receipts agree with each other; the schedule says kill
        assert why == {"its receipts are of a restart fault; the cell is scheduled a kill"}


def test_the_facts_carry_the_receipts_kind_for_the_schedule_to_judge():
    """The check is against the schedule, not the record: a record is the attacker's to write."""
    cell = Cell("scripted/oracle", "itsm-hard", "fault:kill-1", "kill-1", 1)
    rec = factory.record(cell, "0" * 64, None)
    rec["fault"] = fault_block("kill-1", "restart")
    from agentrel.harness.publication.evidence import evidence_from_records

    (facts,) = evidence_from_records([rec]).records
    assert facts.receipt_kind == "restart" and facts.witness_problem is None
