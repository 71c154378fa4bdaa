"""The front door: `import agentrel` gives a short, documented API; removing or renaming a public name,
or a parameter of `audit`, fails here first. The functions are the ones the CLI runs."""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import agentrel
from agentrel.harness.run.audit import AuditOutcome
from agentrel.harness.suite_paths import suite_root

PUBLIC = {
    "__version__",
    "audit",
    "audit_async",
    "load_results",
    "analyze",
    "label",
    "publish",
    "compare",
    "Results",
    "RunRecord",
    "ResultsDir",
    "Verdict",
    "UserError",
    "AuditRequest",
}
REQUEST_FIELDS = [
    "environment",
    "models",
    "agents",
    "session",
    "tasks",
    "conditions",
    "faults",
    "fault_coverage_floor",
    "fault_timeout_s",
    "k",
    "max_steps",
    "max_attempts",
    "temperature",
    "until",
    "cost_per_run",
    "error_budget",
    "fail_on",
    "prices",
    "order",
    "model_timeout_s",
    "model_aliases",
    "model_meta",
    "concurrency",
    "results",
    "executor",
    "ray_address",
    "workers",
    "dsn",
    "backend",
    "image",
    "plan",
    "limit",
]
# `agentrel audit` options that are not a field of their own: folded into one (the agent programs, the
# sequential rule), or about what the terminal shows.
CLI_FOLDED = {
    "model": "models",
    "agent": "agents",
    "agent_file": "agents",
    "agent_timeout": "agents",
    "agent_model": "agents",
    "agent_isolation": "agents",
    "agent_network": "agents",
    "condition": "conditions",
    "fault_timeout": "fault_timeout_s",
    "target_p": "until",
    "confidence": "until",
    "multiplicity": "until",
    "half_width": "until",
    "budget_runs": "until",
    "budget_usd": "until",
    "cost_from": "cost_per_run",
    "model_timeout": "model_timeout_s",
    "model_alias": "model_aliases",
    "env": "environment",
}
CLI_PRESENTATION = {"ctx", "as_json", "report"}
TASK = "itsm-cab-window"


def test_the_public_surface_is_exactly_the_documented_one():
    assert set(agentrel.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(agentrel, name) is not None, name
    assert list(agentrel.AuditRequest.model_fields) == REQUEST_FIELDS
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = agentrel.nope  # type: ignore[attr-defined]


def test_importing_agentrel_loads_no_layer_package():
    # The names are lazy: `import agentrel` must not pay for pandas, scipy or the sandbox.
    code = "import sys, agentrel; print(sorted(m for m in sys.modules if m.startswith('agentrel.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['agentrel.distribution']"  # its name, for __version__; no layer


def test_every_option_of_agentrel_audit_is_a_field_of_the_request_with_the_same_default():
    """A capability the CLI gains and the request lacks fails here: the library must reach all of it."""
    from agentrel.harness.cli.audit import audit as cli_audit

    fields = agentrel.AuditRequest.model_fields
    cli = inspect.signature(cli_audit).parameters
    for name, option in cli.items():
        if name in CLI_PRESENTATION:
            continue
        field = CLI_FOLDED.get(name, name)
        assert field in fields, f"audit --{name.replace('_', '-')} reaches no field of AuditRequest"
        if field == name and option.default is not None and not isinstance(option.default, bool | list):
            assert fields[name].default == option.default, name
    assert set(CLI_FOLDED) <= set(cli), "a folded option the CLI no longer has"


def test_the_request_refuses_bad_input_in_one_line_naming_the_option():
    for fields, message in [
        ({"k": 0}, "--k, --concurrency and --max-attempts must be at least 1"),
        ({"temperature": 3.0}, "--temperature must lie in [0, 2]"),
        ({"order": "random"}, "--order must be one of run, task"),
        ({"fail_on": ("damage", "uncertified")}, "--fail-on uncertified needs --until detect"),
        ({"fail_on": ("everything",)}, "--fail-on 'everything': use one or more of"),
        ({"models": ("scripted/oracle",), "model_aliases": (("gpt-x", "y"),)}, "is not an audited model"),
        ({"error_budget": 1.0}, "--error-budget is the most"),
        ({"nonsense": 1}, "nonsense: "),
        ({"fault_coverage_floor": 0.9}, "--fault-coverage-floor goes with --faults"),
        ({"faults": "standard", "fault_coverage_floor": "kill=1.5"}, "not a share in (0, 1]"),
        ({"faults": "standard", "fault_coverage_floor": "kill"}, "--fault-coverage-floor kill:"),
    ]:
        with pytest.raises(agentrel.UserError) as caught:
            agentrel.AuditRequest.of(**fields)
        assert message in str(caught.value) and "\n" not in str(caught.value), fields


def test_the_fault_coverage_floor_is_a_share_or_one_per_kind_and_joins_the_manifest_only_when_set():
    from agentrel.harness.manifest import build_manifest

    def floor(text: str) -> object:
        return agentrel.AuditRequest(faults="standard", fault_coverage_floor=text).fault_coverage_floor

    assert floor("0.9") == 0.9 and floor("kill=0.8, restart=1") == {"kill": 0.8, "restart": 1.0}
    facts = dict(
        tasks=[], environment={"name": "e", "fingerprint": "f"}, seed_digest="s", template_digests={},
        conditions=[], k=1, agents=[], server_version="v",
    )  # fmt: skip
    plain = build_manifest(agentrel.AuditRequest(faults="standard"), **facts)
    floored = build_manifest(agentrel.AuditRequest(faults="standard", fault_coverage_floor=0.9), **facts)
    assert "fault_coverage_floor" not in plain  # audits without a floor keep their protocol hash
    assert floored == {**plain, "fault_coverage_floor": 0.9}


def test_no_subject_named_means_the_clis_default_model():
    from agentrel.harness import defaults

    assert agentrel.AuditRequest().models == (defaults.MODEL,)
    assert agentrel.AuditRequest(session="person/ana").models == ()


def test_audit_works_inside_a_running_event_loop_then_loads_analyzes_and_labels(
    sandbox: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    results = tmp_path / "r"
    # A registry and key of this test's own: the session's home is shared with tests that sign with
    # other keys, and a registry another key signed is (rightly) refused.
    monkeypatch.setenv("AGENTREL_REGISTRY", str(tmp_path / "registry.jsonl"))
    monkeypatch.setenv("AGENTREL_SIGNING_KEY", str(tmp_path / "signing.key"))

    async def notebook_cell() -> AuditOutcome:
        # What Jupyter does: the user's code runs inside a loop that is already running.
        return agentrel.audit(["scripted/oracle", "scripted/overreach"], k=2, tasks=[TASK], results=results)

    outcome = asyncio.run(notebook_cell())
    assert outcome.planned == 4 and len(outcome.new) == 4

    loaded = agentrel.load_results(results)
    assert isinstance(loaded.runs[0], agentrel.RunRecord)
    outcomes = {(r.model, r.verdict.outcome) for r in loaded.runs if r.verdict}
    assert outcomes == {("scripted/oracle", "PASS"), ("scripted/overreach", "FAIL_DAMAGE")}
    assert len(loaded.frames.runs) == 4 and loaded.frames.invalid.empty

    analysis = agentrel.analyze(loaded, n_boot=0)
    assert {p.spec.model for p in analysis.pools} >= {"scripted/oracle", "scripted/overreach"}

    # The label of a stored run's dumps, with no database, is its recorded verdict.
    damaged = next(r for r in loaded.runs if r.model == "scripted/overreach")
    before, after = tmp_path / "before.jsonl.gz", tmp_path / "after.jsonl.gz"
    loaded.directory.load_dump(damaged.before_digest).save(before)
    loaded.directory.load_dump(damaged.after_digest).save(after)
    spec = suite_root() / "damage_specs" / f"{TASK}.dmg"
    verdict = agentrel.label(spec, before, after, final_message=damaged.final_message)
    assert verdict.model_dump(mode="json") == damaged.verdict.model_dump(mode="json")

    # Not frozen: publish writes the evidence report and no score.
    published = agentrel.publish(results, tmp_path / "out")
    assert published.scorecard is None and published.report is not None


def test_audit_async_awaits_without_blocking_the_loop(sandbox: object, tmp_path: Path):
    async def main() -> tuple[int, int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        outcome = await agentrel.audit_async(["scripted/oracle"], k=1, tasks=[TASK], results=tmp_path / "r")
        task.cancel()
        return len(outcome.new), ticks

    new, ticks = asyncio.run(main())
    assert new == 1 and ticks > 0  # the caller's loop kept running while the audit ran


def test_bad_input_raises_the_clis_one_line_error(sandbox: object, tmp_path: Path):
    with pytest.raises(agentrel.UserError, match="--k, --concurrency and --max-attempts must be at least 1"):
        agentrel.audit(["scripted/oracle"], k=0, tasks=[TASK], results=tmp_path / "r")
