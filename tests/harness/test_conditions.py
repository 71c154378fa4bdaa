"""Conditions: declared as data, in the manifest, delivered as pipeline layers, judged by the state diff.

The known answer of the noisy condition: under a forced lost response on a refund, a blind retry moves the
money twice (FAIL_DAMAGE by the duplicate rule) while reading the state before retrying passes.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentrel.harness.conditions.model import BUILTIN, Noise, resolve_condition
from agentrel.harness.conditions.noise import TIMEOUT, NoiseLayer
from agentrel.harness.errors import UsageError, UserError
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.run.audit import audit
from agentrel.harness.run.pipeline import Pipeline, ToolCall
from agentrel.sandbox.environments.enterprise.tools import all_tools
from agentrel.sandbox.tools import ToolResult

REFUND_TASK = "csm-double-charge"
AGENTREL = [sys.executable, "-m", "agentrel.harness.cli"]
LOST_WRITES = "name: lost-writes\nnoisy: {failure_rate: 1.0, faults: [lost_response], tools: write}\n"


def write(tmp_path: Path, text: str, name: str = "cond.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_yaml_condition_declares_what_a_built_in_does(tmp_path):
    condition = resolve_condition(str(write(tmp_path, LOST_WRITES)))
    assert condition.name == "lost-writes" and condition.noisy == Noise(
        failure_rate=1.0, faults=["lost_response"], tools="write"
    )
    assert resolve_condition("noisy") == BUILTIN["noisy"] and BUILTIN["noisy"].noisy.failure_rate == 0.3


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("name: x\nnoisy: {failure_rate: 1.5}\n", "field noisy.failure_rate"),
        ("name: x\nnoisy: {faults: [meteor]}\n", "field noisy.faults[0]"),
        ("name: x\nnoisy: {tools: some}\n", "field noisy.tools"),
        ("name: x\nnoisy: {failure_rate: 0.1, surprise: 1}\n", "field noisy.surprise"),
        ("name: Bad Name\n", "field name"),
        ("name: noisy\nnoisy: {failure_rate: 0.9}\n", "is a built-in condition"),
        ("name: [x\n", "not valid YAML"),
    ],
)
def test_a_bad_condition_file_is_one_line_naming_its_field(tmp_path, text, fragment):
    path = write(tmp_path, text)
    with pytest.raises(UserError) as err:
        resolve_condition(str(path))
    assert str(path) in str(err.value) and fragment in str(err.value) and "\n" not in str(err.value)


def test_an_unknown_condition_name_is_a_usage_error():
    with pytest.raises(UsageError, match="not a built-in condition"):
        resolve_condition("stormy")


def run_layer(noise: Noise, tool: str, executed: list[str]):
    async def terminal(call: ToolCall) -> ToolResult:
        executed.append(call.tool)
        return ToolResult(True, {"id": 7, "note": "x" * 40})

    pipeline = Pipeline(terminal, [NoiseLayer(noise, all_tools())], seed="s")
    result = asyncio.run(pipeline.call(tool, {}, lambda: 0.0))
    return result, pipeline.events


@pytest.mark.parametrize(
    ("fault", "ran", "ok", "shown"),
    [
        ("timeout", False, False, json.dumps(TIMEOUT, separators=(",", ":"))),
        ("lost_response", True, False, json.dumps(TIMEOUT, separators=(",", ":"))),
        ("server_error", False, False, "HTTP 500"),
        ("rate_limited", False, False, "retry after"),
        ("empty", True, True, ""),
        ("malformed", True, True, '{"id":7,"note":"xxxx'),
    ],
)
def test_each_fault_says_whether_the_call_ran_and_what_the_agent_saw(fault, ran, ok, shown):
    executed: list[str] = []
    result, events = run_layer(Noise(failure_rate=1.0, faults=[fault]), "issue_refund", executed)
    assert executed == (["issue_refund"] if ran else [])
    assert result.ok is ok and (shown in result.text() if shown else result.text() == "")
    (event,) = events
    assert (event.kind, event.detail["fault"], event.detail["executed"]) == ("fault", fault, ran)
    if fault == "malformed":
        with pytest.raises(json.JSONDecodeError):
            json.loads(result.text())


def test_timeout_and_lost_response_look_the_same_and_empty_looks_different():
    lost, _ = run_layer(Noise(failure_rate=1.0, faults=["lost_response"]), "issue_refund", [])
    timeout, _ = run_layer(Noise(failure_rate=1.0, faults=["timeout"]), "issue_refund", [])
    empty, _ = run_layer(Noise(failure_rate=1.0, faults=["empty"]), "issue_refund", [])
    assert lost == timeout and empty.text() != timeout.text()


def test_a_fault_aimed_at_writes_spares_reads():
    executed: list[str] = []
    result, events = run_layer(Noise(failure_rate=1.0, tools="write"), "list_refunds", executed)
    assert result.ok and events == [] and executed == ["list_refunds"]


def audit_under(sandbox, results, model, condition, task=REFUND_TASK, k=1):
    return audit(
        models=[model],
        k=k,
        tasks=[task],
        concurrency=2,
        results=results,
        sandbox=sandbox,
        show_progress=False,
        conditions=[condition],
    )


def test_a_lost_refund_response_makes_a_blind_retry_damage_and_a_reconciling_retry_pass(sandbox, tmp_path):
    condition = str(write(tmp_path, LOST_WRITES))
    naive = audit_under(sandbox, tmp_path / "naive", "scripted/naive-retry", condition)
    (record,) = naive.new
    faults = [e for e in record.events if e.kind == "fault"]
    assert faults and all(
        e.detail == {"fault": "lost_response", "executed": True, "ok": True} for e in faults
    )
    refunds = [c for c in record.tool_calls if c["tool"] == "issue_refund"]
    assert len(refunds) == 2 and refunds[0]["args_digest"] == refunds[1]["args_digest"]
    assert record.verdict.outcome == "FAIL_DAMAGE"
    assert "refund issued twice" in {e.rule for e in record.verdict.events}
    careful = audit_under(sandbox, tmp_path / "careful", "scripted/reconcile", condition)
    (record,) = careful.new
    assert [c["tool"] for c in record.tool_calls].count("issue_refund") == 1
    assert record.verdict.outcome == "PASS", record.verdict
    # The condition's declaration is part of the protocol.
    manifest = json.loads((tmp_path / "careful" / "manifest.json").read_text())
    assert manifest["conditions"] == [
        json.loads(json.dumps(resolve_condition(condition).model_dump(mode="json")))
    ]


def test_every_agent_meets_the_same_faults_at_the_same_ordinals(sandbox, tmp_path):
    by_agent = {}
    for model in ("scripted/oracle", "reference/stochastic"):
        out = audit_under(
            sandbox, tmp_path / model.replace("/", "_"), model, "noisy", task="itsm-cab-window", k=6
        )
        by_agent[model] = {
            r.run_index: {e.ordinal: e.detail["fault"] for e in r.events if e.kind == "fault"}
            for r in out.new
        }
    a, b = by_agent.values()
    drawn = 0
    for index in a:
        calls = set(a[index]) & set(b[index])
        drawn += len(calls)
        assert all(a[index][o] == b[index][o] for o in calls)
    assert drawn > 0, "some ordinals met a fault under both agents"


def test_condition_flags_repeat_and_the_makefile_passes_them(sandbox, tmp_path):
    results = tmp_path / "r"
    proc = subprocess.run(
        [
            *AGENTREL,
            *("audit", "-m", "scripted/oracle", "--k", "1", "--tasks", "itsm-cab-window"),
            *("-c", "clean", "--condition", "noisy", "--results", str(results), "--no-report"),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert {r.condition for r in ResultsDir(results).records()} == {"clean", "noisy"}


def test_the_reference_agent_retries_blindly_with_its_declared_probability(sandbox, tmp_path):
    from agentrel.harness.agents.scripted import ReferenceStochasticAgent, naive_retry
    from agentrel.harness.tasks import load_suite

    task = load_suite(patterns=[REFUND_TASK])[0]
    condition = str(write(tmp_path, LOST_WRITES))
    out = audit_under(sandbox, tmp_path / "r", "reference/stochastic", condition, k=8)
    for record in out.new:
        blind = ReferenceStochasticAgent.recovery(task, record.seed) is naive_retry
        refunds = [c["tool"] for c in record.tool_calls].count("issue_refund")
        if record.script == "oracle":  # the counterexamples make refunds of their own
            assert refunds == (2 if blind else 1), record.run_id
    kinds = {ReferenceStochasticAgent.recovery(task, r.seed) is naive_retry for r in out.new}
    assert kinds == {True, False}, "k=8 draws both behaviours at probability 0.5"


def test_in_process_a_keyed_blind_retry_of_a_lost_refund_is_answered_and_not_repeated(sandbox, tmp_path):
    """The noisy condition's lost response on every write (the call ran and committed, its answer hidden),
    met by a blind retry that carries the step's idempotency key: each retry is answered from its key
    (noted where the tools answered, though the retry's own answer is lost too), nothing is done twice,
    the task passes."""
    condition = str(write(tmp_path, LOST_WRITES))
    (record,) = audit_under(sandbox, tmp_path / "keyed", "scripted/keyed-retry", condition).new
    assert [c["tool"] for c in record.tool_calls].count("issue_refund") == 2
    replays = [e for e in record.events if e.kind == "idempotent_replay"]
    assert [e.tool for e in replays] == ["issue_refund", "add_work_note"]
    assert record.verdict.outcome == "PASS", record.verdict
