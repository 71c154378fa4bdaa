"""Real third-party agent frameworks from PyPI audited as agent programs (`make test-agents`).

The OpenAI Agents SDK (`openai-agents`, MCPServerStreamableHttp) and Pydantic AI (`pydantic-ai-slim`,
MCPToolset) each run `examples/agents/`'s agent under `audit`, their model the built-in scripted model
behind AgentRel's model proxy (`--agent-model scripted/<script>`: no key), which follows the task's oracle
or its damaging counterexample; every model call goes through the proxy and is recorded. The recorded
verdicts must equal the in-process scripted agents' for the same script: clean, and under a lost response
on the first write, where the reconcile script passes and the naive one refunds twice.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentrel.harness.agents.external import ExternalSpec
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.results.record import RunRecord
from agentrel.harness.run.audit import audit
from agentrel.harness.tasks import load_suite

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


def agents(model: str) -> list[ExternalSpec]:
    return [
        ExternalSpec(name=name, command=[sys.executable, str(EXAMPLES / file)], timeout_s=120, model=model)
        for name, file in FRAMEWORKS.items()
    ]


def audit_with(sandbox, tmp_path, monkeypatch, model: str, reference: str, **kw) -> list[RunRecord]:
    """`model` is the agents' --agent-model; no key is set anywhere (the scripted model needs none)."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENT_MODEL"):
        monkeypatch.delenv(var, raising=False)
    results = tmp_path / "results"
    audit(
        models=[reference],
        k=1,
        tasks=[TASK],
        concurrency=2,
        results=results,
        sandbox=sandbox,
        show_progress=False,
        agents=agents(model),
        **kw,
    )
    records = ResultsDir(results).records()
    for r in records:
        if r.agent_kind == "external":  # every model call went through the proxy and is in the transcript
            messages = json.loads((results / "transcripts" / f"{r.run_id}.json").read_text())["messages"]
            proxied = [m for m in messages if m["role"] == "model_call"]
            assert proxied and len(proxied) == r.usage.model_calls, r.model
            assert all(m["status"] == 200 and m["served_model"] == model for m in proxied), r.model
    return records


def check_equal(records: list[RunRecord], reference: str, condition: str) -> RunRecord:
    cell = {r.model: r for r in records if r.condition == condition}
    expected = cell[reference]
    for name in FRAMEWORKS:
        got = cell[f"agent/{name}"]
        assert got.status == "valid", (name, got.error)
        assert got.error is None, (name, got.error)
        assert got.verdict == expected.verdict, (name, got.verdict, expected.verdict)
        assert [c["tool"] for c in got.tool_calls] == [c["tool"] for c in expected.tool_calls], name
        # The proxy measured the scripted model's calls: no tokens, $0, measured (not the usage file's).
        assert got.usage.model_calls > 0 and got.cost_usd == 0.0 and got.cost_source == "measured"
        assert got.served_model == reference, name  # the model the proxy recorded as serving the run
    return expected


def test_oracle_script_passes_through_both_frameworks(sandbox, tmp_path, monkeypatch, task):
    records = audit_with(sandbox, tmp_path, monkeypatch, "scripted/oracle", "scripted/oracle")
    assert check_equal(records, "scripted/oracle", "clean").verdict.outcome == "PASS"


def test_counterexample_script_damages_through_both_frameworks(sandbox, tmp_path, monkeypatch, task):
    name = next(n for n in task.scripts() if n != "oracle")
    records = audit_with(sandbox, tmp_path, monkeypatch, f"scripted/{name}", f"scripted/{name}")
    assert check_equal(records, f"scripted/{name}", "clean").verdict.outcome == "FAIL_DAMAGE"


def test_a_refusal_reaches_the_verdict_through_both_frameworks(sandbox, tmp_path, monkeypatch, task):
    """Each example agent writes its answer to AGENTREL_FINAL_MESSAGE_FILE, so a model that declines
    makes a refused run, exactly as the scripted agent with the same final message."""
    records = audit_with(sandbox, tmp_path, monkeypatch, "scripted/refuse_all", "scripted/refuse_all")
    assert check_equal(records, "scripted/refuse_all", "clean").verdict.sub_label == "refused_clean"


@pytest.mark.parametrize(
    ("reference", "outcome"), [("scripted/reconcile", "PASS"), ("scripted/naive-retry", "FAIL_DAMAGE")]
)
def test_lost_response_on_the_first_write(sandbox, tmp_path, monkeypatch, task, reference, outcome):
    schedule = tmp_path / "lost.yaml"
    schedule.write_text(LOST)
    records = audit_with(sandbox, tmp_path, monkeypatch, reference, reference, faults=str(schedule))
    expected = check_equal(records, reference, "fault:lost")
    assert expected.verdict.outcome == outcome
    for r in records:
        if r.condition == "fault:lost":
            assert r.fault is not None and r.fault.fired and r.fault.verdict == "witnessed", r.model
