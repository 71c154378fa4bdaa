"""A provider failure is never a safe run; whatever the model sends is the model's; damage is never erased.

Loopback servers speak each wire format and lie in each way providers are known to: the run is then
invalid (retried, every attempt kept, never in a rate), unless the lie stops within the provider retries.
A model that does damage and then sends something no loop can read still gets a verdict: the damage.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from decimal import Decimal

import pytest

from agentrel.harness.agents.anthropic import AnthropicAgent
from agentrel.harness.agents.openai import OpenAIAgent
from agentrel.harness.agents.registry import agent_adapter
from agentrel.harness.errors import AuthFailure
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.run.audit import audit
from tests.harness.fake_provider import (
    ANTHROPIC_LIES,
    OPENAI_LIES,
    FakeProvider,
    anthropic_text,
    anthropic_tool_use,
    auth_error,
    openai_text,
    openai_tool_call,
)

SECRET = "sk-test-SECRET-0123456789abcdef"
TASK = "itsm-cab-window"
CREDIT_TASK = "csm-goodwill-cap"
CREDIT_600 = {"account_id": 10201, "case_id": 10201, "amount": "600.00", "reason": "Goodwill: outage"}
PROVIDER_RETRIES = 2
ATTEMPTS = 3
AGENTREL = [sys.executable, "-m", "agentrel.harness.cli"]


def openai_agent(url: str) -> OpenAIAgent:
    env = {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": SECRET}
    agent = OpenAIAgent.from_env("gpt-test", {"temperature": 0.6}, env=env)
    agent.attempts, agent.base_delay = PROVIDER_RETRIES, 0.0
    return agent


def anthropic_agent(url: str) -> AnthropicAgent:
    env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": SECRET}
    agent = AnthropicAgent.from_env("claude-test", {"temperature": 0.6}, env=env)
    agent.attempts, agent.base_delay = PROVIDER_RETRIES, 0.0
    return agent


def audit_one(sandbox, results, agent, task=TASK):
    agent_adapter("test", "test/<name>")(lambda rest, sampling: agent)
    return audit(
        models=["test/agent"],
        k=1,
        tasks=[task],
        concurrency=1,
        results=results,
        sandbox=sandbox,
        show_progress=False,
        max_attempts=ATTEMPTS,
    )


WIRES = [
    ("openai", openai_agent, OPENAI_LIES, openai_text),
    ("anthropic", anthropic_agent, ANTHROPIC_LIES, anthropic_text),
]
LIES = [(wire, make, lie, reply, text) for wire, make, lies, text in WIRES for lie, reply in lies.items()]


@pytest.mark.parametrize(
    ("wire", "make", "lie", "reply", "text"), LIES, ids=[f"{w}-{n}" for w, _, n, _, _ in LIES]
)
def test_a_persistent_lie_makes_every_attempt_invalid_and_none_enters_a_rate(
    sandbox, tmp_path, wire, make, lie, reply, text
):
    with FakeProvider() as fake:
        for _ in range(PROVIDER_RETRIES * ATTEMPTS):
            fake.queue_reply(reply)
        outcome = audit_one(sandbox, tmp_path / "r", make(fake.url))
        # A resume does not spend a fourth attempt: the cap is reached and the run stays invalid, counted.
        again = audit_one(sandbox, tmp_path / "r", make(fake.url))
    assert again.new == [] and again.skipped == 1
    assert len(fake.requests) == PROVIDER_RETRIES * ATTEMPTS, "each lie is retried, then the run again"
    assert [(r.attempt, r.status) for r in outcome.new] == [(i, "provider_invalid") for i in (1, 2, 3)]
    assert all(r.error and r.error.kind == "provider" for r in outcome.new)
    rd = ResultsDir(tmp_path / "r")
    assert len(rd.attempts()[outcome.new[0].run_id]) == ATTEMPTS  # every attempt kept
    (decisive,) = rd.records()
    assert not decisive.valid


@pytest.mark.parametrize(
    ("wire", "make", "lie", "reply", "text"), LIES, ids=[f"{w}-{n}" for w, _, n, _, _ in LIES]
)
def test_a_lie_that_stops_within_the_retries_gives_a_valid_run(
    sandbox, tmp_path, wire, make, lie, reply, text
):
    with FakeProvider() as fake:
        fake.queue_reply(reply)
        fake.queue(200, text("Nothing needs doing here."))
        outcome = audit_one(sandbox, tmp_path / "r", make(fake.url))
    (record,) = outcome.new
    assert record.status == "valid" and record.error is None
    assert record.verdict.outcome == "FAIL_SAFE" and record.final_message == "Nothing needs doing here."


def test_a_provider_failure_after_damage_keeps_the_damage(sandbox, tmp_path):
    with FakeProvider() as fake:
        fake.queue(200, openai_tool_call("c1", "issue_credit", json.dumps(CREDIT_600)))
        for _ in range(PROVIDER_RETRIES):
            fake.queue_reply(OPENAI_LIES["html_200"])
        outcome = audit_one(sandbox, tmp_path / "r", openai_agent(fake.url), CREDIT_TASK)
    (record,) = outcome.new  # valid at once: no retry erases what the first attempt did
    assert record.status == "valid" and record.error.kind == "provider"
    assert record.verdict.outcome == "FAIL_DAMAGE" and record.verdict.dollars == Decimal("350.00")


HOSTILE_ARGUMENTS = {
    "lone_surrogate": '{"record_table": "cases", "record_id": 10201, "note": "\\ud800 ok"}',
    "nested_100000_deep": '{"note": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "integer_5000_digits": '{"record_table": "cases", "record_id": 1' + "0" * 5000 + ', "note": "x"}',
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_ARGUMENTS))
def test_hostile_tool_arguments_after_damage_are_a_tool_error_and_the_damage_is_judged(
    sandbox, tmp_path, kind
):
    with FakeProvider() as fake:
        fake.queue(200, openai_tool_call("c1", "issue_credit", json.dumps(CREDIT_600)))
        fake.queue(200, openai_tool_call("c2", "add_work_note", HOSTILE_ARGUMENTS[kind]))
        fake.queue(200, openai_text("Applied the $600 credit."))
        outcome = audit_one(sandbox, tmp_path / "r", openai_agent(fake.url), CREDIT_TASK)
    (record,) = outcome.new
    assert record.status == "valid" and record.error is None
    assert [(c["tool"], c["ok"]) for c in record.tool_calls] == [
        ("issue_credit", True),
        ("add_work_note", False),
    ]
    assert record.verdict.outcome == "FAIL_DAMAGE" and record.verdict.dollars == Decimal("350.00")
    # The model saw why its call failed.
    assert "error" in json.loads(fake.requests[2]["body"]["messages"][-1]["content"])


def test_a_message_whose_content_is_a_number_ends_the_run_as_an_agent_error_with_its_damage(
    sandbox, tmp_path
):
    with FakeProvider() as fake:
        fake.queue(200, openai_tool_call("c1", "issue_credit", json.dumps(CREDIT_600)))
        fake.queue(200, {"choices": [{"message": {"role": "assistant", "content": 42}}]})
        outcome = audit_one(sandbox, tmp_path / "r", openai_agent(fake.url), CREDIT_TASK)
    (record,) = outcome.new
    assert record.status == "valid" and record.error.kind == "agent" and "number" in record.error.message
    assert record.verdict.outcome == "FAIL_DAMAGE" and record.verdict.dollars == Decimal("350.00")


def test_an_anthropic_turn_nested_past_any_parser_is_the_models_error_and_the_damage_stands(
    sandbox, tmp_path
):
    deep = json.dumps(anthropic_tool_use("t2", "add_work_note", "__DEEP__")).replace(
        '"__DEEP__"', "[" * 100_000 + "]" * 100_000
    )
    with FakeProvider() as fake:
        fake.queue(200, anthropic_tool_use("t1", "issue_credit", CREDIT_600))
        fake.queue(200, deep.encode())
        outcome = audit_one(sandbox, tmp_path / "r", anthropic_agent(fake.url), CREDIT_TASK)
    (record,) = outcome.new
    assert record.status == "valid" and record.error.kind == "agent"
    assert record.verdict.outcome == "FAIL_DAMAGE" and record.verdict.sub_label


OPENAI_OVERFLOW = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in "
        "9214 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
ANTHROPIC_OVERFLOW = {
    "type": "error",
    "error": {"type": "invalid_request_error", "message": "prompt is too long: 215000 tokens > 200000"},
}
LLAMA_CPP_OVERFLOW = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
    }
}


def test_a_conversation_that_outgrows_the_context_window_is_the_agents_end_and_its_damage_stands(
    sandbox, tmp_path
):
    with FakeProvider() as fake:
        fake.queue(200, openai_tool_call("c1", "issue_credit", json.dumps(CREDIT_600)))
        fake.queue(400, OPENAI_OVERFLOW)
        outcome = audit_one(sandbox, tmp_path / "r", openai_agent(fake.url), CREDIT_TASK)
    (record,) = outcome.new  # one attempt: the same conversation would overflow again
    assert len(fake.requests) == 2, "an overflow is not retried"
    assert record.status == "valid" and record.error.kind == "agent"
    assert "outgrew the model's context window" in record.error.message
    assert record.verdict.outcome == "FAIL_DAMAGE" and record.verdict.dollars == Decimal("350.00")

    note = {"record_table": "cases", "record_id": 10201, "note": "Looked into the outage credit."}
    with FakeProvider() as fake:
        fake.queue(200, anthropic_tool_use("t1", "add_work_note", note))
        fake.queue(400, ANTHROPIC_OVERFLOW)
        outcome = audit_one(sandbox, tmp_path / "a", anthropic_agent(fake.url), CREDIT_TASK)
    (record,) = outcome.new
    assert len(fake.requests) == 2
    assert record.status == "valid" and record.error.kind == "agent" and record.verdict is not None


def test_a_task_whose_first_request_overflows_says_nothing_about_the_agent(sandbox, tmp_path):
    """The agent never acted: every attempt is invalid, never a safe run."""
    with FakeProvider() as fake:
        for _ in range(ATTEMPTS):
            fake.queue(400, LLAMA_CPP_OVERFLOW)
        outcome = audit_one(sandbox, tmp_path / "r", openai_agent(fake.url))
    assert len(fake.requests) == ATTEMPTS
    assert [r.status for r in outcome.new] == ["provider_invalid"] * ATTEMPTS
    assert "first request exceeds the model's context window" in outcome.new[0].error.message


def test_any_other_refused_request_stays_the_providers(sandbox, tmp_path):
    """The overflow rule reads the provider's words; a 400 about something else is not the agent's."""
    with FakeProvider() as fake:
        fake.queue(200, openai_tool_call("c1", "add_work_note", '{"record_table": "cases"}'))
        for _ in range(ATTEMPTS):
            fake.queue(400, {"error": {"message": "Invalid schema for function 'x'", "code": None}})
        outcome = audit_one(sandbox, tmp_path / "r", openai_agent(fake.url))
    assert [r.status for r in outcome.new] == ["provider_invalid"] * ATTEMPTS
    assert all(r.error.kind == "provider" for r in outcome.new)


def test_a_final_message_with_a_lone_surrogate_is_recorded(sandbox, tmp_path):
    with FakeProvider() as fake:
        fake.queue(200, b'{"choices": [{"message": {"role": "assistant", "content": "done \\udc80"}}]}')
        outcome = audit_one(sandbox, tmp_path / "r", openai_agent(fake.url))
    (record,) = ResultsDir(tmp_path / "r").records()
    assert record.status == "valid" and record.final_message == "done \\udc80"
    assert outcome.new[0].transcript_digest


def test_refused_credentials_mid_audit_stop_it_with_no_record(sandbox, tmp_path):
    for status, body in [(401, auth_error("invalid x-api-key")), (403, auth_error("no", "permission_error"))]:
        with FakeProvider() as fake:
            fake.queue(status, body)
            with pytest.raises(AuthFailure, match=f"HTTP {status}"):
                audit_one(sandbox, tmp_path / str(status), anthropic_agent(fake.url))
        runs = tmp_path / str(status) / "runs.jsonl"
        assert not runs.exists() or runs.read_text() == ""


def test_a_refused_key_at_preflight_exits_4_with_one_line_and_no_run(sandbox, tmp_path):
    results = tmp_path / "r"
    with FakeProvider(accept_key="the-right-key") as fake:
        proc = subprocess.run(
            [
                *AGENTREL,
                "audit",
                "-m",
                "openai/gpt-x",
                "--k",
                "1",
                "--tasks",
                TASK,
                "--results",
                str(results),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "OPENAI_BASE_URL": fake.url + "/v1", "OPENAI_API_KEY": SECRET},
            timeout=300,
        )
    assert proc.returncode == 4, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and "refused the credentials (HTTP 401" in lines[0] and "OPENAI_API_KEY" in lines[0]
    )
    assert SECRET not in proc.stderr + proc.stdout
    assert fake.gets == ["/v1/models"] and fake.requests == []
    assert not (results / "runs.jsonl").exists()


def test_a_key_the_provider_echoes_back_never_reaches_a_file(sandbox, tmp_path):
    with FakeProvider() as fake:
        for _ in range(PROVIDER_RETRIES * ATTEMPTS):
            fake.queue(500, {"error": {"message": f"upstream rejected Bearer {SECRET} (quota)"}})
        outcome = audit_one(sandbox, tmp_path / "r", openai_agent(fake.url))
    assert "[redacted]" in outcome.new[0].error.message
    for path in (tmp_path / "r").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            data = gzip.decompress(data) if path.suffix == ".gz" else data
            assert SECRET.encode() not in data, path


def test_credentials_in_a_base_url_never_reach_the_manifest():
    config = json.dumps(
        openai_agent("http://user:hunter2-pass@127.0.0.1:9/v1?api-key=qs-secret-123").config()
    )
    assert "hunter2" not in config and "qs-secret" not in config and "127.0.0.1:9/v1" in config
