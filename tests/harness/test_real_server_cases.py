"""What a real OpenAI-compatible server did that the fakes had not: llama-cpp-python's server with a real
model (`make smoke-local-model`), each behaviour replayed by a loopback fake (`LLAMA_CPP`)."""

from __future__ import annotations

import json

from agentrel.harness.agents.openai import OpenAIAgent
from agentrel.harness.agents.registry import agent_adapter
from agentrel.harness.run.audit import audit
from tests.harness.fake_provider import LLAMA_CPP, FakeProvider, openai_text

FINAL = "Scheduled CHG9000001.\nREFUSAL: CHG9000002 has no CAB approval on record."


def agent(url: str) -> OpenAIAgent:
    # A server on localhost needs no key, as with a local llama.cpp.
    made = OpenAIAgent.from_env("smollm2", {"temperature": 0.6}, env={"OPENAI_BASE_URL": url})
    made.attempts, made.base_delay = 2, 0.0
    return made


def run(sandbox, tmp_path, model, max_attempts=1):  # type: ignore[no-untyped-def]
    agent_adapter("real", "real/<name>")(lambda rest, sampling: model)
    outcome = audit(
        models=["real/smollm2"],
        k=1,
        tasks=["itsm-cab-window"],
        concurrency=1,
        results=tmp_path / "results",
        sandbox=sandbox,
        show_progress=False,
        max_attempts=max_attempts,
    )
    return outcome.new[-1]


def test_tools_go_with_tool_choice_auto_or_a_llama_cpp_server_leaves_them_out(sandbox, tmp_path):
    with FakeProvider() as fake:
        fake.queue(200, openai_text(FINAL))
        run(sandbox, tmp_path, agent(fake.url))
    body = fake.requests[0]["body"]
    assert body["tool_choice"] == "auto" and body["tools"]


def test_tool_calls_are_read_from_tool_calls_not_the_legacy_function_call(sandbox, tmp_path):
    # The real server names its model (the alias) in every response, as LLAMA_CPP["tool_call"] does.
    with FakeProvider(llama_cpp=True, model="smollm2") as fake:
        fake.queue_reply(LLAMA_CPP["tool_call"])
        fake.queue(200, openai_text(FINAL))
        record = run(sandbox, tmp_path, agent(fake.url))
    assert record.valid and [c["tool"] for c in record.tool_calls] == ["list_cab_approvals"]
    assert record.tool_calls[0]["ok"]  # '{"change_id" : 9002}' is read as the model meant it
    sent = fake.requests[1]["body"]["messages"]
    assert sent[-2]["content"] == ""  # never null: the server answers a null with a 500
    assert sent[-1]["tool_call_id"] == "call__0_list_cab_approvals_cmpl-b2bd23e0"
    assert json.loads(sent[-2]["tool_calls"][0]["function"]["arguments"]) == {"change_id": 9002}
    assert record.usage.input_tokens == 1175 + 120 and record.usage.output_tokens == 21 + 30


def test_a_server_that_dies_mid_request_is_retried_and_then_the_attempt_is_provider_invalid(
    sandbox, tmp_path
):
    with FakeProvider() as fake:
        fake.queue_reply(LLAMA_CPP["process_died"])
        fake.queue(200, openai_text(FINAL))
        record = run(sandbox, tmp_path / "recovers", agent(fake.url))
    assert record.valid and len(fake.requests) == 2
    with FakeProvider() as fake:
        fake.queue_reply(LLAMA_CPP["process_died"])
        fake.queue_reply(LLAMA_CPP["process_died"])
        record = run(sandbox, tmp_path / "stays-down", agent(fake.url))
    assert record.status == "provider_invalid" and len(fake.requests) == 2
    assert record.error is not None and "transport error" in record.error.message


def test_a_validation_500_is_a_server_error_and_retried(sandbox, tmp_path):
    with FakeProvider() as fake:
        fake.queue_reply(LLAMA_CPP["validation_500"])
        fake.queue(200, openai_text(FINAL))
        record = run(sandbox, tmp_path, agent(fake.url))
    assert record.valid and len(fake.requests) == 2


def test_a_context_overflow_is_not_retried_and_the_attempt_is_provider_invalid(sandbox, tmp_path):
    with FakeProvider() as fake:
        fake.queue_reply(LLAMA_CPP["context_overflow_400"])
        record = run(sandbox, tmp_path, agent(fake.url))
    assert len(fake.requests) == 1  # a 400 does not pass with time
    assert record.status == "provider_invalid" and record.verdict is not None
    assert record.error is not None and "HTTP 400" in record.error.message
    assert "maximum context length" in record.error.message
