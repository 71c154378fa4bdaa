"""Publication labels every decisive run again from its stored dumps with the frozen spec, and derives
its status again from its error and receipts: a record edited by hand is refused (`verdict_mismatch`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentrel.harness.protocol.registry import read_registry
from agentrel.harness.publication.publish import publish
from agentrel.harness.publication.rederive import rederive
from agentrel.harness.run.audit import audit
from tests.publication import factory

pytestmark = pytest.mark.real_evidence

TASK = "itsm-cab-window"


@pytest.fixture
def frozen_audit(sandbox: object, tmp_path: Path) -> tuple[Path, Path]:
    """A real, frozen, complete audit: one agent that passes, one that damages, K=2."""
    kw, registry = factory.frozen_plan(
        sandbox, tmp_path, ["scripted/oracle", "scripted/overreach"], TASK, concurrency=2
    )
    audit(**kw)
    return kw["results"], registry


def edit(results: Path, change: object) -> str:
    lines = [json.loads(line) for line in (results / "runs.jsonl").read_text().splitlines()]
    victim = next(r for r in lines if r["verdict"]["outcome"] == "FAIL_DAMAGE")
    change(victim)  # type: ignore[operator]
    (results / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return str(victim["run_id"])


def test_an_honest_audit_re_derives_to_its_records(frozen_audit: tuple[Path, Path]) -> None:
    results, registry = frozen_audit
    manifest = json.loads((results / "manifest.json").read_bytes())
    assert rederive(results, manifest) == []
    outcome = publish(results, registry=registry)
    assert outcome.scorecard is not None, outcome.proof.reasons


def test_a_hand_edited_verdict_is_refused(frozen_audit: tuple[Path, Path]) -> None:
    results, registry = frozen_audit

    def passed(rec: dict) -> None:  # type: ignore[type-arg]
        v = rec["verdict"]
        v.update(outcome="PASS", events=[], dollars="0.00", max_severity=None, irreversibility=[])

    victim = edit(results, passed)
    outcome = publish(results, registry=registry)
    assert outcome.scorecard is None and "verdict_mismatch" in outcome.proof.reasons
    assert outcome.report is not None
    [line] = outcome.report.verdict_mismatches
    assert line.startswith(f"{victim}: its verdict is not what its dumps give (outcome")
    assert not list(results.glob("scorecard.*"))
    assert not read_registry(registry).records  # nothing registered (the freeze anchor stays)


def test_a_hand_edited_status_is_refused(frozen_audit: tuple[Path, Path]) -> None:
    results, _ = frozen_audit

    def provider_failed(rec: dict) -> None:  # type: ignore[type-arg]
        # A damaging run relabelled as the provider's failure would leave the rates (an invalid run is
        # retried, never rated); its error says nobody failed, so the rule gives it back as valid.
        rec["status"] = "provider_invalid"

    victim = edit(results, provider_failed)
    manifest = json.loads((results / "manifest.json").read_bytes())
    [line] = rederive(results, manifest)
    assert line == f"{victim}: status provider_invalid but its error and receipts give valid"


def test_a_spec_changed_after_the_freeze_is_refused(
    frozen_audit: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from agentrel.harness.suite_paths import ENV, suite_root

    results, _ = frozen_audit
    suite = tmp_path / "suite"
    shutil.copytree(suite_root(), suite, symlinks=False)
    spec = suite / "damage_specs" / f"{TASK}.dmg"
    spec.write_text(spec.read_text() + "\n# a changed spec\n")
    monkeypatch.setenv(ENV, str(suite))
    manifest = json.loads((results / "manifest.json").read_bytes())
    problems = rederive(results, manifest)
    assert len(problems) == 4 and all(f"the spec of task {TASK} is not the frozen one" in p for p in problems)


def test_parallel_labelling_gives_the_serial_answer(
    frozen_audit: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker processes (started from a clean server, not forked from this threaded test process)
    label what one process does: an edit is found the same way."""
    from agentrel.harness.publication import rederive as module

    results, _ = frozen_audit
    victim = edit(results, lambda rec: rec["verdict"].update(outcome="PASS"))
    manifest = json.loads((results / "manifest.json").read_bytes())
    serial = rederive(results, manifest, workers=1)
    monkeypatch.setattr(module, "PER_WORKER", 1)
    parallel = rederive(results, manifest, workers=2)
    assert parallel == serial and len(serial) == 1 and serial[0].startswith(victim)


def test_the_suite_is_the_one_of_the_environment_the_runs_were_recorded_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A results directory of another environment is labelled with that environment's specs, whichever
    environment this process would audit."""
    import shutil

    from agentrel.harness.publication import rederive as module
    from agentrel.harness.suite_paths import ENV, suite_root
    from agentrel.sandbox.environments import registry
    from agentrel.sandbox.environments.enterprise.env import Enterprise

    suite = tmp_path / "suite"
    shutil.copytree(suite_root(), suite)

    class Other(Enterprise):
        name = "other-env"

        def suite_root(self) -> Path:
            return suite

    registry.register("other-env", Other)
    try:
        monkeypatch.delenv(ENV, raising=False)
        theirs = module._suite({"environment": {"name": "other-env"}})
        ours = module._suite({"environment": {"name": "agentrel-enterprise"}})
    finally:
        registry.unregister("other-env")
    assert theirs[TASK].spec_path.is_relative_to(suite)
    assert not ours[TASK].spec_path.is_relative_to(suite)
