"""The model proxy (`audit --agent-model`): an agent program's model calls go through AgentRel.

Every wire protocol, whole and streamed, goes through the proxy to a loopback fake upstream with the
auditor's key, which never reaches the agent, its results or its logs; the tokens the upstream counted
are the run's measured cost, whatever the agent's usage file says; a cost only the usage file gives is
marked `reported`; an upstream's 500, a 200 that is not JSON and a cut stream reach the agent as errors
and stay in the record; a call with another run's token is refused.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentrel.analysis.axes_table import operational_axes
from agentrel.analysis.export import runs_frame
from agentrel.analysis.load_results import load_results
from agentrel.analysis.report_axes import axes_section
from agentrel.harness.agents.chat import request_seed
from agentrel.harness.agents.external import ExternalAgent, ExternalSpec
from agentrel.harness.agents.model_proxy import ModelProxy
from agentrel.harness.agents.model_upstream import Upstream, resolve_upstream
from agentrel.harness.agents.programs import declare_programs
from agentrel.harness.errors import UsageError
from agentrel.harness.prices import cost, load_prices
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.results.record import RunRecord
from agentrel.harness.run.audit import audit
from agentrel.harness.tasks import load_suite
from agentrel.harness.view import run_html
from agentrel.harness.view.evidence import RunEvidence
from tests.harness.fake_provider import CLOSE, FakeProvider, anthropic_text, openai_text

KEY = "sk-auditor-0123456789abcdefREAL"  # the auditor's key: only the fake upstream may ever see it
PROGRAM = Path(__file__).with_name("proxy_agent_program.py")
TASK = "csm-double-charge"
SSE = {"Content-Type": "text/event-stream"}


def sse(*events: Any, done: bool = False) -> bytes:
    out = b""
    for e in events:
        kind = e.get("type") if isinstance(e, dict) else None
        head = f"event: {kind}\n" if kind else ""
        out += f"{head}data: {json.dumps(e)}\n\n".encode()
    return out + (b"data: [DONE]\n\n" if done else b"")


def chat_chunks(text: str, usage: bool = True) -> list[dict[str, Any]]:
    head = {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-test-0613"}
    chunks = [
        {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    if usage:
        chunks.append({**head, "choices": [], "usage": {"prompt_tokens": 41, "completion_tokens": 7}})
    return chunks


RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "model": "gpt-test-0613",
    "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}],
    "usage": {"input_tokens": 33, "output_tokens": 4, "total_tokens": 37},
}
MESSAGE_EVENTS = [
    {
        "type": "message_start",
        "message": {"id": "m1", "model": "claude-test-1", "usage": {"input_tokens": 52, "output_tokens": 1}},
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hello"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}},
    {"type": "message_stop"},
]


@pytest.fixture
def openai_up(monkeypatch):
    with FakeProvider(accept_key=KEY, model="gpt-test-0613") as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        yield fake, resolve_upstream("openai/gpt-test")


@pytest.fixture
def anthropic_up(monkeypatch):
    with FakeProvider(accept_key=KEY) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        yield fake, resolve_upstream("anthropic/claude-test")


def through(upstream: Upstream, requests: list[tuple[str, dict[str, Any]]], token: str | None = None):
    """Start a proxy, post each (path, body) as an agent would, return the answers and the proxy."""

    async def go() -> tuple[list[httpx.Response], ModelProxy]:
        async with ModelProxy(upstream, "seed-0") as proxy:
            auth = {"Authorization": f"Bearer {token or proxy.token}"}
            async with httpx.AsyncClient(timeout=30) as client:
                answers = [
                    await client.post(proxy.root + path, json=body, headers=auth) for path, body in requests
                ]
        return answers, proxy

    return asyncio.run(go())


CHAT = {"model": "agent-picks-this", "messages": [{"role": "user", "content": "hi"}]}


def test_chat_completions_whole_reach_the_upstream_with_the_auditors_key_model_and_seed(openai_up):
    fake, upstream = openai_up
    fake.queue(200, openai_text("hello"))
    (answer,), proxy = through(upstream, [("/v1/chat/completions", CHAT)])
    assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"] == "hello"
    sent = fake.requests[-1]["body"]
    assert fake.headers[-1]["Authorization"] == f"Bearer {KEY}"  # the token was replaced by the key
    assert proxy.token not in json.dumps(fake.headers[-1])
    assert sent["model"] == "gpt-test" and sent["seed"] == request_seed("seed-0", 1)
    (call,) = proxy.calls
    assert (call.input_tokens, call.output_tokens, call.served_model) == (120, 30, "gpt-test-0613")
    assert call.asked_model == "agent-picks-this" and call.status == 200 and call.error is None
    assert proxy.usage().input_tokens == 120 and proxy.model_calls()[0]["seed"] == sent["seed"]


def test_chat_completions_streamed_are_relayed_and_their_usage_asked_for(openai_up):
    fake, upstream = openai_up
    fake.queue(200, sse(*chat_chunks("hel"), done=True), SSE)
    (answer,), proxy = through(upstream, [("/v1/chat/completions", {**CHAT, "stream": True})])
    assert answer.status_code == 200 and answer.text.endswith("data: [DONE]\n\n")
    assert '"content": "hel"' in answer.text
    assert fake.requests[-1]["body"]["stream_options"] == {"include_usage": True}
    (call,) = proxy.calls
    assert call.stream and (call.input_tokens, call.output_tokens) == (41, 7) and call.error is None


def test_responses_whole_and_streamed(openai_up):
    fake, upstream = openai_up
    fake.queue(200, RESPONSE)
    completed = {"type": "response.completed", "response": RESPONSE}
    fake.queue(
        200, sse({"type": "response.created", "response": {**RESPONSE, "usage": None}}, completed), SSE
    )
    body = {"model": "x", "input": "hi"}
    answers, proxy = through(upstream, [("/v1/responses", body), ("/v1/responses", {**body, "stream": True})])
    assert [a.status_code for a in answers] == [200, 200]
    assert [r["path"] for r in fake.requests] == ["/v1/responses", "/v1/responses"]
    assert "seed" not in fake.requests[0]["body"]  # the Responses API has no seed field
    assert [(c.input_tokens, c.output_tokens, c.error) for c in proxy.calls] == [(33, 4, None)] * 2
    assert "response.completed" in answers[1].text


def test_anthropic_messages_whole_and_streamed(anthropic_up):
    fake, upstream = anthropic_up
    fake.queue(200, {**anthropic_text("hello"), "model": "claude-test-1"})
    fake.queue(200, sse(*MESSAGE_EVENTS), SSE)
    body = {"model": "x", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    answers, proxy = through(upstream, [("/v1/messages", body), ("/v1/messages", {**body, "stream": True})])
    assert [a.status_code for a in answers] == [200, 200]
    assert fake.headers[0]["x-api-key"] == KEY and "seed" not in fake.requests[0]["body"]
    assert fake.requests[1]["body"]["model"] == "claude-test"
    whole, streamed = proxy.calls
    assert (whole.input_tokens, whole.output_tokens, whole.served_model) == (110, 25, "claude-test-1")
    assert (streamed.input_tokens, streamed.output_tokens, streamed.served_model) == (52, 9, "claude-test-1")
    assert "message_stop" in answers[1].text and streamed.error is None


def test_a_protocol_the_upstream_does_not_speak_is_refused_and_recorded(anthropic_up):
    fake, upstream = anthropic_up
    (answer,), proxy = through(upstream, [("/v1/chat/completions", CHAT)])
    assert answer.status_code == 400 and "/v1/messages" in answer.json()["error"]["message"]
    assert not fake.requests and proxy.calls[0].status == 400


def test_a_wrong_token_is_refused_and_nothing_is_forwarded(openai_up):
    """The attack: an agent (or another run's) calling the model with a token not its own run's."""
    fake, upstream = openai_up
    (answer,), proxy = through(upstream, [("/v1/chat/completions", CHAT)], token="agentrel-run-someone-else")
    assert answer.status_code == 401 and answer.json()["error"]["type"] == "authentication_error"
    assert not fake.requests and proxy.refused == 1 and not proxy.calls


def test_the_real_key_as_the_token_is_refused_too(openai_up):
    """Presenting the auditor's key itself (found somewhere) does not make a call either."""
    fake, upstream = openai_up
    (answer,), proxy = through(upstream, [("/v1/chat/completions", CHAT)], token=KEY)
    assert answer.status_code == 401 and not fake.requests and proxy.refused == 1


@pytest.mark.parametrize(
    ("reply", "status", "error"),
    [
        ((500, {}, {"error": {"message": "boom"}}), 500, "upstream HTTP 500"),
        ((200, {"Content-Type": "text/html"}, b"<html>login</html>"), 502, "not JSON (text/html)"),
        ((200, {}, CLOSE), 502, "could not be reached"),
    ],
)
def test_upstream_misbehaviour_reaches_the_agent_as_an_error_and_is_recorded(openai_up, reply, status, error):
    fake, upstream = openai_up
    fake.queue_reply(reply)
    (answer,), proxy = through(upstream, [("/v1/chat/completions", CHAT)])
    assert answer.status_code == status
    (call,) = proxy.calls
    assert call.status == status and error in (call.error or "")
    assert proxy.usage().model_calls == 0  # an unanswered call is never priced


@pytest.mark.parametrize("cut", ["no_end_event", "mid_event"])
def test_a_cut_stream_ends_in_an_error_event_and_is_recorded(openai_up, cut):
    fake, upstream = openai_up
    events = sse(*chat_chunks("hel", usage=False))
    fake.queue(200, events if cut == "no_end_event" else events + b'data: {"choices": [{"del', SSE)
    (answer,), proxy = through(upstream, [("/v1/chat/completions", {**CHAT, "stream": True})])
    assert answer.status_code == 200 and "event: error" in answer.text and "[DONE]" not in answer.text
    (call,) = proxy.calls
    assert "ended before its end event" in (call.error or "") and "event: error" in call.response


def test_an_echoed_key_is_redacted_on_its_way_to_the_agent_and_the_record(openai_up):
    fake, upstream = openai_up
    fake.queue(401, {"error": {"message": f"invalid key {KEY}", "type": "invalid_request_error"}})
    fake.queue(200, openai_text(f"your key is {KEY}"))
    answers, proxy = through(upstream, [("/v1/chat/completions", CHAT)] * 2)
    for answer, call in zip(answers, proxy.calls, strict=True):
        assert KEY not in answer.text and KEY not in call.response and "[redacted]" in answer.text


def test_the_scripted_model_answers_whole_and_streamed_without_a_network():
    task = load_suite(patterns=[TASK])[0]
    upstream = resolve_upstream("scripted/oracle")
    proxy_run = upstream.scripted.for_run(task, "seed-0") if upstream.scripted else None
    first = task.oracle.steps[0]

    async def go() -> tuple[list[httpx.Response], ModelProxy]:
        async with ModelProxy(upstream, "seed-0", proxy_run) as proxy:
            auth = {"Authorization": f"Bearer {proxy.token}"}
            async with httpx.AsyncClient(timeout=30) as client:
                whole = await client.post(proxy.base_url + "/chat/completions", json=CHAT, headers=auth)
                streamed = await client.post(
                    proxy.base_url + "/chat/completions", json={**CHAT, "stream": True}, headers=auth
                )
        return [whole, streamed], proxy

    (whole, streamed), proxy = asyncio.run(go())
    call = whole.json()["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == first.tool and json.loads(call["arguments"]) == first.args
    assert f'"name": "{first.tool}"' in streamed.text and streamed.text.endswith("data: [DONE]\n\n")
    assert [c.served_model for c in proxy.calls] == ["scripted/oracle"] * 2
    assert all(c.error is None and c.seed is None for c in proxy.calls)


# --- through an audit: the agent program, its environment, its records ---


def audited(sandbox, tmp_path: Path, plan: dict[str, Any], model: str | None) -> tuple[RunRecord, dict, Path]:
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    report = tmp_path / "report.json"
    cwd = tmp_path / "agent-cwd"
    cwd.mkdir()
    spec = ExternalSpec(
        name="proxied",
        command=[sys.executable, str(PROGRAM), str(tmp_path / "plan.json"), str(report)],
        timeout_s=60,
        cwd=str(cwd),
        model=model,
        # Unsealed here: the program writes its report into tmp_path (a sealed one cannot); sealing with
        # the proxy is `make test-agents`' (both frameworks reach their model only through it).
        isolation="none",
    )
    results = tmp_path / "results"
    audit(
        models=[],
        k=1,
        tasks=[TASK],
        concurrency=1,
        results=results,
        sandbox=sandbox,
        show_progress=False,
        agents=[spec],
    )
    (record,) = ResultsDir(results).records()
    return record, json.loads(report.read_text()), results


def test_the_key_never_reaches_the_agent_and_the_proxy_measures_a_zero_token_liar(
    sandbox, tmp_path, monkeypatch
):
    """The attack: an agent writing 0 tokens in its usage file to make its cost $0. The proxy counted
    what the upstream served; that is the cost, marked measured. Its key is nowhere the agent can read,
    and nowhere in the results directory."""
    task = load_suite(patterns=[TASK])[0]
    with FakeProvider(accept_key=KEY, model="gpt-4o-mini-2024-07-18") as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("MY_OWN_NAME_FOR_THE_KEY", KEY)  # wherever the auditor keeps it
        fake.queue(200, openai_text("ok"))
        fake.queue(200, sse(*chat_chunks("ok"), done=True), SSE)
        plan = {
            "steps": [[s.tool, s.args] for s in task.oracle.steps],
            "final": task.oracle.final,
            "model_calls": [{"stream": False}, {"stream": True}],
            "usage": {"input_tokens": 0, "output_tokens": 0, "model": "gpt-4o-mini"},
        }
        record, report, results = audited(sandbox, tmp_path, plan, "openai/gpt-4o-mini")
    assert [a["status"] for a in report["answers"]] == [200, 200]
    assert KEY not in report["readable"] and "AGENTREL_MODEL_API_KEY" in report["readable"]
    assert all(h["Authorization"] == f"Bearer {KEY}" for h in fake.headers)
    for path in results.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert record.status == "valid" and record.verdict is not None
    assert (record.usage.input_tokens, record.usage.output_tokens) == (120 + 41, 30 + 7)
    expected = cost(load_prices(), "openai/gpt-4o-mini", 161, 37)
    assert record.cost_usd == expected and expected and expected > 0
    assert record.cost_source == "measured" and record.served_model == "gpt-4o-mini-2024-07-18"
    transcript = json.loads((results / "transcripts" / f"{record.run_id}.json").read_text())
    messages = transcript["messages"]
    calls = [m for m in messages if m["role"] == "model_call"]
    shown = run_html.transcript_html(
        RunEvidence(record, transcript, None, None), record
    )  # the view's run page
    assert "2 model calls through AgentRel" in shown and "model_call" in shown
    assert [c["stream"] for c in calls] == [False, True] and all(c["status"] == 200 for c in calls)
    process = next(m for m in messages if m["role"] == "process")
    assert process["usage_cross_check"]["agrees"] is False  # its usage file said 0: kept, not priced
    manifest = json.loads((results / "manifest.json").read_text())
    assert manifest["agents"][0]["model"]["spec"] == "openai/gpt-4o-mini"


def test_a_cost_only_the_usage_file_gives_is_marked_reported(sandbox, tmp_path):
    task = load_suite(patterns=[TASK])[0]
    plan = {
        "steps": [[s.tool, s.args] for s in task.oracle.steps],
        "usage": {"input_tokens": 1000, "output_tokens": 100, "model": "gpt-4o-mini"},
    }
    record, _, results = audited(sandbox, tmp_path, plan, None)
    assert record.cost_usd == cost(load_prices(), "gpt-4o-mini", 1000, 100)
    assert record.cost_source == "reported"
    # ... and so it stays wherever the cost is shown: runs.csv, and the cost axis's note that the report
    # and the signed scorecard (`axes_note`) carry.
    loaded = load_results(results)
    (row,) = runs_frame(loaded).to_dict("records")
    assert row["cost_source"] == "reported" and row["cost_usd"] == record.cost_usd
    axes = operational_axes(loaded, n_boot=10)
    assert any(
        n.startswith("cost of agent/proxied under clean is reported, not measured") for n in axes.notes
    )
    section = axes_section(axes, 0.95, 10)  # the report's operational axes
    assert any("reported, not measured" in str(b) for b in section.blocks)


def test_an_agent_calling_with_a_wrong_token_is_refused_in_the_run(sandbox, tmp_path):
    plan = {"steps": [], "model_calls": [{"stream": False}], "token": "wrong"}
    record, report, results = audited(sandbox, tmp_path, plan, "scripted/oracle")
    assert report["answers"][0]["status"] == 401
    messages = json.loads((results / "transcripts" / f"{record.run_id}.json").read_text())["messages"]
    summary = next(m for m in messages if m["role"] == "model_proxy")
    assert summary["refused"] == 1 and summary["calls"] == 0
    assert record.usage.model_calls == 0 and record.cost_usd == 0.0 and record.cost_source == "measured"


# --- bad input: one line before anything runs ---


@pytest.mark.parametrize(
    ("model", "agents", "says"),
    [
        (
            "gemini/pro",
            ["a=python x.py"],
            "--agent-model 'gemini/pro': use openai/<model>, anthropic/<model>",
        ),
        ("openai/gpt-4o", ["a=python x.py"], "set OPENAI_API_KEY"),
        ("anthropic/claude-haiku-4-5", ["a=python x.py"], "set ANTHROPIC_API_KEY"),
        ("scripted/follow-injection", ["a=python x.py"], "not served as a model"),
        ("reference/other", ["a=python x.py"], "the reference model is reference/stochastic"),
        ("scripted/oracle", [], "--agent-model goes with --agent or --agent-file"),
    ],
)
def test_a_bad_agent_model_is_one_line_before_any_run(monkeypatch, model, agents, says):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(UsageError) as err:
        declare_programs(agents, [], 60.0, model=model)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_the_agent_model_joins_the_subject_identity_and_never_its_key(monkeypatch, openai_up):
    (spec,) = declare_programs([f"a={sys.executable} -c pass"], [], 60.0, model="openai/gpt-test")
    config = ExternalAgent(spec).config()
    assert config["model"]["spec"] == "openai/gpt-test" and config["model"]["request_seed"]
    assert KEY not in json.dumps(config) and "sk-" not in json.dumps(config)
    (bare,) = declare_programs([f"a={sys.executable} -c pass"], [], 60.0)
    assert "model" not in ExternalAgent(bare).config()  # an agent audited without a proxy keeps its hash


def test_an_agent_ended_by_its_failing_provider_is_a_provider_failure(sandbox, tmp_path, monkeypatch):
    """The last model call got the upstream's 500 and the agent then exited in error: the provider
    failed (provider_invalid, retried), as for a model subject; its own 4xx would be the agent's."""
    with FakeProvider(accept_key=KEY) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        fake.queue(500, {"error": {"message": "overloaded"}})
        plan = {"steps": [], "model_calls": [{"stream": False}], "exit_on_error": True}
        record, report, _ = audited(sandbox, tmp_path, plan, "openai/gpt-4o-mini")
    assert report["answers"][0]["status"] == 500
    assert record.status == "provider_invalid" and record.error is not None
    assert record.error.kind == "provider" and "upstream HTTP 500" in record.error.message
