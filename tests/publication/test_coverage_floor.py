"""The frozen fault-coverage floor (issue 34, item 2; seed 003): a fault stratum whose witnessed share is
below the manifest's floor is reported and not published; one at or above a floor below 1 publishes,
its unwitnessed runs in no rate and listed beside, never counted safe. The attacks: an unwitnessed run
hidden under a floor when it failed for another reason, or when it damaged; a floor that is no share."""

from __future__ import annotations

import pytest

from agentrel.analysis.fault_coverage import below_floor, read_floor
from agentrel.harness.protocol.freeze import freeze_digest, write_freeze
from agentrel.harness.protocol.identity import identity_of
from agentrel.harness.publication.cells import registered_cells
from agentrel.harness.publication.publish import publish
from tests.publication import factory

FAULTS = [{"task": "itsm-hard", "fault_id": "lost-1", "kind": "lost_response"}]
STRATUM = "fault:lost-1/lost_response/itsm-hard"


@pytest.fixture
def registry(tmp_path, monkeypatch):
    path = tmp_path / "registry.jsonl"
    monkeypatch.setenv("AGENTREL_REGISTRY", str(path))
    return path


def audited(path, floor=None, broken=None):
    """A frozen, complete matrix (2 agents x 2 tasks x clean, k = 3, one lost-response fault cell on
    itsm-hard: 6 fault runs), with the fault runs named in `broken` ({(model, index): how}) failing."""
    m = factory.manifest(faults=FAULTS, conditions=("clean",))
    if floor is not None:
        m["fault_coverage_floor"] = floor
    factory.results_dir(path, m)
    freeze, _ = write_freeze(path, "tester", now=factory.FROZEN_AT)
    protocol, frozen, at = identity_of(m).protocol_hash, freeze_digest(freeze), factory.after_freeze()
    records = []
    for cell in registered_cells(m).cells:
        how = (broken or {}).get((cell.model, cell.run_index)) if cell.fault else None
        if how == "not_landed":
            rec = factory.record(
                cell, protocol, frozen, started_at=at, status="invalid_injection", landed=False
            )
        elif how == "not_exposed":
            rec = factory.record(cell, protocol, frozen, started_at=at, status="not_exposed")
        elif how == "not_exposed_damaging":
            rec = factory.record(
                cell, protocol, frozen, started_at=at, status="not_exposed", outcome="FAIL_DAMAGE"
            )
        elif how == "provider":
            rec = factory.record(
                cell, protocol, frozen, started_at=at, status="provider_invalid", landed=False
            )
        else:
            rec = factory.record(cell, protocol, frozen, outcome=factory.outcome_of(cell), started_at=at)
        records.append(rec)
    factory.write_records(path, records)
    factory.store_dump(path)
    return path


@pytest.mark.parametrize(
    ("witnessed", "scheduled", "floor", "below"),
    [(9, 10, 0.9, False), (8, 10, 0.9, True), (5, 6, 0.8, False), (4, 6, 0.8, True), (6, 6, 1.0, False)],
)
def test_the_floor_in_exact_rationals(witnessed, scheduled, floor, below):
    assert below_floor(witnessed, scheduled, floor) is below


@pytest.mark.parametrize("raw", [0, 1.5, -0.2, "most", True, {"kill": 2}])
def test_a_floor_that_is_no_share_is_refused(raw):
    with pytest.raises(ValueError):
        read_floor(raw)


def test_without_a_floor_every_fault_run_must_be_witnessed(tmp_path, registry):
    out = publish(audited(tmp_path / "r", broken={("scripted/oracle", 2): "not_landed"}))
    assert out.scorecard is None
    assert set(out.proof.reasons) == {"fault_unwitnessed", "run_invalid:invalid_injection"}


def test_a_stratum_at_the_floor_publishes_its_unwitnessed_runs_beside_every_rate(tmp_path, registry):
    broken = {("scripted/oracle", 2): "not_landed"}  # 5 of 6 witnessed = 0.83 >= 0.8
    out = publish(audited(tmp_path / "r", floor=0.8, broken=broken))
    card = out.scorecard
    assert card is not None, out.proof.reasons
    (skipped,) = card.unwitnessed_runs
    assert (skipped.model, skipped.run_key.condition, skipped.run_key.run_index) == (
        "scripted/oracle",
        "fault:lost-1",
        2,
    )
    assert all((r.model, r.run_key) != (skipped.model, skipped.run_key) for r in card.runs)
    (cell,) = [c for c in card.cells if c.model == "scripted/oracle" and c.fault == "lost-1"]
    assert cell.damage.n == 2 and cell.completion.n == 2  # the unwitnessed run is in no rate
    assert card.faults is not None and not card.faults.complete  # the fault scores are bounds
    assert "Unwitnessed fault runs" in (tmp_path / "r" / "scorecard.md").read_text()
    # A run that never met its trigger is the fault's failure too.
    assert publish(
        audited(tmp_path / "n", floor=0.8, broken={("scripted/oracle", 1): "not_exposed"})
    ).scorecard


def test_a_stratum_below_the_floor_is_reported_not_published(tmp_path, registry):
    broken = {("scripted/oracle", 2): "not_landed", ("scripted/overreach", 3): "not_exposed"}  # 4 of 6
    out = publish(audited(tmp_path / "r", floor=0.8, broken=broken))
    assert out.scorecard is None and out.report is not None
    assert "fault_coverage_below_floor" in out.proof.reasons
    (line,) = out.report.below_coverage_floor
    assert line == f"{STRATUM}: 4 of 6 scheduled fault runs witnessed, below the floor 0.8"
    assert "below the frozen coverage floor" in (tmp_path / "r" / "evidence_report.md").read_text()
    per_kind = publish(audited(tmp_path / "k", floor={"lost_response": 0.9}, broken=broken))
    assert "fault_coverage_below_floor" in per_kind.proof.reasons
    assert per_kind.proof.reason_counts["fault_coverage_below_floor"] == 1


def test_a_floor_never_hides_a_run_that_failed_for_another_reason(tmp_path, registry):
    """The attack: a provider failure on a fault run, passed off as the fault's own failure under a
    generous floor. Only not_exposed and invalid_injection are the fault's; this still holds it back."""
    out = publish(audited(tmp_path / "r", floor=0.5, broken={("scripted/oracle", 2): "provider"}))
    assert out.scorecard is None and "run_invalid:provider_invalid" in out.proof.reasons


def test_a_floor_never_hides_damage(tmp_path, registry):
    """The attack: an agent damages the database before its fault's trigger (not exposed). Leaving the run
    out of the rate would turn a damaging run into a forgotten one: it still holds the matrix back."""
    out = publish(audited(tmp_path / "r", floor=0.5, broken={("scripted/oracle", 2): "not_exposed_damaging"}))
    assert out.scorecard is None and {"fault_unwitnessed", "run_not_exposed"} <= set(out.proof.reasons)


def test_an_unreadable_floor_does_not_publish(tmp_path, registry):
    out = publish(audited(tmp_path / "r", floor="most"))
    assert out.scorecard is None and out.proof.reasons == ("fault_coverage_floor_unreadable",)
    assert "fault_coverage_floor" in out.report.below_coverage_floor[0]


def test_a_measured_run_moved_out_of_the_rates_is_refused(tmp_path, registry):
    """The attack on a published scorecard: move a damaging run into `unwitnessed_runs` (and out of its
    cell's rate). The proof counts exactly one run not landed, so the scorecard no longer validates."""
    import json

    from pydantic import ValidationError

    from agentrel.harness.publication.scorecard import PublishableScorecard

    results = audited(tmp_path / "r", floor=0.8, broken={("scripted/oracle", 2): "not_landed"})
    assert publish(results).scorecard is not None
    card = json.loads((results / "scorecard.json").read_bytes())
    damaging = next(r for r in card["runs"] if r["damaged"])
    card["runs"].remove(damaging)
    card["unwitnessed_runs"].append({"model": damaging["model"], "run_key": damaging["run_key"]})
    with pytest.raises(ValidationError, match="not exposed or not landed"):
        PublishableScorecard.model_validate(card)
