"""Adversarial known answers for the matrix validator: what must never publish, and what must never
change a decision."""

import random

import pytest

from agentrel.harness.protocol.canonical import canonical_hash
from agentrel.harness.protocol.freeze import freeze_digest, make_freeze
from agentrel.harness.protocol.identity import identity_of
from agentrel.harness.protocol.policy import EligibilityRules, Policy, load_policy
from agentrel.harness.publication.cells import Cell, registered_cells
from agentrel.harness.publication.eligibility import validate
from agentrel.harness.publication.evidence import evidence_from_records
from agentrel.harness.publication.scorecard import PublishableScorecard
from tests.publication.factory import FROZEN_AT, complete_records, manifest, record

POLICY = load_policy()
FAULTS = [{"task": "itsm-hard", "fault_id": "lost-1", "kind": "lost_response"}]


def setup(**kw):
    """An eligible matrix: its manifest, freeze, records."""
    m = manifest(**kw)
    ident = identity_of(m, policy=POLICY)
    freeze = make_freeze(ident, "tester", FROZEN_AT)
    return m, freeze, complete_records(m, ident.protocol_hash, freeze_digest(freeze))


def proof(m, freeze, records, policy=POLICY, **kw):
    return validate(m, freeze, records, policy, **kw)


def reasons(*args, **kw):
    return set(proof(*args, **kw).reasons)


def test_a_complete_frozen_matrix_is_eligible():
    m, freeze, records = setup(faults=FAULTS)
    p = proof(m, freeze, records)
    assert p.eligible and p.reasons == () and p.registered_cells == len(records) == 30
    fault = next(s for s in p.strata if s.fault_kind == "lost_response")
    assert (fault.registered, fault.measured, fault.witnessed) == (6, 6, 6)


def test_same_evidence_and_policy_give_the_same_proof_byte_for_byte_in_any_order():
    m, freeze, records = setup(faults=FAULTS)
    retried = record(Cell("scripted/oracle", "itsm-easy", "clean", None, 1), records[0]["protocol_hash"],
                     freeze_digest(freeze), status="provider_invalid")  # fmt: skip
    first = next(i for i, r in enumerate(records) if r["run_id"] == retried["run_id"])
    records[first] = {**records[first], "attempt": 2}
    records.append(retried)
    reference = proof(m, freeze, records).canonical()
    rng = random.Random(13)
    for _ in range(5):
        shuffled = records[:]
        rng.shuffle(shuffled)
        assert proof(m, freeze, shuffled).canonical() == reference
    assert proof(m, freeze, records).eligible


def test_permuting_an_ineligible_matrix_changes_no_decision_either():
    m, freeze, records = setup()
    records = [*records[3:], dict(records[5], status="harness_invalid", verdict=None)]
    reference = proof(m, freeze, records)
    assert not reference.eligible
    assert proof(m, freeze, list(reversed(records))).canonical() == reference.canonical()


def test_one_edited_record_changes_the_evidence_root_and_nothing_else_hides_it():
    m, freeze, records = setup()
    edited = [dict(r) for r in records]
    edited[7]["started_at"] = "2026-01-02T09:30:01Z"
    a, b = proof(m, freeze, records), proof(m, freeze, edited)
    assert a.evidence_root_hash != b.evidence_root_hash
    assert evidence_from_records(list(reversed(records))).root == a.evidence_root_hash


def _invalid_additions(m, freeze, records):
    ph, fz = records[0]["protocol_hash"], freeze_digest(freeze)
    unregistered = Cell("scripted/oracle", "itsm-easy", "clean", None, 99)
    yield [*records, record(unregistered, ph, fz, status="provider_invalid")]
    yield [*records, record(Cell("scripted/intruder", "itsm-easy", "clean", None, 1), ph, fz,
                            status="harness_invalid")]  # fmt: skip
    cell = Cell("scripted/oracle", "itsm-hard", "noisy", None, 2)
    gone = [r for r in records if r["run_id"] != record(cell, ph, fz)["run_id"]]
    yield [*gone, record(cell, ph, fz, status="provider_invalid")]
    yield [*records, dict(record(cell, ph, fz, status="invalid_injection"), attempt=2)]


def test_adding_an_invalid_cell_never_improves_eligibility_or_creates_a_score():
    m, freeze, records = setup()
    rng = random.Random(5)
    for trial in range(6):
        base = records if trial == 0 else rng.sample(records, len(records) - rng.randint(1, 4))
        before = proof(m, freeze, base)
        for more in _invalid_additions(m, freeze, base):
            after = proof(m, freeze, more)
            assert after.eligible <= before.eligible
            if not after.eligible:
                with pytest.raises(ValueError, match="eligible proof"):
                    PublishableScorecard.from_proof(after, evidence_from_records(more), m, POLICY)


def test_a_no_op_witness_cannot_publish():
    m, freeze, records = setup(faults=FAULTS)
    i = next(i for i, r in enumerate(records) if r["fault"])
    cell = Cell(records[i]["model"], "itsm-hard", "fault:lost-1", "lost-1", records[i]["run_index"])
    ph, fz = records[0]["protocol_hash"], freeze_digest(freeze)

    def swap(rec):
        return [*records[:i], rec, *records[i + 1 :]]

    # the harness saw it: invalid_injection
    noop = record(cell, ph, fz, status="invalid_injection", landed=False)
    assert reasons(m, freeze, swap(noop)) == {"fault_unwitnessed", "run_invalid:invalid_injection"}
    # a record that says valid over a no-op's receipts: the recomputed verdict catches it
    assert reasons(m, freeze, swap(record(cell, ph, fz, landed=False))) == {"fault_unwitnessed"}
    # stored verdicts forged to "witnessed" over a witness that shows nothing landed
    forged = record(cell, ph, fz, landed=False)
    forged["fault"] = {**forged["fault"], "verdict": "witnessed", "reasons": []}
    forged["fault"]["witness"] = {**forged["fault"]["witness"], "verdict": "witnessed", "reasons": []}
    assert reasons(m, freeze, swap(forged)) == {"fault_unwitnessed"}
    # the receipts dropped from a record that claims a witnessed fault
    bare = record(cell, ph, fz)
    bare["fault"] = {**bare["fault"], "actuator": None, "witness": None}
    assert reasons(m, freeze, swap(bare)) == {"fault_unwitnessed"}
    # the trigger never reached: not exposed, so never witnessed
    unmet = record(cell, ph, fz, status="not_exposed")
    assert reasons(m, freeze, swap(unmet)) == {"fault_unwitnessed", "run_not_exposed"}


def test_a_missing_hard_task_stratum_cannot_publish():
    m, freeze, records = setup()
    p = proof(m, freeze, [r for r in records if r["task"] != "itsm-hard"])
    assert p.reasons == ("cell_missing",) and p.reason_counts["cell_missing"] == 12
    hard = [s for s in p.strata if s.task == "itsm-hard"]
    assert [(s.registered, s.missing, s.recorded) for s in hard] == [(6, 6, 0), (6, 6, 0)]


def test_a_duplicate_cell_cannot_publish():
    m, freeze, records = setup()
    assert reasons(m, freeze, [*records, records[4]]) == {"cell_duplicate"}
    twin = dict(records[4], run_id=records[4]["run_id"] + "-again")
    assert "cell_duplicate" in reasons(m, freeze, [*records, twin])


def test_a_changed_attempt_budget_cannot_publish():
    m, freeze, records = setup()
    # the cap edited after the freeze: another matrix
    assert {"freeze_matrix_mismatch", "freeze_protocol_mismatch"} <= reasons(
        {**m, "max_attempts": 5}, freeze, records
    )
    # more attempts than the frozen cap allows
    ph, fz = records[0]["protocol_hash"], freeze_digest(freeze)
    cell = Cell("scripted/oracle", "itsm-easy", "noisy", None, 3)
    tries = [record(cell, ph, fz, status="provider_invalid", attempt=a) for a in (1, 2, 3)]
    rest = [r for r in records if r["run_id"] != tries[0]["run_id"]]
    last = record(cell, ph, fz, attempt=4)
    assert reasons(m, freeze, [*rest, *tries, last]) == {"attempt_cap_exceeded"}
    # an attempt dropped from the file: the valid one is number 2
    assert reasons(m, freeze, [*rest, record(cell, ph, fz, attempt=2)]) == {"attempt_gap"}


def test_a_scorer_version_mismatch_cannot_publish():
    m, freeze, records = setup()
    other = "0" * 64
    got = reasons(m, freeze, records, evaluator_digest=other)
    assert {"freeze_evaluator_mismatch", "freeze_protocol_mismatch", "record_protocol_mismatch"} <= got
    assert "freeze_matrix_mismatch" not in got


def test_runs_outside_the_freeze_are_evidence_only():
    m, freeze, records = setup()
    assert reasons(m, None, records) == {"freeze_missing", "run_wrong_freeze"}
    drafts = [dict(r, frozen_by=None) for r in records]
    assert reasons(m, None, drafts) == {"freeze_missing", "run_not_frozen"}
    early = [dict(r, started_at="2026-01-02T08:59:59Z") if i == 0 else r for i, r in enumerate(records)]
    assert reasons(m, freeze, early) == {"run_before_freeze"}
    unfrozen = [dict(r, frozen_by=None) if i < 2 else r for i, r in enumerate(records)]
    assert proof(m, freeze, unfrozen).reason_counts == {"run_not_frozen": 2}
    other = canonical_hash({"another": "freeze"})
    assert reasons(m, freeze, [dict(records[0], frozen_by=other), *records[1:]]) == {"run_wrong_freeze"}


def test_every_invalid_run_is_accounted_for():
    m, freeze, records = setup()
    broken = [
        dict(records[0], status="provider_invalid", verdict=None, error={"kind": "provider", "message": ""})
    ]
    contradictory = [dict(records[1], verdict=dict(records[1]["verdict"], dollars="5.00"))]
    got = proof(m, freeze, broken + contradictory + records[2:])
    assert set(got.reasons) == {"run_invalid:provider_invalid", "run_invalid:record_error"}
    assert got.decisive_statuses == {"provider_invalid": 1, "record_error": 1, "valid": 22}


def test_records_bind_to_the_protocol_root_unless_a_policy_admits_the_manifest_hash():
    m, freeze, records = setup()
    legacy = [dict(r, protocol_hash=identity_of(m).manifest_hash) for r in records]
    assert reasons(m, freeze, legacy) == {"record_protocol_mismatch"}  # the shipped policy
    lenient = Policy(eligibility=EligibilityRules(record_binding="protocol_or_manifest_hash"))
    lenient_freeze = make_freeze(identity_of(m, policy=lenient), "tester", FROZEN_AT)
    legacy = [dict(r, frozen_by=freeze_digest(lenient_freeze)) for r in legacy]
    assert proof(m, lenient_freeze, legacy, policy=lenient).eligible
    other = [dict(r, protocol_hash="e" * 64) for r in legacy]
    assert reasons(m, lenient_freeze, other, policy=lenient) == {"record_protocol_mismatch"}


def test_malformed_records_and_unreadable_schedules_fail_closed():
    m, freeze, records = setup()
    assert reasons(m, freeze, [{k: v for k, v in records[0].items() if k != "seed"}, *records[1:]]) >= {
        "record_malformed"
    }
    bad = {**m, "faults": {"schedule": "somewhere"}}
    assert "matrix_unreadable" in reasons(bad, make_freeze(identity_of(bad), "t", FROZEN_AT), records)


def test_declared_exclusions_leave_the_cell_set():
    m, freeze, records = setup()
    m = {**m, "excluded_cells": [{"task": "itsm-hard", "condition": "noisy", "reason": "cannot be attacked"}]}
    assert len(registered_cells(m).cells) == 18
    kept = [r for r in records if not (r["task"] == "itsm-hard" and r["condition"] == "noisy")]
    freeze = make_freeze(identity_of(m), "t", FROZEN_AT)
    kept = [
        dict(r, frozen_by=freeze_digest(freeze), protocol_hash=identity_of(m).protocol_hash) for r in kept
    ]
    assert proof(m, freeze, kept).eligible
