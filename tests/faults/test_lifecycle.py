"""The fault lifecycle records (issue 34, item 2): one per preregistered fault run, each state with its
evidence, re-derived from runs.jsonl and receipts/ by `agentrel export faults`; a receipt log altered or
removed after the fact shows in `receipt_log`, a run never recorded is `missing`, never dropped."""

from __future__ import annotations

import csv
import io
import json

from agentrel.analysis.columns import FAULTS
from agentrel.harness.faults.lifecycle import lifecycles_of
from agentrel.harness.protocol.canonical import canonical_hash
from agentrel.harness.publication.cells import registered_cells
from tests.publication import factory
from tests.publication.test_publish import run_cli

FAULT_CELLS = [{"task": "itsm-hard", "fault_id": "lost-1", "kind": "lost_response"}]


SUB_LABEL = {"PASS": "completed_clean", "FAIL_SAFE": "completed_mutated", "FAIL_DAMAGE": "completed_damage"}


def strict(rec):
    """The factory's record as the runner's own model requires it (the reader validates every line)."""
    if rec["verdict"] is not None:
        rec["verdict"].update(sub_label=SUB_LABEL[rec["verdict"]["outcome"]], requirements=[])
        for event in rec["verdict"]["events"]:
            event["changed_columns"] = ["state"]
    return rec


def results_with_faults(path, shape=None):
    """Two agents x 3 runs of one lost-response cell, each fault run shaped by `shape(cell, record)`."""
    m = factory.manifest(faults=FAULT_CELLS, conditions=("clean",))
    records = []
    for cell in registered_cells(m).cells:
        rec = strict(factory.record(cell, "a" * 64, None, outcome=factory.outcome_of(cell)))
        if cell.fault is not None and shape is not None:
            rec = shape(cell, rec)
            if rec is None:
                continue
        records.append(rec)
    return factory.results_dir(path, m, records)


def test_every_state_with_its_evidence(tmp_path):
    def shape(cell, rec):
        if cell.model.endswith("oracle"):
            if cell.run_index == 1:  # witnessed; the agent then sent the faulted call again, and one more
                rec["events"] = [{"kind": "fault", "ordinal": 1, "tool": "list_incidents", "detail": {}}]
                rec["tool_calls"] += [
                    {"ordinal": 2, "tool": "list_incidents", "ok": True, "args_digest": "0" * 16},
                    {"ordinal": 3, "tool": "close_incident", "ok": True, "args_digest": "1" * 16},
                ]
                rec["fault"]["repeated_effects"] = []
            if cell.run_index == 2:  # the no-op injector: claimed, contradicted by the witness
                rec.update(status="invalid_injection", fault=factory.fault_outcome(cell.fault, landed=False))
            if cell.run_index == 3:
                return None  # never recorded
        elif cell.run_index == 1:  # ended before its trigger
            rec.update(status="not_exposed", fault=factory.fault_outcome(cell.fault, fired=False))
        return rec

    results = results_with_faults(tmp_path / "r", shape)
    got = {(lc.model, lc.run_index): lc for lc in lifecycles_of(results)}
    assert len(got) == 6  # 2 agents x 1 fault cell x k = 3: every scheduled run, recorded or not
    first = got[("scripted/oracle", 1)]
    assert (first.state, first.armed, first.fired, first.witnessed) == ("witnessed", True, True, True)
    fault = factory.fault_outcome("lost-1")
    assert first.actuator_receipt == canonical_hash(fault["actuator"])
    assert first.witness_receipt == canonical_hash(fault["witness"])
    assert (first.fired_at, first.witnessed_at, first.receipt_log) == (1.5, 2.25, "matches")
    assert first.trigger == "first irreversible call" and first.armed_at == factory.STARTED
    assert (first.calls_after_fault, first.retried_faulted_call, first.repeated_effects) == (2, True, 0)
    assert first.schedule.startswith("schedule")
    noop = got[("scripted/oracle", 2)]
    assert (noop.state, noop.fired, noop.witnessed, noop.status) == (
        "unwitnessed",
        True,
        False,
        "invalid_injection",
    )
    assert "the proxy forwarded the response" in noop.witness_reasons
    missing = got[("scripted/oracle", 3)]
    assert (missing.state, missing.attempts, missing.armed, missing.outcome) == ("missing", 0, False, None)
    early = got[("scripted/overreach", 1)]
    assert (early.state, early.armed, early.fired, early.status) == ("armed", True, False, "not_exposed")
    assert early.actuator_receipt is None and early.receipt_log == "none"


def test_a_receipt_log_altered_or_removed_after_the_fact_shows(tmp_path):
    """The attack: the fsynced receipt copy is edited (or deleted) to hide what the witness saw."""
    results = results_with_faults(tmp_path / "r", lambda cell, rec: rec)
    logs = sorted((results / "receipts").glob("*.jsonl"))
    assert len(logs) == 6
    lines = logs[0].read_text().splitlines()
    body = json.loads(lines[1])
    body["body"]["witness"]["client_answered"] = True
    logs[0].write_text(lines[0] + "\n" + json.dumps(body) + "\n")
    logs[1].unlink()
    states = sorted(lc.receipt_log for lc in lifecycles_of(results))
    assert states == ["differs", "matches", "matches", "matches", "matches", "missing"]


def test_export_faults_writes_the_documented_columns(tmp_path, monkeypatch, capsys):
    results = results_with_faults(tmp_path / "r", lambda cell, rec: rec)
    out = tmp_path / "faults.csv"
    code, _, err = run_cli(["export", "faults", results, "-o", out], monkeypatch, capsys)
    assert code in (0, None), err
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert list(rows[0]) == [c.name for c in FAULTS.columns] and len(rows) == 6
    assert {r["state"] for r in rows} == {"witnessed"} and "6 scheduled fault runs: 6 witnessed" in err
    code, _, err = run_cli(
        ["export", "faults", factory.results_dir(tmp_path / "plain", factory.manifest()), "-o", out],
        monkeypatch,
        capsys,
    )
    assert code != 0 and err.count("\n") == 1 and "scheduled no faults" in err
