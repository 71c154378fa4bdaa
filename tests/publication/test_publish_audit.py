"""End to end on a real sandbox: plan, freeze, audit under the freeze (with a witnessed fault), publish."""

import json

import pytest

from agentrel.harness.errors import UsageError
from agentrel.harness.protocol.freeze import freeze_digest, load_freeze, write_freeze
from agentrel.harness.protocol.registry import read_registry
from agentrel.harness.publication.publish import publish
from agentrel.harness.run.audit import audit

pytestmark = pytest.mark.real_evidence

TASK = "csm-double-charge"
SCHEDULE = """\
name: lost-only
faults:
  - {id: lost, kind: lost_response, trigger: {when: first_irreversible_call}}
"""


def test_a_real_audit_planned_frozen_run_and_published(sandbox, tmp_path):
    schedule = tmp_path / "schedule.yaml"
    schedule.write_text(SCHEDULE)
    results, registry = tmp_path / "r", tmp_path / "registry.jsonl"
    kw = dict(
        models=["scripted/reconcile"],
        k=1,
        tasks=[TASK],
        concurrency=2,
        results=results,
        sandbox=sandbox,
        show_progress=False,
        faults=str(schedule),
    )
    audit(**kw, plan=True)  # the manifest, nothing run
    assert not (results / "runs.jsonl").exists()
    freeze, wrote = write_freeze(results, "tester", registry=registry)
    assert wrote
    audit(**kw)
    runs = results / "runs.jsonl"
    records = [json.loads(line) for line in runs.read_text().splitlines()]
    assert len(records) == 2 and {r["condition"] for r in records} == {"clean", "fault:lost"}

    # Every run recorded after the freeze is stamped with it by the runner.
    assert {r["frozen_by"] for r in records} == {freeze_digest(load_freeze(results))}
    # An audit whose matrix differs from the frozen one is refused before it runs anything.
    with pytest.raises(UsageError, match="the manifest it was planned with"):
        audit(**{**kw, "k": 2})
    assert len(runs.read_text().splitlines()) == 2

    outcome = publish(results, registry=registry)
    assert outcome.scorecard is not None, outcome.proof.reasons
    card = outcome.scorecard
    assert card.protocol_hash == freeze.protocol_hash and card.proof.registered_cells == 2
    assert [s.witnessed for s in card.proof.strata if s.fault_kind == "lost_response"] == [1]
    assert card.faults is not None and card.faults.complete and card.faults.scores[0].witnessed == 1
    assert card.axes and {a.condition for a in card.axes} == {"clean", "fault:lost"}
    assert {r.outcome for r in card.runs} == {"PASS"}  # reconcile reads the state before retrying
    assert {(p.name) for p in outcome.written} == {"scorecard.json", "scorecard.md", "scorecard.html"}
    assert card.digest in read_registry(registry).records
    assert (results / "execution_environment.json").exists()  # the audit observes it
    assert card.execution_environment is not None and card.execution_environment_hash is not None
    # The receipt log on disk is evidence too: a record edited to another witness no longer matches it.
    log = next((results / "receipts").glob("*fault:lost*.jsonl"))
    log.write_text(log.read_text().replace('"at":', '"at": 1.0, "was":', 1))
    assert publish(results, registry=registry).proof.reasons == ("evidence_lost",)
