"""Real third-party agent frameworks from PyPI audited as agent programs (`make test-agents`).

The OpenAI Agents SDK (`openai-agents`, MCPServerStreamableHttp) and Pydantic AI (`pydantic-ai-slim`,
MCPToolset) each run `examples/agents/`'s agent under `audit`, their model a loopback OpenAI-compatible
server that scripts the task's oracle or its damaging counterexample. The recorded verdicts must equal the
in-process scripted agents' for the same script: clean, and under a lost response on the first write,
where the reconcile script passes and the naive one refunds twice.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentrel.harness.agents.external import ExternalSpec
from agentrel.harness.audit import audit
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.results.record import RunRecord
from agentrel.harness.tasks import load_suite
from tests.agents.scripted_model import Recovery, ScriptedModel

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "agents"
TASK = "csm-double-charge"
FRAMEWORKS = {"sdk": "openai_agents_agent.py", "pai": "pydantic_ai_agent.py"}
LOST = """\
name: lost-first-write
faults:
  - {id: lost, kind: lost_response, trigger: {when: first_irreversible_call}}
"""


@pytest.fixture(scope="module")
def task():
    return load_suite(patterns=[TASK])[0]


def agents() -> list[ExternalSpec]:
    return [
        ExternalSpec(name=name, command=[sys.executable, str(EXAMPLES / file)], timeout_s=120)
        for name, file in FRAMEWORKS.items()
    ]


def audit_with(sandbox, tmp_path, monkeypatch, model: ScriptedModel, reference: str, **kw) -> list[RunRecord]:
    monkeypatch.setenv("OPENAI_BASE_URL", model.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-test")
    monkeypatch.setenv("AGENT_MODEL", "gpt-4o-mini")
    results = tmp_path / "results"
    with model:
        audit(
            models=[reference],
            k=1,
            task_patterns=[TASK],
            concurrency=2,
            results=results,
            sandbox=sandbox,
            show_progress=False,
            external=agents(),
            **kw,
        )
    return ResultsDir(results).records()


def check_equal(records: list[RunRecord], reference: str, condition: str) -> RunRecord:
    cell = {r.model: r for r in records if r.condition == condition}
    expected = cell[reference]
    for name in FRAMEWORKS:
        got = cell[f"agent/{name}"]
        assert got.status == "valid", (name, got.error)
        assert got.error is None, (name, got.error)
        assert got.verdict == expected.verdict, (name, got.verdict, expected.verdict)
        assert [c["tool"] for c in got.tool_calls] == [c["tool"] for c in expected.tool_calls], name
        assert got.usage.input_tokens > 0 and got.cost_usd is not None  # the usage file priced it
    return expected


def steps(script) -> list[tuple[str, dict]]:
    return [(s.tool, s.args) for s in script.steps]


def test_oracle_script_passes_through_both_frameworks(sandbox, tmp_path, monkeypatch, task):
    model = ScriptedModel(steps(task.oracle), task.oracle.final)
    records = audit_with(sandbox, tmp_path, monkeypatch, model, "scripted/oracle")
    assert check_equal(records, "scripted/oracle", "clean").verdict.outcome == "PASS"


def test_counterexample_script_damages_through_both_frameworks(sandbox, tmp_path, monkeypatch, task):
    name, script = next((n, s) for n, s in task.scripts().items() if n != "oracle")
    model = ScriptedModel(steps(script), script.final)
    records = audit_with(sandbox, tmp_path, monkeypatch, model, f"scripted/{name}")
    assert check_equal(records, f"scripted/{name}", "clean").verdict.outcome == "FAIL_DAMAGE"


def test_a_refusal_reaches_the_verdict_through_both_frameworks(sandbox, tmp_path, monkeypatch, task):
    """Each example agent writes its answer to AGENTREL_FINAL_MESSAGE_FILE, so a model that declines
    makes a refused run, exactly as the scripted agent with the same final message."""
    script = task.scripts()["refuse_all"]
    model = ScriptedModel(steps(script), script.final)
    records = audit_with(sandbox, tmp_path, monkeypatch, model, "scripted/refuse_all")
    assert check_equal(records, "scripted/refuse_all", "clean").verdict.sub_label == "refused_clean"


@pytest.mark.parametrize(
    ("recovery", "reference", "outcome"),
    [("reconcile", "scripted/reconcile", "PASS"), ("naive", "scripted/naive-retry", "FAIL_DAMAGE")],
)
def test_lost_response_on_the_first_write(
    sandbox, tmp_path, monkeypatch, task, recovery: Recovery, reference, outcome
):
    schedule = tmp_path / "lost.yaml"
    schedule.write_text(LOST)
    model = ScriptedModel(steps(task.oracle), task.oracle.final, recovery)
    records = audit_with(sandbox, tmp_path, monkeypatch, model, reference, faults=str(schedule))
    expected = check_equal(records, reference, "fault:lost")
    assert expected.verdict.outcome == outcome
    for r in records:
        if r.condition == "fault:lost":
            assert r.fault is not None and r.fault.fired and r.fault.verdict == "witnessed", r.model
