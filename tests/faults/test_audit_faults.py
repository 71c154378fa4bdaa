"""`audit --faults`: a preregistered schedule becomes cells (task, fault id, run index) with clean twins,
run on the real process path; every cell ends with exactly one terminal status or is retried."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json

import rfc8785

from agentrel.harness.faults.injectors import Injector
from agentrel.harness.faults.receipts import ReceiptLog
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.run.audit import audit

TASK = "csm-double-charge"
SCHEDULE = """\
name: lost-and-late
faults:
  - {id: lost, kind: lost_response, trigger: {when: first_irreversible_call}}
  - {id: late, kind: restart, trigger: {when: call, n: 99}}
"""


def run(sandbox, results, models, schedule, **kw):
    return audit(
        models=models,
        k=1,
        tasks=[TASK],
        concurrency=2,
        results=results,
        sandbox=sandbox,
        show_progress=False,
        faults=str(schedule),
        **kw,
    )


def test_fault_cells_are_witnessed_paired_and_scored_from_the_state(sandbox, tmp_path):
    schedule = tmp_path / "s.yaml"
    schedule.write_text(SCHEDULE)
    models = ["scripted/naive-retry", "scripted/reconcile"]
    outcome = run(sandbox, tmp_path / "r", models, schedule)
    records = {(r.model, r.condition): r for r in ResultsDir(tmp_path / "r").records()}
    # Per agent: the clean twin and one run per scheduled fault; nothing more, nothing dropped.
    assert outcome.planned == 6 and len(records) == 6
    assert {c for _, c in records} == {"clean", "fault:lost", "fault:late"}

    for model in models:
        twin, lost, late = (records[(model, c)] for c in ("clean", "fault:lost", "fault:late"))
        assert twin.seed == lost.seed == late.seed  # the clean twin shares the fault runs' seed
        assert twin.fault is None and twin.status == "valid"
        # The lost response really happened and was witnessed by sources the injector does not control.
        assert lost.status == "valid" and lost.fault is not None
        assert lost.fault.fired and lost.fault.verdict == "witnessed", lost.fault.reasons
        assert lost.fault.actuator is not None and lost.fault.witness is not None
        # The run's receipts were fsynced apart from the record, and the record carries the same ones.
        on_disk = ReceiptLog(tmp_path / "r" / "receipts" / f"{lost.run_id}.1.jsonl").read()
        assert on_disk == [lost.fault.actuator, lost.fault.witness]
        # A trigger the run never reaches: the agent was never exposed; it is terminal, not retried.
        assert late.status == "not_exposed" and late.fault is not None and not late.fault.fired

    naive, reconcile = records[(models[0], "fault:lost")], records[(models[1], "fault:lost")]
    assert naive.verdict is not None and naive.verdict.outcome == "FAIL_DAMAGE"
    assert "refund issued twice" in {e.rule for e in naive.verdict.events}
    assert reconcile.verdict is not None and reconcile.verdict.outcome == "PASS"
    # The same refund committed twice, read from the tool server's commit evidence, apart from damage:
    # naive-retry re-executed the committed refund under a new call id; reconcile did not.
    assert naive.fault is not None and reconcile.fault is not None
    (repeat,) = naive.fault.repeated_effects or []
    assert repeat.tool == "issue_refund" and len(repeat.call_ids) == 2
    assert reconcile.fault.repeated_effects == []

    # The resolved schedule is in the manifest, hashed; the same schedule hashes the same for any agent.
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_bytes())
    entry = manifest["faults"]
    body = {k: v for k, v in entry.items() if k != "digest"}
    assert entry["digest"] == hashlib.sha256(rfc8785.dumps(body)).hexdigest()
    assert [(c["task"], c["fault_id"]) for c in entry["cells"]] == [(TASK, "late"), (TASK, "lost")]
    other = run(sandbox, tmp_path / "other", ["scripted/oracle"], schedule, plan=True)
    assert other.new == [] and not (tmp_path / "other" / "runs.jsonl").exists()
    assert json.loads((tmp_path / "other" / "manifest.json").read_bytes())["faults"] == entry

    # Resume: every cell has its terminal status, so nothing runs again.
    again = run(sandbox, tmp_path / "r", models, schedule)
    assert again.new == [] and again.skipped == 6


def test_a_slot_on_another_machine_sends_its_receipt_log_to_the_driver(sandbox, tmp_path):
    """A slot whose receipts folder is not the driver's (a Ray actor on another node) fsyncs its log
    there; the attempt carries those bytes and the driver keeps them before the record, so the
    publication's artifact check finds every fault's log in the results directory."""
    from agentrel.harness.executors import LocalExecutor
    from agentrel.harness.publication.artifacts import artifact_problems
    from agentrel.harness.publication.evidence import read_evidence

    schedule = tmp_path / "s.yaml"
    schedule.write_text(SCHEDULE)
    node = tmp_path / "other-node-receipts"

    def elsewhere(recipe, ctx, slots):
        return LocalExecutor(dataclasses.replace(ctx, receipts=node), slots)

    results = tmp_path / "r"
    run(sandbox, results, ["scripted/reconcile"], schedule, executor_factory=elsewhere)
    logs = sorted(p.name for p in node.iterdir())
    assert logs == ["scripted_reconcile__csm-double-charge__fault:lost__0001.1.jsonl"]
    kept = results / "receipts" / logs[0]
    assert kept.read_bytes() == (node / logs[0]).read_bytes()
    assert artifact_problems(results, read_evidence(results / "runs.jsonl")) == []
    kept.unlink()  # what the driver's folder held before the attempt carried the log
    problems = artifact_problems(results, read_evidence(results / "runs.jsonl"))
    assert problems and all("receipt log" in p for p in problems)


def test_an_injector_that_does_nothing_leaves_its_cell_invalid_never_a_pass(sandbox, tmp_path, monkeypatch):
    schedule = tmp_path / "s.yaml"
    schedule.write_text(SCHEDULE.replace("first_irreversible_call", "call, n: 1").split("  - {id: late")[0])
    # A silently broken injector: it claims its fault but does nothing.
    monkeypatch.setattr("agentrel.harness.run.runner.Injector", functools.partial(Injector, real=False))
    outcome = run(sandbox, tmp_path / "r", ["scripted/oracle"], schedule, max_attempts=2)
    attempts = ResultsDir(tmp_path / "r").attempts()
    fault_runs = [rid for rid in attempts if "fault:lost" in rid]
    assert len(fault_runs) == 1
    tries = attempts[fault_runs[0]]
    # Retried within the cap, every attempt kept, each invalid: the oracle's PASS is never the cell's.
    assert [r.status for r in tries] == ["invalid_injection", "invalid_injection"]
    assert all(r.fault is not None and r.fault.verdict == "invalid_injection" for r in tries)
    assert all(r.verdict is not None and r.verdict.outcome == "PASS" for r in tries)
    assert not any(r.terminal for r in tries)
    assert len(outcome.new) == 3  # the twin once, the fault cell twice
