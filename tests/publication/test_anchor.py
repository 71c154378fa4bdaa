"""The freeze is anchored outside the results directory: a signed freeze entry in the registry, made before
any run. The attack it stops: delete freeze.json, drop the damaging cells from manifest.json, freeze
again, rewrite every record's protocol_hash / frozen_by / started_at, publish."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentrel.harness.protocol.canonical import canonical_bytes
from agentrel.harness.protocol.freeze import (
    freeze_digest,
    load_freeze,
    make_freeze,
    write_freeze,
)
from agentrel.harness.protocol.identity import identity_of
from agentrel.harness.protocol.registry import RegistryEntry, read_registry
from agentrel.harness.publication.anchor import anchor_reasons
from agentrel.harness.publication.evidence import evidence_from_records
from agentrel.harness.results import layout
from tests.publication import factory


def run_cli(args, monkeypatch, capsys) -> tuple[int, str, str]:
    from agentrel.harness.cli.main import main

    monkeypatch.setattr(sys, "argv", ["agentrel", *map(str, args)])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main()
    got = capsys.readouterr()
    return int(exited.value.code or 0), got.out, got.err


def _records(results: Path) -> list[dict]:
    return [json.loads(line) for line in (results / "runs.jsonl").read_text().splitlines()]


def _refused(results: Path, out: Path, registry: Path, code_fragment: str, monkeypatch, capsys) -> None:
    code, _, err = run_cli(["publish", results, "--out", out], monkeypatch, capsys)
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"not publishable ({code_fragment})" in err, err
    assert not list(out.glob("scorecard.*")) and not factory.registered(registry)


def _refreeze_without_damage(
    results: Path, monkeypatch, capsys, *, hide_runs: bool, backdate: bool = False
) -> dict:
    """The attack up to the rewrite: freeze.json deleted, the damaging task dropped from the manifest
    (and its runs from runs.jsonl), frozen again through the CLI (runs.jsonl moved aside if asked), or
    through the library with freeze.json's time set back to before the runs (`backdate`)."""
    m = json.loads((results / "manifest.json").read_bytes())
    damaging = {
        r["task"] for r in _records(results) if r["verdict"] and r["verdict"]["outcome"] == "FAIL_DAMAGE"
    }
    assert damaging == {"itsm-hard"}
    (results / layout.FREEZE).unlink()
    m["tasks"] = [t for t in m["tasks"] if t["id"] not in damaging]
    (results / "manifest.json").write_text(json.dumps(m))
    kept = [r for r in _records(results) if r["task"] not in damaging]
    factory.write_records(results, kept)
    aside = results.with_name("runs-aside.jsonl")
    if hide_runs:
        (results / "runs.jsonl").rename(aside)
    if backdate:
        write_freeze(results, "mallory", now=factory.FROZEN_AT)
    else:
        code, out, err = run_cli(["protocol", "freeze", results, "--by", "mallory"], monkeypatch, capsys)
        assert code == 0 and "freeze anchored" in out, err
    if hide_runs:
        aside.rename(results / "runs.jsonl")
    return m


def test_a_freeze_remade_over_recorded_runs_is_refused(tmp_path, default_registry, monkeypatch, capsys):
    results, _, _ = factory.frozen_results(tmp_path / "r", factory.manifest())
    m = _refreeze_without_damage(results, monkeypatch, capsys, hide_runs=False)
    freeze = load_freeze(results)
    assert freeze is not None
    rewritten = [
        dict(r, protocol_hash=identity_of(m).protocol_hash, frozen_by=freeze_digest(freeze),
             started_at=factory.after_freeze())
        for r in _records(results)
    ]  # fmt: skip
    factory.write_records(results, rewritten)
    # Every check inside the directory passes now; only the registry remembers the runs came first.
    anchors = read_registry(default_registry).freezes
    assert anchors[freeze_digest(freeze)].runs_before == len(rewritten) == 12
    _refused(results, tmp_path / "out", default_registry, "freeze_after_runs", monkeypatch, capsys)


def test_runs_hidden_while_refreezing_still_started_before_the_anchor(
    tmp_path, default_registry, monkeypatch, capsys
):
    """runs.jsonl moved aside while freezing again, so the anchor finds no run, and freeze.json backdated
    so the runs follow it: the runs' start times still precede the anchor's. (Rewriting those too, past
    the new anchor, is what only a key holder can do: see docs/explanation/trust.md.)"""
    m = factory.manifest()
    results = factory.results_dir(tmp_path / "r", m)
    freeze, _ = write_freeze(results, "tester", now=factory.FROZEN_AT)
    records = factory.complete_records(
        m, identity_of(m).protocol_hash, freeze_digest(freeze), "2026-01-02T09:30:00Z"
    )
    factory.write_records(results, records)  # runs of January
    factory.store_dump(results)
    m = _refreeze_without_damage(results, monkeypatch, capsys, hide_runs=True, backdate=True)
    freeze = load_freeze(results)
    assert freeze is not None and freeze.at == "2026-01-02T09:00:00Z"
    rewritten = [
        dict(r, protocol_hash=identity_of(m).protocol_hash, frozen_by=freeze_digest(freeze),
             started_at="2026-01-02T09:30:00Z")
        for r in _records(results)
    ]  # fmt: skip
    factory.write_records(results, rewritten)
    assert read_registry(default_registry).freezes[freeze_digest(freeze)].runs_before == 0
    _refused(results, tmp_path / "out", default_registry, "freeze_after_runs", monkeypatch, capsys)


def test_a_freeze_json_no_registry_entry_anchors_is_refused(tmp_path, default_registry, monkeypatch, capsys):
    m = factory.manifest()
    results = factory.results_dir(tmp_path / "r", m)
    freeze = make_freeze(identity_of(m), "mallory", factory.FROZEN_AT)  # written by hand, never anchored
    (results / layout.FREEZE).write_bytes(canonical_bytes(freeze.model_dump(mode="json")))
    records = factory.complete_records(
        m, identity_of(m).protocol_hash, freeze_digest(freeze), factory.after_freeze()
    )
    factory.write_records(results, records)
    factory.store_dump(results)
    _refused(results, tmp_path / "out", default_registry, "freeze_unanchored", monkeypatch, capsys)
    # Anchoring it now (`protocol freeze` on the frozen directory) finds the runs there: still refused.
    code, _, err = run_cli(["protocol", "freeze", results, "--by", "mallory"], monkeypatch, capsys)
    assert code == 0, err
    _refused(results, tmp_path / "out", default_registry, "freeze_after_runs", monkeypatch, capsys)


def _entry(freeze, at: str, runs_before: int = 0, **kw) -> RegistryEntry:
    fields = dict(
        seq=0, prev="0" * 64, action="freeze", digest=freeze_digest(freeze), at=at,
        protocol_hash=freeze.protocol_hash, matrix_hash=freeze.matrix_hash, runs_before=runs_before,
        key="1" * 64, sig="2" * 128,
    )  # fmt: skip
    return RegistryEntry.model_validate({**fields, **kw})


def test_the_anchor_rule_as_known_answers():
    m = factory.manifest(tasks=("itsm-easy",), conditions=("clean",), k=1)
    ident = identity_of(m)
    freeze = make_freeze(ident, "tester", factory.FROZEN_AT)
    records = factory.complete_records(m, ident.protocol_hash, freeze_digest(freeze), "2026-03-01T10:00:00Z")
    facts = evidence_from_records(records).records
    anchors = {freeze_digest(freeze): _entry(freeze, "2026-03-01T10:00:00.900000+00:00")}
    assert anchor_reasons(freeze, anchors, facts) == {}  # the same second: at the records' resolution
    anchors = {freeze_digest(freeze): _entry(freeze, "2026-03-01T10:00:01+00:00")}
    assert anchor_reasons(freeze, anchors, facts) == {"freeze_after_runs": 2}
    anchors = {freeze_digest(freeze): _entry(freeze, "2026-03-01T09:00:00+00:00", runs_before=5)}
    assert anchor_reasons(freeze, anchors, facts) == {"freeze_after_runs": 5}
    anchors = {freeze_digest(freeze): _entry(freeze, "2026-03-01T09:00:00+00:00", matrix_hash="3" * 64)}
    assert anchor_reasons(freeze, anchors, facts) == {"freeze_anchor_mismatch": 1}
    assert anchor_reasons(freeze, {}, facts) == {"freeze_unanchored": 1}
    assert anchor_reasons(None, {}, facts) == {}  # no freeze at all is freeze_missing's to say
