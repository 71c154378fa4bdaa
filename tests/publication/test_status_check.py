"""`analyze`'s status check (publication/validate.py) loads only what deciding needs, and holds the cyclic
collector only while it validates: the speed-ups of bench/analysis_scale.py, kept honest. What it refuses
is the publication tests' (test_publish.py, test_attacks_evidence.py, test_claims.py, ...), which run
through the same `validate`."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from agentrel.harness.errors import UserError
from agentrel.harness.publication import publish, validate
from tests.publication import factory

NOT_FOR_DECIDING = (
    "agentrel.harness.publication.scorecard",
    "agentrel.harness.publication.render",
    "agentrel.analysis.claims_judge",
    "agentrel.analysis.betabinom",
    "agentrel.analysis.error_budget",
    "scipy.stats",
    "matplotlib",
)


def test_the_check_imports_no_scorecard_rendering_or_estimator():
    code = (
        "import sys; import agentrel.harness.publication.validate; "
        f"print(sorted(m for m in {NOT_FOR_DECIDING!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_publish_validates_through_the_same_function():
    """One validator: publish's proof and the status line's are the same code, not two copies."""
    assert publish.validate is validate.validate
    assert publish.eligibility_of is validate.eligibility_of and publish.status_line is validate.status_line


def test_the_collector_is_given_back_even_when_validation_fails(tmp_path):
    """A results directory without a manifest is refused; the collector is enabled again afterwards."""
    assert gc.isenabled()
    with pytest.raises(UserError, match=r"no manifest\.json"):
        validate.eligibility_of(tmp_path)
    assert gc.isenabled()


# -- end to end: `agentrel analyze`'s line, from its second process, on a real frozen audit -------------


@pytest.fixture
def frozen_audit(sandbox, tmp_path, monkeypatch):
    """A real, frozen, complete audit (a damaging agent, K=2) whose registry analyze's check trusts."""
    from agentrel.harness.run.audit import audit

    kw, registry = factory.frozen_plan(sandbox, tmp_path, ["scripted/overreach"], "itsm-cab-window")
    audit(**kw)
    monkeypatch.setenv("AGENTREL_REGISTRY", str(registry))
    return kw["results"]


def _status(results, monkeypatch, capsys) -> str:
    from tests.publication.test_compare import run_cli

    args = ["analyze", str(results), "--out", str(results.parent / "report"), "--no-figures"]
    code, _, err = run_cli([*args, "--bootstrap", "20"], monkeypatch, capsys)
    assert code == 0, err
    (line,) = [x for x in err.splitlines() if x.startswith("agentrel: ")]
    return line


@pytest.mark.real_evidence
def test_analyze_says_a_hand_edited_verdict_or_an_orphan_is_not_publishable(
    frozen_audit, monkeypatch, capsys
):
    """The attacks the faster check must still see, through analyze's own second process: a damaging
    verdict edited to a clean pass (re-derived from the dumps: verdict_mismatch), then, restored, a
    transcript of a run no record names (orphan_evidence)."""
    import json

    results = frozen_audit
    assert _status(results, monkeypatch, capsys).startswith("agentrel: publishable: frozen protocol")
    runs = results / "runs.jsonl"
    honest = runs.read_bytes()
    lines = [json.loads(x) for x in honest.splitlines()]
    victim = next(r for r in lines if r["verdict"]["outcome"] == "FAIL_DAMAGE")
    victim["verdict"].update(outcome="PASS", events=[], dollars="0.00", max_severity=None, irreversibility=[])
    victim["verdict"].update(sub_label="completed_mutated")
    runs.write_text("".join(json.dumps(r) + "\n" for r in lines))
    line = _status(results, monkeypatch, capsys)
    assert "not publishable" in line and "verdict_mismatch" in line, line
    runs.write_bytes(honest)
    (results / "transcripts" / "gone__run__clean__0009.json").write_text("{}")
    line = _status(results, monkeypatch, capsys)
    assert "not publishable" in line and "orphan_evidence" in line, line


def _owners_records(results) -> None:
    """Two runs as the harness writes them (the owner's writer, `record_line`), beside a manifest."""
    import json

    from agentrel.harness.results.directory import record_line
    from agentrel.harness.results.record import RunRecord

    results.mkdir()
    (results / "manifest.json").write_text(
        json.dumps({"tasks": [{"id": "t"}], "conditions": [{"name": "c"}]})
    )
    verdict = {
        "outcome": "PASS",
        "sub_label": "completed_clean",
        "inconsistent": False,
        "mutated": False,
        "changes": 0,
        "events": [],
        "max_severity": None,
        "dollars": "0.00",
        "irreversibility": [],
        "requirements": [],
    }
    lines = [
        record_line(
            RunRecord.model_validate(
                {
                    "run_id": f"r{i}",
                    "model": "m",
                    "agent_kind": "scripted",
                    "task": "t",
                    "condition": "c",
                    "run_index": i,
                    "seed": "0" * 16,
                    "protocol_hash": "p" * 64,
                    "verdict": verdict,
                    "before_digest": "e" * 64,
                    "after_digest": "f" * 64,
                    "started_at": "2026-12-01T10:00:00Z",
                }
            )
        )
        for i in (1, 2)
    ]
    (results / "runs.jsonl").write_text("".join(lines))


def _refused_line(results, edit) -> str:
    from agentrel.harness.cli.analyze import publication_status

    runs = results / "runs.jsonl"
    runs.write_bytes(edit(runs.read_bytes()))
    return publication_status(results, 1)


def _float_dollars(data: bytes) -> bytes:
    """A verdict's dollars written as the JSON number 0.0: the evidence reader's canonical value makes it
    the integer 0, which the owner's `Money` would take; the owner's model refuses the float."""
    first, rest = data.split(b"\n", 1)
    assert b'"dollars": "0.00",' in first
    return first.replace(b'"dollars": "0.00",', b'"dollars": 0.0,', 1) + b"\n" + rest


def _blank_line(data: bytes) -> bytes:
    """An empty line between records: the evidence reader passes over it; re-derivation refuses it."""
    first, rest = data.split(b"\n", 1)
    return first + b"\n\n" + rest


def _unchanged(data: bytes) -> bytes:
    return data


@pytest.mark.real_evidence
@pytest.mark.parametrize(
    ("edit", "lineno"),
    [(_float_dollars, 1), (_blank_line, 2), (_unchanged, None)],
    ids=["float_dollars", "blank_line", "unchanged"],
)
def test_a_record_the_owners_model_refuses_is_never_validated(tmp_path, edit, lineno):
    """Re-derivation parses every line with the owner's model itself, from the bytes on disk: what the
    evidence reader's tolerant (and float-normalizing) parse accepts is no licence. A shared parse must
    keep this test passing. (Unchanged, the same lines are read: not publishable for other reasons.)"""
    results = tmp_path / "r"
    _owners_records(results)
    line = _refused_line(results, edit)
    assert line.startswith("evidence only, not publishable ("), line
    if lineno is None:
        assert "cannot validate" not in line and "freeze_missing" in line, line
    else:
        assert line.startswith("evidence only, not publishable (cannot validate: "), line
        assert f"runs.jsonl:{lineno}: not a run record" in line, line
