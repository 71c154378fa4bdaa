"""`agentrel protocol freeze` and `agentrel publish` through the real entry point, on synthetic results."""

import fcntl
import json
import os
import sys

import pytest

from agentrel.harness.protocol.canonical import canonical_bytes
from agentrel.harness.protocol.identity import ProtocolIdentity
from agentrel.harness.protocol.registry import read_registry
from agentrel.harness.publication import evidence as evidence_module
from agentrel.harness.publication.evidence import read_evidence
from tests.publication import factory


def run_cli(args, monkeypatch, capsys):
    from agentrel.harness.cli.main import main

    monkeypatch.setattr(sys, "argv", ["agentrel", *map(str, args)])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main()
    got = capsys.readouterr()
    return exited.value.code, got.out, got.err


@pytest.fixture
def registry(tmp_path, monkeypatch):
    path = tmp_path / "registry.jsonl"
    monkeypatch.setenv("AGENTREL_REGISTRY", str(path))
    return path


def test_freeze_then_publish_writes_a_registered_self_contained_scorecard(
    tmp_path, registry, monkeypatch, capsys
):
    m = factory.manifest()
    results = factory.results_dir(tmp_path / "r", m)
    code, out, _ = run_cli(["protocol", "freeze", results, "--by", "alice"], monkeypatch, capsys)
    assert code == 0 and "frozen by alice" in out
    from agentrel.harness.protocol.freeze import freeze_digest, load_freeze
    from agentrel.harness.protocol.identity import identity_of

    freeze = load_freeze(results)
    records = factory.complete_records(m, identity_of(m).protocol_hash, freeze_digest(freeze))
    factory.write_records(results, [dict(r, started_at=freeze.at) for r in records])  # runs after it
    factory.store_dump(results)
    code, out, err = run_cli(["publish", results], monkeypatch, capsys)
    assert code == 0, err
    card = json.loads((results / "scorecard.json").read_bytes())
    assert (results / "scorecard.json").read_bytes() == canonical_bytes(card)
    assert card["proof"]["decision"] == "eligible" and not (results / "evidence_report.json").exists()
    page = (results / "scorecard.html").read_text()
    assert "<style>" in page and not any(
        s in page for s in ("<script", "src=", "http://", "https://", "<link")
    )
    assert "Damage and completion" in (results / "scorecard.md").read_text()
    state = read_registry(registry)
    (digest,) = state.records
    assert f"scorecard {digest}" in out
    assert state.records[digest].registration.protocol_hash == card["protocol_hash"]
    code, _, _ = run_cli(["publish", results], monkeypatch, capsys)  # the same evidence again: one entry
    assert code == 0 and [e.action for e in read_registry(registry).entries] == ["freeze", "register"]


def test_an_ineligible_matrix_writes_only_an_evidence_report_and_exits_1(
    tmp_path, registry, monkeypatch, capsys
):
    results, _, _ = factory.frozen_results(tmp_path / "r", factory.manifest())
    lines = (results / "runs.jsonl").read_text().splitlines(keepends=True)
    (results / "runs.jsonl").write_text("".join(lines[:-2]))
    code, _, err = run_cli(["publish", results, "--out", tmp_path / "out"], monkeypatch, capsys)
    assert code == 1 and err.count("\n") == 1
    assert "not publishable (cell_missing)" in err
    assert (tmp_path / "out" / "evidence_report.json").exists() and (
        tmp_path / "out" / "evidence_report.md"
    ).exists()
    assert not list((tmp_path / "out").glob("scorecard.*")) and not factory.registered(registry)
    doc = json.loads((tmp_path / "out" / "evidence_report.json").read_bytes())
    assert len(doc["missing_cells"]) == 2 and doc["artifacts"]["manifest"].endswith("r/manifest.json")


def test_an_earlier_publication_of_other_evidence_is_set_aside_not_overwritten(tmp_path, registry):
    from agentrel.harness.publication.publish import publish

    results, _, _ = factory.frozen_results(tmp_path / "r", factory.manifest())
    first = publish(results)
    assert first.scorecard is not None
    lines = (results / "runs.jsonl").read_text().splitlines(keepends=True)
    (results / "runs.jsonl").write_text("".join(lines[1:]))
    second = publish(results)
    assert second.report is not None
    kept = results / "previous" / first.scorecard.evidence_root_hash[:16]
    assert sorted(p.name for p in kept.iterdir()) == ["scorecard.html", "scorecard.json", "scorecard.md"]
    assert not list(results.glob("scorecard.*"))


def test_lost_evidence_cannot_publish(tmp_path, registry):
    from agentrel.harness.publication.publish import publish

    results, _, _ = factory.frozen_results(tmp_path / "r", factory.manifest())
    for dump in (results / "dumps").iterdir():
        dump.unlink()
    assert publish(results).proof.reasons == ("evidence_lost",)


def test_publish_waits_for_no_audit_it_refuses_while_one_writes(tmp_path, registry, monkeypatch, capsys):
    results, _, _ = factory.frozen_results(tmp_path / "r", factory.manifest())
    fd = os.open(results / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        code, _, err = run_cli(["publish", results], monkeypatch, capsys)
    finally:
        os.close(fd)
    assert code == 4 and "an audit is writing" in err


def test_protocol_show_says_draft_or_frozen(tmp_path, monkeypatch, capsys):
    results = factory.results_dir(tmp_path / "r", factory.manifest())
    code, out, _ = run_cli(["protocol", "show", results, "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(out)["state"] == "draft"
    run_cli(["protocol", "freeze", results, "--by", "alice"], monkeypatch, capsys)
    code, out, _ = run_cli(["protocol", "show", results], monkeypatch, capsys)
    assert "frozen (by alice" in out and "nothing audited yet" in out
    identity = json.loads(run_cli(["protocol", "show", results, "--json"], monkeypatch, capsys)[1])
    assert identity["recorded_under"] is None
    bound = {k: identity[k] for k in ProtocolIdentity.model_fields}
    (results / "protocol.json").write_text(json.dumps(bound))
    code, out, _ = run_cli(["protocol", "show", results], monkeypatch, capsys)
    assert f"{identity['protocol_hash'][:12]}, as this code gives" in out
    (results / "protocol.json").write_text(json.dumps(dict(bound, evaluator_digest="e" * 64)))
    code, out, _ = run_cli(["protocol", "show", results], monkeypatch, capsys)
    assert "another protocol than this code gives (differs: evaluator_digest)" in out
    code, _, err = run_cli(["protocol", "freeze", tmp_path / "nowhere", "--by", "x"], monkeypatch, capsys)
    assert code == 2 and "no manifest.json" in err


def test_the_parallel_read_equals_the_serial_one_and_skips_a_torn_tail(tmp_path, monkeypatch):
    results, _, _ = factory.frozen_results(tmp_path / "r", factory.manifest(k=8))
    with open(results / "runs.jsonl", "ab") as fh:
        fh.write(b'{"run_id": "torn')
    serial = read_evidence(results / "runs.jsonl", workers=1)
    monkeypatch.setattr(evidence_module, "PARALLEL_MIN_BYTES", 0)
    assert read_evidence(results / "runs.jsonl", workers=3) == serial
    assert len(serial.records) == 64


def test_a_damaged_line_is_named_by_its_number(tmp_path):
    results, _, _ = factory.frozen_results(tmp_path / "r", factory.manifest())
    lines = (results / "runs.jsonl").read_text().splitlines(keepends=True)
    lines[3] = "{not json\n"
    (results / "runs.jsonl").write_text("".join(lines))
    from agentrel.harness.errors import UserError

    with pytest.raises(UserError, match=r"runs.jsonl:4: not a JSON record"):
        read_evidence(results / "runs.jsonl")


def test_an_eligible_fault_matrix_carries_analysis_s_fault_scores_and_its_receipt_logs_count(
    tmp_path, registry
):
    from agentrel.harness.publication.publish import publish

    faults = [{"task": "itsm-hard", "fault_id": "lost-1", "kind": "lost_response"}]
    results, _, _ = factory.frozen_results(tmp_path / "r", factory.manifest(faults=faults))
    outcome = publish(results)
    card = outcome.scorecard
    assert card is not None, outcome.proof.reasons
    assert card.faults is not None and card.faults.complete
    assert {(s.model, s.kind, s.witnessed, s.scheduled) for s in card.faults.scores} == {
        ("scripted/oracle", "lost_response", 3, 3),
        ("scripted/overreach", "lost_response", 3, 3),
    }
    assert "Fault scores" in (results / "scorecard.md").read_text()
    # a receipt log that no longer holds the record's witness: the record was edited, or the log was
    log = sorted((results / "receipts").iterdir())[0]
    log.write_text(log.read_text().replace('"client_timed_out": true', '"client_timed_out": false'))
    assert publish(results).proof.reasons == ("evidence_lost",)
    log.unlink()
    report = publish(results).report
    assert report is not None and "is missing or unreadable" in report.artifact_problems[0]


def test_the_status_line_analyze_can_open_with(tmp_path):
    from agentrel.harness.publication.publish import eligibility_of, status_line

    results, _, _ = factory.frozen_results(tmp_path / "r", factory.manifest())
    assert status_line(eligibility_of(results)).startswith("publishable: frozen protocol")
    (results / "freeze.json").unlink()
    line = status_line(eligibility_of(results))
    assert line.startswith("evidence only") and "freeze_missing" in line and "run_wrong_freeze" in line
    assert not list(results.glob("scorecard.*")) and not list(results.glob("evidence_report.*"))
