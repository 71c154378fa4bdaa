"""`audit --agent`: an external agent program (a tiny script on the official MCP SDK client) audited like a
model, on the test session's real Postgres.

The verdicts must equal the in-process scripted agent's for the same plan; the agent's own failures are
valid runs judged by state; an agent that never connects is never counted safe; its budget kills its whole
process group; its output is bounded; it sees only the documented environment; bad input is one line
before any run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentrel.harness.agents.external import ExternalSpec
from agentrel.harness.agents.process import HEAD_BYTES, TAIL_BYTES
from agentrel.harness.agents.programs import declare_programs
from agentrel.harness.errors import UsageError
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.results.record import RunRecord
from agentrel.harness.run.audit import audit
from agentrel.harness.tasks import load_suite
from tests.harness.processes import alive_with

REPO = Path(__file__).resolve().parents[2]
PROGRAM = Path(__file__).with_name("mcp_agent_program.py")
PLAIN = Path(__file__).with_name("plain_mcp_program.py")
TASK = "csm-double-charge"


@pytest.fixture(scope="module")
def task():
    return load_suite(patterns=[TASK])[0]


def plan_file(tmp_path: Path, steps, final: str | None = None, **more) -> Path:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"steps": [[s.tool, s.args] for s in steps], "final": final, **more}))
    return path


def run_external(
    sandbox, tmp_path, name, command, *, k=1, timeout_s=60.0, model=None, isolation="sealed", **kw
) -> list[RunRecord]:
    spec = ExternalSpec(name=name, command=command, timeout_s=timeout_s, isolation=isolation)
    results = tmp_path / f"results-{name}"
    audit(
        models=[model] if model else [],
        k=k,
        tasks=[TASK],
        concurrency=2,
        results=results,
        sandbox=sandbox,
        show_progress=False,
        agents=[spec],
        **kw,
    )
    return ResultsDir(results).records()


def transcript(results: Path, record: RunRecord) -> dict:
    return json.loads((results / "transcripts" / f"{record.run_id}.json").read_text())


def test_oracle_and_counterexample_programs_get_the_scripted_agents_verdicts(sandbox, tmp_path, task):
    oracle = plan_file(tmp_path, task.oracle.steps, task.oracle.final)
    records = run_external(
        sandbox,
        tmp_path,
        "oracle",
        [sys.executable, str(PROGRAM), str(oracle), "plan"],
        k=2,
        model="scripted/oracle",
    )
    by_agent = {(r.model, r.run_index): r for r in records}
    for i in (1, 2):
        ext, scripted = by_agent[("agent/oracle", i)], by_agent[("scripted/oracle", i)]
        assert ext.status == "valid" and ext.agent_kind == "external"
        assert ext.verdict == scripted.verdict
        assert ext.after_digest == scripted.after_digest
        assert [c["tool"] for c in ext.tool_calls] == [s.tool for s in task.oracle.steps]
        # The usage it reported prices the run from the model it names (in the price table).
        assert (ext.usage.input_tokens, ext.usage.output_tokens) == (1200, 300)
        assert ext.cost_usd is not None and ext.cost_usd > 0
    assert by_agent[("agent/oracle", 1)].verdict.outcome == "PASS"

    (bad_name, bad) = next((n, s) for n, s in task.scripts().items() if n != "oracle")
    bad_plan = tmp_path / "bad"
    bad_plan.mkdir()
    records = run_external(
        sandbox,
        tmp_path,
        "bad",
        [sys.executable, str(PROGRAM), str(plan_file(bad_plan, bad.steps, bad.final)), "plan"],
        model=f"scripted/{bad_name}",
    )
    ext, scripted = sorted(records, key=lambda r: r.model)
    assert ext.model == "agent/bad" and ext.verdict.outcome == "FAIL_DAMAGE"
    assert ext.verdict == scripted.verdict


def test_a_program_with_no_mcp_library_speaks_the_contract_over_plain_http(sandbox, tmp_path, task):
    """The contract is HTTP: a standard-library program (no site packages, `python -S`) reaches the run's
    tools and gets the oracle's verdict, as the SDK client does."""
    oracle = plan_file(tmp_path, task.oracle.steps, task.oracle.final)
    (r,) = run_external(sandbox, tmp_path, "plain", [sys.executable, "-S", str(PLAIN), str(oracle)])
    assert r.status == "valid" and r.error is None, r.error
    assert r.verdict.outcome == "PASS" and r.final_message == task.oracle.final
    assert [c["tool"] for c in r.tool_calls] == [s.tool for s in task.oracle.steps]


def test_a_refusal_in_its_final_message_file_is_judged_as_a_models(sandbox, tmp_path, task):
    """An agent program that declines says so in AGENTREL_FINAL_MESSAGE_FILE: its run is `refused_clean`,
    as the scripted agent's with the same final message; without the file it would be `completed_clean`."""
    script = task.scripts()["refuse_all"]
    assert "REFUSAL:" in (script.final or "")
    command = [sys.executable, str(PROGRAM), str(plan_file(tmp_path, script.steps, script.final)), "plan"]
    records = run_external(sandbox, tmp_path, "refuser", command, model="scripted/refuse_all")
    ext, scripted = sorted(records, key=lambda r: r.model)
    assert ext.model == "agent/refuser" and ext.status == "valid"
    assert ext.verdict.sub_label == "refused_clean" and ext.verdict == scripted.verdict
    assert ext.final_message == script.final
    process = transcript(tmp_path / "results-refuser", ext)["messages"][-1]
    assert process["role"] == "process" and process["final_message"] == "reported"


def test_an_agent_that_spawns_its_server_reaches_the_run_through_stdio_proxy(sandbox, tmp_path, task):
    oracle = plan_file(tmp_path, task.oracle.steps)
    (r,) = run_external(sandbox, tmp_path, "stdio", [sys.executable, str(PROGRAM), str(oracle), "stdio"])
    assert r.status == "valid" and r.error is None, r.error
    assert r.verdict.outcome == "PASS"
    assert [c["tool"] for c in r.tool_calls] == [s.tool for s in task.oracle.steps]


def test_its_own_crash_is_a_valid_run_judged_by_the_state_it_left(sandbox, tmp_path, task):
    refund_first = [s for s in task.oracle.steps if s.tool == "issue_refund"]
    records = run_external(
        sandbox,
        tmp_path,
        "crash",
        [sys.executable, str(PROGRAM), str(plan_file(tmp_path, refund_first)), "plan-then-crash"],
    )
    (r,) = records
    assert r.status == "valid" and r.error is not None and r.error.kind == "agent"
    assert "exited with code 3" in r.error.message
    assert r.verdict.mutated and [c["tool"] for c in r.tool_calls] == ["issue_refund"]
    assert r.cost_usd is None  # it never reported usage: unknown, not free
    stderr = next(m for m in transcript(tmp_path / "results-crash", r)["messages"] if m["role"] == "stderr")
    assert "giving up after the first call" in stderr["text"]


def test_an_unknown_tool_is_the_agents_error_and_the_calls_are_recorded_at_agentrels_boundary(
    sandbox, tmp_path, task
):
    records = run_external(
        sandbox,
        tmp_path,
        "unknown",
        [sys.executable, str(PROGRAM), str(plan_file(tmp_path, task.oracle.steps)), "unknown-tool"],
    )
    (r,) = records
    assert r.status == "valid" and r.verdict.outcome == "PASS"
    assert r.tool_calls[0]["tool"] == "drop_all_tables" and r.tool_calls[0]["ok"] is False


def test_a_program_that_never_connects_is_not_exposed_never_safe(sandbox, tmp_path, task):
    records = run_external(
        sandbox,
        tmp_path,
        "hang",
        [sys.executable, str(PROGRAM), str(plan_file(tmp_path, [])), "hang"],
        timeout_s=1.5,
    )
    (r,) = records
    assert r.status == "not_exposed" and not r.valid and r.terminal
    assert "never connected" in r.error.message and "budget" in r.error.message
    assert r.tool_calls == []


@pytest.mark.parametrize("isolation", ["sealed", "none"])
def test_the_budget_kills_the_whole_process_group(sandbox, tmp_path, isolation):
    marker = f"agentrel-test-child-{os.getpid()}-{tmp_path.name}"
    records = run_external(
        sandbox,
        tmp_path,
        "stuck",
        [sys.executable, "-S", str(PLAIN), str(plan_file(tmp_path, [], child=marker, hang=True))],
        timeout_s=5.0,
        isolation=isolation,
    )
    (r,) = records
    assert r.status == "valid" and "exceeded its 5 s budget" in r.error.message
    assert alive_with(marker) == []


@pytest.mark.parametrize("isolation", ["sealed", "none"])
def test_a_child_that_left_the_process_group_is_killed_too(sandbox, tmp_path, isolation):
    marker = f"agentrel-test-escape-{os.getpid()}-{tmp_path.name}"
    records = run_external(
        sandbox,
        tmp_path,
        "escape",
        [sys.executable, "-S", str(PLAIN), str(plan_file(tmp_path, [], child=marker, child_session=True))],
        isolation=isolation,
    )
    (r,) = records
    assert r.status == "valid" and r.error is None, r.error
    assert alive_with(marker) == []


def test_output_is_bounded(sandbox, tmp_path):
    records = run_external(
        sandbox, tmp_path, "flood", [sys.executable, str(PROGRAM), str(plan_file(tmp_path, [])), "flood"]
    )
    (r,) = records
    out = next(m for m in transcript(tmp_path / "results-flood", r)["messages"] if m["role"] == "stdout")
    assert out["bytes"] > 25_000_000 and out["truncated"]
    assert len(out["text"].encode()) < HEAD_BYTES + TAIL_BYTES + 200
    assert (tmp_path / "results-flood" / "transcripts" / f"{r.run_id}.json").stat().st_size < 200_000


def test_the_environment_contract(sandbox, tmp_path, task, monkeypatch):
    monkeypatch.setenv("AGENTREL_DSN", "postgresql://owner:hunter2@127.0.0.1/agentrel")  # must not leak
    records = run_external(
        sandbox,
        tmp_path,
        "env",
        [sys.executable, str(PROGRAM), str(plan_file(tmp_path, [])), "env", "{run_id}"],
    )
    (r,) = records
    out = next(m for m in transcript(tmp_path / "results-env", r)["messages"] if m["role"] == "stdout")
    seen = json.loads(next(ln[5:] for ln in out["text"].splitlines() if ln.startswith("SEEN ")))
    assert seen["agentrel_vars"] == sorted(
        [
            "AGENTREL_MCP_URL",
            "AGENTREL_MCP_TOKEN",
            "AGENTREL_SYSTEM_PROMPT_FILE",
            "AGENTREL_USER_PROMPT_FILE",
            "AGENTREL_RUN_ID",
            "AGENTREL_USAGE_FILE",
            "AGENTREL_FINAL_MESSAGE_FILE",
        ]
    )
    assert seen["system"] == task.system_prompt and seen["user"] == task.user_prompt
    assert seen["run_id"] == r.run_id and seen["argv"][-1] == r.run_id  # the {run_id} placeholder
    assert not seen["token_in_argv"] and seen["url"].startswith("http://127.0.0.1:")
    # The token the program printed is not in its transcript.
    assert "done; token [redacted]" in out["text"]
    manifest = json.loads((tmp_path / "results-env" / "manifest.json").read_text())
    (agent,) = manifest["agents"]
    assert agent["command"][-1] == "{run_id}" and str(PROGRAM) in agent["code"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentrel.harness.cli", "audit", "--tasks", TASK, "--k", "1", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ},
        timeout=120,
    )


def test_bad_agents_are_one_line_errors_before_any_run(tmp_path):
    not_exec = tmp_path / "agent.sh"
    not_exec.write_text("#!/bin/sh\n")
    agent_yaml = tmp_path / "agent.yaml"
    agent_yaml.write_text(f"name: mine\ncommand: {sys.executable} {PROGRAM}\ncode: [missing.py]\n")
    cases = [
        (["x=no-such-agent-binary --go"], [], 300.0, "command 'no-such-agent-binary' not found on PATH"),
        ([f"x={not_exec}"], [], 300.0, "is not executable"),
        (["x=python3 a.py --key {token}"], [], 300.0, "unknown placeholder {token}"),
        (["python3 a.py"], [], 300.0, "expected NAME=COMMAND"),
        ([], [agent_yaml], 300.0, f"declared code file {tmp_path / 'missing.py'} is missing"),
        (["x=python3"], [], 0.0, "must be a positive number of seconds"),
        (["x=python3"], [], float("nan"), "must be a positive number of seconds"),
        (["x=python3"], [], -5.0, "must be a positive number of seconds"),
    ]
    for options, files, timeout_s, message in cases:
        with pytest.raises(UsageError) as caught:
            declare_programs(options, files, timeout_s)
        assert message in str(caught.value) and "\n" not in str(caught.value)


def test_bad_agents_through_the_cli_exit_before_any_run(sandbox, tmp_path):
    plan = plan_file(tmp_path, [])
    cases = [
        (["--agent", "x=no-such-agent-binary --go"], 2, "command 'no-such-agent-binary' not found on PATH"),
        (
            ["--agent", f"x={sys.executable} {PROGRAM} {plan} exit-at-once"],
            3,
            "exited at once (code 1) without connecting to the MCP server; its last stderr line: agent: no"
            " model configured",
        ),
    ]
    for args, code, message in cases:
        results = tmp_path / f"r{code}"
        done = cli(*args, "--results", str(results))
        lines = done.stderr.strip().splitlines()
        assert done.returncode == code, (args, done.stderr)
        assert len(lines) == 1 and message in lines[0], (args, done.stderr)
        assert not (results / "runs.jsonl").exists()


def test_who_failed_decides_the_status(tmp_path):
    """AgentRel's MCP server dying is harness_invalid (attempted again); the agent's own exit is valid."""
    from agentrel.harness.agents.external import ExternalAgent
    from agentrel.harness.agents.process import Bounded, ProcessEnd
    from agentrel.harness.results.status import run_status

    agent = ExternalAgent(ExternalSpec(name="x", command=[sys.executable]))
    usage = tmp_path / "usage.json"  # RunFiles(tmp_path).usage
    ended = ProcessEnd(returncode=1, timed_out=False, elapsed_s=0.1, stdout=Bounded(), stderr=Bounded())
    died = agent.result(ended, connected=True, died=True, tmp=tmp_path, token="t0ken-secret")
    assert died.failure == "harness" and run_status(died.failure, None) == "harness_invalid"
    own = agent.result(ended, connected=True, died=False, tmp=tmp_path, token="t0ken-secret")
    assert own.failure == "agent" and "exited with code 1" in own.error
    # A usage file that is not the documented form leaves the cost unknown, and says why.
    usage.write_text('{"input_tokens": "many"}')
    unread = agent.result(ended, connected=True, died=False, tmp=tmp_path, token="t0ken-secret")
    assert unread.usage_model is None and unread.transcript[-1]["usage"].startswith("unreadable")


def test_the_final_message_is_bounded_and_never_carries_the_token(tmp_path):
    """An agent that writes a huge final message, or echoes its token into it, cannot make AgentRel read
    more than MAX_FINAL_BYTES or record the token."""
    from agentrel.harness.agents.external import MAX_FINAL_BYTES, ExternalAgent, RunFiles
    from agentrel.harness.agents.process import Bounded, ProcessEnd

    agent = ExternalAgent(ExternalSpec(name="x", command=[sys.executable]))
    ended = ProcessEnd(returncode=0, timed_out=False, elapsed_s=0.1, stdout=Bounded(), stderr=Bounded())
    final = RunFiles(tmp_path).final_message
    final.write_text("my token is t0ken-secret\nREFUSAL: no\n" + "x" * (3 * MAX_FINAL_BYTES))
    got = agent.result(ended, connected=True, died=False, tmp=tmp_path, token="t0ken-secret").final_message
    assert got is not None and len(got.encode()) <= MAX_FINAL_BYTES
    assert "t0ken-secret" not in got and "[redacted]" in got and "REFUSAL: no" in got
    final.write_text("  \n")  # blank is no final message
    assert agent.result(ended, connected=True, died=False, tmp=tmp_path, token="t").final_message is None
