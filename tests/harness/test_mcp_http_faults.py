"""The noisy condition over the MCP HTTP face: each fault the noise layer draws for a `tools/call` is real
HTTP on a 127.0.0.1 socket, read here by a raw client (httpx) speaking streamable HTTP's JSON-RPC.

Most tests run the face in a thread of this process, composed as `mcp serve` composes it (the condition's
layers from `for_run` with the run's seed, `build_server`, `http_app`, uvicorn on a real socket), so the
run's events can be compared with the same calls made in process. One test drives the CLI itself.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import uvicorn

from agentrel.dsl.api import RunFacts, Verdict
from agentrel.harness.conditions.http_faults import INCOMPLETE, for_layers, truncated
from agentrel.harness.conditions.layers import for_run
from agentrel.harness.conditions.model import BUILTIN, Condition, Fault, resolve_condition
from agentrel.harness.conditions.noise import RETRY_AFTER_S
from agentrel.harness.mcp.http import http_app, listen, url_of
from agentrel.harness.mcp.server import build_server
from agentrel.harness.results.event import Event
from agentrel.harness.run.episode import PreparedTask, prepare
from agentrel.harness.run.matrix import run_seed
from agentrel.harness.run.session import RunSession
from agentrel.harness.tasks import load_suite
from tests.harness.test_mcp import REPO, server_env, wait_for_log

TASK = "csm-double-charge"
REFUND = {"payment_id": 10303, "amount": "4120.00", "reason": "Duplicate charge"}
READ = ("list_payments", {"account_id": 10301})
DELAY_S = 0.6  # the face's withholding delay: past SHORT_S, well within LONG_S
SHORT_S = 0.2  # a client that gives up before the answer would come
LONG_S = 10.0  # a client that outwaits the delay
ACCEPT = {"Accept": "application/json, text/event-stream"}
PROTOCOL = "2025-11-25"


@pytest.fixture(scope="module")
def prepared(sandbox) -> PreparedTask:
    return prepare(sandbox, load_suite(patterns=[TASK])[0])


@dataclass
class Served:
    url: str = ""
    log: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    verdict: Verdict | None = None


@contextmanager
def face(
    sandbox, prepared: PreparedTask, condition: Condition, run_index: int = 1, delay_s: float = DELAY_S
) -> Iterator[Served]:
    """The run served over HTTP until the block ends; then it is finished, so `verdict` and `events` are
    the run's."""
    seed = run_seed(TASK, condition.name, run_index)
    layers = for_run(condition, prepared, seed).layers
    served, ready, done = Served(), threading.Event(), Future[None]()
    web: list[uvicorn.Server] = []

    async def main() -> None:
        async with RunSession(sandbox, prepared, seed=seed, layers=layers) as session:
            faults = for_layers(layers, delay_s)
            app = http_app(build_server(session, faults, served.log.append), host="127.0.0.1", faults=faults)
            sock = listen("127.0.0.1", 0)
            server = uvicorn.Server(uvicorn.Config(app, log_config=None, timeout_graceful_shutdown=1))
            web.append(server)
            served.url = url_of(sock)
            serving = asyncio.ensure_future(server.serve(sockets=[sock]))
            while not server.started and not serving.done():
                await asyncio.sleep(0.01)
            ready.set()
            with faults.quiet_cuts() if faults is not None else nullcontext():
                await serving
            sock.close()
            finished = await session.finish(RunFacts(final_message=None))
            served.verdict, served.events = finished.verdict, session.events

    def run() -> None:
        try:
            asyncio.run(main())
            done.set_result(None)
        except BaseException as exc:
            done.set_exception(exc)
        finally:
            ready.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(60), "the face did not start"
    try:
        if done.done():
            done.result()  # it failed to start: raise why
        yield served
    finally:
        if web:
            web[0].should_exit = True
        thread.join(60)
    done.result()


class RawClient:
    """MCP streamable HTTP by hand: initialize, then one POST per tools/call."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(headers=ACCEPT, timeout=LONG_S)
        self.last_id = 0
        opened = self.post(
            "initialize",
            {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
        )
        assert opened.status_code == 200, opened.text
        self.http.headers.update(
            {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": PROTOCOL}
        )
        note = self.http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert note.status_code == 202

    def post(self, method: str, params: dict[str, Any], timeout: float = LONG_S) -> httpx.Response:
        self.last_id += 1
        body = {"jsonrpc": "2.0", "id": self.last_id, "method": method, "params": params}
        return self.http.post(self.url, json=body, timeout=timeout)

    def call(self, tool: str, args: dict[str, Any], timeout: float = LONG_S) -> httpx.Response:
        return self.post("tools/call", {"name": tool, "arguments": args}, timeout)

    def close(self) -> None:
        self.http.close()


@contextmanager
def client(url: str) -> Iterator[RawClient]:
    raw = RawClient(url)
    try:
        yield raw
    finally:
        raw.close()


def answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of an SSE response (the SDK answers a POST as an event stream)."""
    assert response.headers["content-type"].startswith("text/event-stream")
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    assert len(data) == 1, response.text
    message: dict[str, Any] = json.loads(data[0])
    return message


def aimed_at_writes(fault: Fault) -> Condition:
    return Condition.model_validate(
        {
            "name": f"{fault.replace('_', '-')}-writes",
            "noisy": {"failure_rate": 1.0, "faults": [fault], "tools": "write"},
        }
    )


def fault_events(served: Served) -> list[tuple[Any, ...]]:
    return [(e.kind, e.ordinal, e.tool, e.detail["fault"], e.detail["executed"]) for e in served.events]


def test_a_clean_run_answers_every_call_with_a_normal_200(sandbox, prepared):
    with face(sandbox, prepared, BUILTIN["clean"]) as served, client(served.url) as c:
        responses = [c.call(*READ), c.call("issue_refund", REFUND)]
    assert [r.status_code for r in responses] == [200, 200]
    assert [answer(r)["result"]["isError"] for r in responses] == [False, False]
    assert json.loads(answer(responses[1])["result"]["content"][0]["text"])["refunded"]["payment_id"] == 10303
    assert served.events == [] and served.log == []
    assert served.verdict is not None and served.verdict.mutated


@pytest.mark.parametrize(("fault", "status"), [("server_error", 500), ("rate_limited", 429)])
def test_a_server_error_or_rate_limit_is_that_http_status_and_the_refund_never_runs(
    sandbox, prepared, fault, status
):
    with face(sandbox, prepared, aimed_at_writes(fault)) as served, client(served.url) as c:
        read = c.call(*READ)  # out of the condition's scope: answered as ever
        refused = c.call("issue_refund", REFUND)
    assert read.status_code == 200 and not answer(read)["result"]["isError"]
    assert refused.status_code == status
    assert refused.headers["content-type"] == "application/json"
    assert refused.json()["id"] == c.last_id and "error" in refused.json()
    assert refused.headers.get("retry-after") == (str(RETRY_AFTER_S) if fault == "rate_limited" else None)
    assert fault_events(served) == [("fault", 2, "issue_refund", fault, False)]
    assert served.verdict is not None and not served.verdict.mutated


def test_a_malformed_answer_is_a_well_framed_sse_event_whose_json_does_not_parse(sandbox, prepared):
    with face(sandbox, prepared, aimed_at_writes("malformed")) as served, client(served.url) as c:
        cut = c.call("issue_refund", REFUND)
    assert cut.status_code == 200 and cut.headers["content-type"].startswith("text/event-stream")
    assert int(cut.headers["content-length"]) == len(cut.content)  # read whole, not a broken stream
    assert cut.content.startswith(b"event: message\r\ndata: {") and cut.content.endswith(b"\r\n\r\n")
    with pytest.raises(json.JSONDecodeError):
        answer(cut)
    assert fault_events(served) == [("fault", 1, "issue_refund", "malformed", True)]
    assert served.verdict is not None and served.verdict.mutated  # the refund ran; only its answer broke


def test_an_empty_answer_is_a_200_with_an_empty_result(sandbox, prepared):
    with face(sandbox, prepared, aimed_at_writes("empty")) as served, client(served.url) as c:
        empty = c.call("issue_refund", REFUND)
    assert empty.status_code == 200
    assert answer(empty)["result"] == {"content": [{"type": "text", "text": ""}], "isError": False}
    assert fault_events(served) == [("fault", 1, "issue_refund", "empty", True)]


@pytest.mark.parametrize("fault", ["timeout", "lost_response"])
def test_a_timeout_or_lost_response_never_answers_and_only_a_lost_one_moved_the_money(
    sandbox, prepared, fault, caplog
):
    caplog.set_level(logging.ERROR, logger="uvicorn.error")
    with face(sandbox, prepared, aimed_at_writes(fault)) as served, client(served.url) as c:
        t0 = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):  # the client's own timeout fires first
            c.call("issue_refund", REFUND, timeout=SHORT_S)
        with pytest.raises(httpx.RemoteProtocolError):  # outwaited: the connection closes, no answer
            c.call("issue_refund", REFUND, timeout=LONG_S)
        assert time.monotonic() - t0 >= SHORT_S + DELAY_S
        assert c.call(*READ).status_code == 200  # the session goes on
    ran = fault == "lost_response"
    assert fault_events(served) == [("fault", n, "issue_refund", fault, ran) for n in (1, 2)]
    verdict = served.verdict
    assert verdict is not None and verdict.mutated is ran
    if ran:  # a blind retry of a lost response refunds twice, as the state shows
        assert verdict.outcome == "FAIL_DAMAGE" and "refund issued twice" in {e.rule for e in verdict.events}
    assert INCOMPLETE not in caplog.messages  # the face cut it on purpose: no error line for that


def test_the_same_run_index_meets_the_same_faults_over_http_as_in_process(sandbox, prepared):
    """Run 12 of the built-in noisy condition, over these calls, draws malformed on call 4, a lost
    response on the refund (7) and a timeout on call 8; the events are the in-process ones, field for
    field, and each fault is on the wire as its kind says."""
    calls = [
        ("get_case", {"number": "CS0110301"}),
        READ,
        ("get_account", {"number": "ACC0110301"}),
        READ,
        ("list_refunds", {}),
        ("get_case", {"number": "CS0110301"}),
        ("issue_refund", REFUND),
        READ,
    ]
    noisy, run_index = BUILTIN["noisy"], 12
    seed = run_seed(TASK, noisy.name, run_index)

    async def in_process() -> list[Event]:
        layers = for_run(noisy, prepared, seed).layers
        async with RunSession(sandbox, prepared, seed=seed, layers=layers) as session:
            for tool, args in calls:
                await session.call(tool, args)
            return session.events

    expected = asyncio.run(in_process())
    assert [(e.ordinal, e.detail["fault"]) for e in expected] == [
        (4, "malformed"),
        (7, "lost_response"),
        (8, "timeout"),
    ]
    with face(sandbox, prepared, noisy, run_index=run_index) as served, client(served.url) as c:
        wire: list[int | str] = []
        for tool, args in calls:
            try:
                wire.append(c.call(tool, args).status_code)
            except httpx.RemoteProtocolError:
                wire.append("closed")
    assert served.events == expected
    assert wire == [200, 200, 200, 200, 200, 200, "closed", "closed"]
    assert served.log == [
        "call 4 list_payments: fault malformed (it ran), delivered as HTTP 200 with its JSON cut partway",
        "call 7 issue_refund: fault lost_response (it ran), delivered as no answer for 0.6 s,"
        " then the connection closed",
        "call 8 list_payments: fault timeout (it did not run), delivered as no answer for 0.6 s,"
        " then the connection closed",
    ]


def test_the_cli_serves_a_yaml_condition_with_its_fault_delay(sandbox, tmp_path):
    """`mcp serve --condition FILE --fault-delay-s`: the lost refund times the client out, and the verdict
    the server reports at SIGTERM shows it committed."""
    condition = tmp_path / "lost.yaml"
    condition.write_text(
        "name: lost-response-writes\nnoisy: {failure_rate: 1.0, faults: [lost_response], tools: write}\n"
    )
    assert resolve_condition(str(condition)) == aimed_at_writes("lost_response")
    verdict_file, errlog = tmp_path / "verdict.json", tmp_path / "stderr.log"
    args = [
        "--transport",
        "http",
        "--port",
        "0",
        "--condition",
        str(condition),
        "--fault-delay-s",
        str(DELAY_S),
    ]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentrel.harness.cli",
            "mcp",
            "serve",
            "--task",
            TASK,
            *args,
            "--verdict-out",
            str(verdict_file),
        ],
        cwd=REPO,
        env={**os.environ, **server_env()},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=errlog.open("w"),
    )
    try:
        url = wait_for_log(errlog, r"listening on (\S+)", proc)
        with client(url) as c, pytest.raises(httpx.ReadTimeout):
            c.call("issue_refund", REFUND, timeout=SHORT_S)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, errlog.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    log = errlog.read_text()
    assert "call 1 issue_refund: fault lost_response (it ran), delivered as no answer for 0.6 s" in log
    verdict = json.loads(verdict_file.read_text())
    assert verdict["mutated"] is True and verdict["requirements"][0]["met"] is True


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (
            b'event: message\r\ndata: {"jsonrpc":"2.0","id":3,"result":{"content":[]}}\r\n\r\n',
            "text/event-stream",
        ),
        (b'{"jsonrpc":"2.0","id":3,"result":{"content":[]}}', "application/json"),
    ],
)
def test_a_cut_body_keeps_its_framing_and_loses_its_json(body, content_type):
    cut = truncated(body, content_type)
    assert 0 < len(cut) < len(body)
    if content_type == "text/event-stream":
        assert cut.startswith(b"event: message\r\ndata: {") and cut.endswith(b"\r\n\r\n")
        cut = cut.split(b"data: ", 1)[1].strip()
    with pytest.raises(json.JSONDecodeError):
        json.loads(cut)
