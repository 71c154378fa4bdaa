"""A first valid attempt is final. Re-rolling a run (by hand, or through the harness) never replaces it:
analysis keeps the first valid attempt, and publication refuses the run (`attempt_after_valid`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentrel.analysis.attempts import decide
from agentrel.harness.results.reading import RunReading
from tests.publication import factory


def run_cli(args: list[object], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    from agentrel.harness.cli.main import main

    monkeypatch.setattr(sys, "argv", ["agentrel", *map(str, args)])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main()
    got = capsys.readouterr()
    return exited.value.code, got.out, got.err


def damaging_line(results: Path) -> dict[str, object]:
    lines = [json.loads(line) for line in (results / "runs.jsonl").read_text().splitlines()]
    return next(r for r in lines if r["verdict"] and r["verdict"]["outcome"] == "FAIL_DAMAGE")


def test_an_appended_passing_attempt_after_a_damaging_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    results, _, _ = factory.frozen_results(tmp_path / "r", factory.manifest())
    damaged = damaging_line(results)
    # The attack: a copy of the damaging run, re-numbered as attempt 2 and passed.
    reroll = dict(damaged, attempt=2)
    reroll["verdict"] = dict(damaged["verdict"], outcome="PASS", events=[], dollars="0", max_severity=None)  # type: ignore[arg-type]
    reroll["verdict"]["irreversibility"] = []  # type: ignore[index]
    with (results / "runs.jsonl").open("a") as fh:
        fh.write(json.dumps(reroll) + "\n")

    code, _, err = run_cli(["publish", results], monkeypatch, capsys)
    assert code == 1 and err.count("\n") == 1 and "attempt_after_valid" in err
    assert not list(results.glob("scorecard.*"))
    report = json.loads((results / "evidence_report.json").read_bytes())
    assert report["rerolled_runs"] == [damaged["run_id"]]
    # Analysis keeps the first valid attempt: the damage is still counted, the re-roll superseded.
    lines = (results / "runs.jsonl").read_text().splitlines()
    decided = decide([(n, RunReading.model_validate_json(line)) for n, line in enumerate(lines, 1)])
    [run] = [r for r in decided.runs if r.record.run_id == damaged["run_id"]]
    assert run.record.attempt == 1 and run.record.verdict.outcome == "FAIL_DAMAGE"
    assert [(r.run_id, r.attempt) for r, _ in decided.superseded] == [(damaged["run_id"], 2)]


def test_a_retry_after_an_invalid_attempt_is_no_reroll(tmp_path: Path) -> None:
    from agentrel.harness.publication.publish import publish

    m = factory.manifest()
    results, _, _ = factory.frozen_results(tmp_path / "r", m)
    lines = [json.loads(line) for line in (results / "runs.jsonl").read_text().splitlines()]
    # Attempt 1 was the provider's failure, attempt 2 the valid run: the cap allows it, nothing is re-rolled.
    first = dict(lines[0], attempt=1, status="provider_invalid", verdict=None)
    first["error"] = {"kind": "provider", "message": "429"}
    lines[0] = dict(lines[0], attempt=2)
    factory.write_records(results, [first, *lines])
    outcome = publish(results)
    assert "attempt_after_valid" not in outcome.proof.reasons
    assert outcome.scorecard is not None
