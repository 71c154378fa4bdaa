"""The two report types: a scorecard only on an eligible proof, an evidence report with no number that
could be quoted as a score; their shipped schemas equal the models'."""

import json
import re

import pytest

from agentrel.harness.protocol.freeze import freeze_digest, make_freeze
from agentrel.harness.protocol.identity import identity_of
from agentrel.harness.protocol.policy import load_policy
from agentrel.harness.publication.eligibility import validate
from agentrel.harness.publication.evidence import evidence_from_records
from agentrel.harness.publication.evidence_report import IncompleteEvidenceReport
from agentrel.harness.publication.publish import publish
from agentrel.harness.publication.schemas import SCHEMA_DIR, generated
from agentrel.harness.publication.scorecard import PublishableScorecard
from tests.publication import factory

POLICY = load_policy()
BANNED = re.compile(r"rate|score|rank|percentile|bound", re.IGNORECASE)


def eligible():
    m = factory.manifest()
    ident = identity_of(m)
    freeze = make_freeze(ident, "tester", factory.FROZEN_AT)
    records = factory.complete_records(m, ident.protocol_hash, freeze_digest(freeze))
    evidence = evidence_from_records(records)
    return m, evidence, validate(m, freeze, evidence, POLICY)


def test_a_scorecard_is_built_from_an_eligible_proof_and_carries_its_hash():
    m, evidence, proof = eligible()
    card = PublishableScorecard.from_proof(proof, evidence, m, POLICY)
    assert card.proof_hash == proof.digest and card.evidence_root_hash == evidence.root
    again = PublishableScorecard.model_validate_json(card.model_dump_json())
    assert again == card and again.digest == card.digest
    hard = {(g.model, g.condition): g.damage for g in card.groups}
    assert (hard["scripted/overreach", "clean"].x, hard["scripted/overreach", "clean"].n) == (2, 6)
    assert (
        0 <= hard["scripted/overreach", "clean"].ci_low < 2 / 6 < hard["scripted/overreach", "clean"].ci_high
    )
    key = card.runs[0].run_key
    assert (key.task, key.condition, key.fault, key.run_index) == ("itsm-easy", "clean", None, 1)


def test_a_scorecard_cannot_be_built_without_a_valid_eligible_proof():
    m, evidence, proof = eligible()
    card = PublishableScorecard.from_proof(proof, evidence, m, POLICY).model_dump(mode="json")
    ineligible = {
        **card["proof"],
        "decision": "ineligible",
        "reasons": ["cell_missing"],
        "reason_counts": {"cell_missing": 1},
    }
    for forged, why in (
        ({**card, "proof": ineligible}, "eligible proof"),
        ({**card, "proof_hash": "0" * 64}, "proof_hash"),
        ({**card, "matrix_hash": "0" * 64}, "matrix_hash"),
        ({**card, "runs": card["runs"][1:]}, "every registered cell"),
        ({**card, "proof": {**card["proof"], "decision": "ineligible"}}, "exactly when"),
    ):
        with pytest.raises(ValueError, match=why):
            PublishableScorecard.model_validate(forged)
    with pytest.raises(ValueError, match="not the evidence"):
        PublishableScorecard.from_proof(proof, evidence_from_records([]), m, POLICY)
    with pytest.raises(ValueError, match="not the ones"):
        PublishableScorecard.from_proof(proof, evidence, {**m, "k": 4}, POLICY)


def _fields(schema, defs=None):
    """Every property name and every leaf type in a JSON schema, through its $defs."""
    defs = schema.get("$defs", {}) if defs is None else defs
    names, types = set(), set()
    stack, seen = [schema], set()
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if ref and ref not in seen:
                seen.add(ref)
                stack.append(defs[ref.rsplit("/", 1)[-1]])
            names |= set(node.get("properties", {}))
            if isinstance(node.get("type"), str):
                types.add(node["type"])
            stack.extend(v for k, v in node.items() if k != "$defs")
        elif isinstance(node, list):
            stack.extend(node)
    return names, types


def test_the_evidence_report_schema_has_no_score_field_and_no_number():
    names, types = _fields(IncompleteEvidenceReport.model_json_schema())
    assert {
        "missing_cells",
        "coverage",
        "attempt_history",
        "reasons",
        "artifacts",
        "evidence_root_hash",
    } <= names
    assert not [n for n in names if BANNED.search(n)]
    assert "number" not in types
    card_names, card_types = _fields(PublishableScorecard.model_json_schema())
    assert "number" in card_types and "damage" in card_names  # the walk does find them where they are


def test_the_shipped_schemas_are_the_generated_ones():
    shipped = {p.name: p.read_bytes() for p in SCHEMA_DIR.glob("*.json")}
    assert shipped == generated(), "run `python -m harness.publication.schemas` after changing a model"


def _walk(value):
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)
    else:
        yield value


def test_twelve_of_twenty_witnessed_is_an_evidence_report_with_no_number_in_it(tmp_path):
    faults = [{"task": "itsm-hard", "fault_id": "kill-1", "kind": "lost_response"}]
    m = factory.manifest(
        models=("scripted/oracle",), tasks=("itsm-hard",), conditions=("clean",), k=20, faults=faults
    )
    results, _, frozen = factory.frozen_results(tmp_path / "r", m, registry=tmp_path / "registry.jsonl")
    protocol = identity_of(m).protocol_hash
    records = [json.loads(line) for line in (results / "runs.jsonl").read_text().splitlines()]
    noop = 0
    for i, r in enumerate(records):
        if r["fault"] and r["run_index"] > 12:
            cell = factory.Cell(r["model"], r["task"], r["condition"], r["fault"]["fault_id"], r["run_index"])
            records[i] = factory.record(
                cell,
                protocol,
                frozen,
                status="invalid_injection",
                landed=False,
                started_at=factory.after_freeze(),
            )
            noop += 1
    assert noop == 8
    factory.write_records(results, records)
    outcome = publish(results, registry=tmp_path / "registry.jsonl")
    assert outcome.scorecard is None and not list(results.glob("scorecard.*"))
    assert not factory.registered(tmp_path / "registry.jsonl")
    doc = json.loads((results / "evidence_report.json").read_bytes())
    fault = next(s for s in doc["coverage"] if s["fault_kind"] == "lost_response")
    assert (fault["registered"], fault["witnessed"], fault["invalid"]) == (20, 12, 8)
    assert {"fault_unwitnessed", "run_invalid:invalid_injection"} == set(doc["proof"]["reasons"])
    leaves = list(_walk(doc))
    assert not [v for v in leaves if isinstance(v, float)]
    markdown = (results / "evidence_report.md").read_text()
    assert not re.search(r"\d\.\d|%", markdown.replace("agentrel-", ""))
    IncompleteEvidenceReport.model_validate(doc)
