"""The noisy condition over the MCP HTTP face: the fault the noise layer drew for a `tools/call`, delivered
on the socket instead of inside the tool result.

- `server_error`: HTTP 500 with a JSON-RPC error body;
- `rate_limited`: HTTP 429 with `Retry-After` (the layer's hint, in seconds);
- `malformed`: HTTP 200 whose JSON is cut partway, still well framed (`Content-Length`, and in SSE mode
  a terminated event), so it is read whole and fails to parse;
- `timeout`, `lost_response`: nothing for `delay_s` (past a client's timeout), then the connection closed
  with no answer; only `lost_response` ran the call;
- `empty`: HTTP 200 with an empty tool result, an answer, unlike a timeout.

The face wraps the SDK's ASGI app. For a POST carrying a `tools/call` of a tool the layer may fault, it
holds whatever the SDK sends until the SDK is done with the request. Meanwhile the server's tool handler,
which receives the layer's `Faulted` result, hands its draw to `deliver` under the request's JSON-RPC id;
the face then releases the held response unchanged or renders the draw in its place. Which fault, whether
the tool ran and the fault's event are the noise layer's alone (the run's own stream): this module only
decides the bytes, so run N meets the same faults here as in process.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakSet

import anyio
import mcp_types as types
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentrel.harness.conditions.noise import FaultDraw, Faulted, NoiseLayer
from agentrel.harness.run.pipeline import Layer
from agentrel.sandbox.tools import ToolResult

DEFAULT_DELAY_S = 30.0  # as long as the in-process timeout says it waited
SSE = "text/event-stream"
SESSION_HEADER = b"mcp-session-id"
# uvicorn's line for a response cut short, which this face does on purpose to a withheld answer.
INCOMPLETE = "ASGI callable returned without completing response."
_DATA = re.compile(rb"data: ?(\{[^\r\n]*)")  # an SSE event's data line carrying a JSON object


def for_layers(layers: Sequence[Layer], delay_s: float = DEFAULT_DELAY_S) -> HttpFaults | None:
    """The face for a run whose pipeline may fault calls, or None when none of its layers can."""
    tools = {t for layer in layers if isinstance(layer, NoiseLayer) for t in layer.in_scope}
    return HttpFaults(tools, delay_s) if tools else None


class HttpFaults:
    def __init__(self, tools: set[str], delay_s: float) -> None:
        self.tools = frozenset(tools)  # only their calls are held: every other answer streams as it comes
        self.delay_s = delay_s
        self._holding: set[str] = set()  # the JSON-RPC ids of the calls whose answers are being held
        self._drawn: dict[str, FaultDraw] = {}
        self._cutting: WeakSet[asyncio.Task[Any]] = WeakSet()

    def deliver(self, request_id: types.RequestId | None, result: ToolResult) -> ToolResult:
        """The tool result the SDK should answer with. A draw this face renders is kept for the request
        that carried the call; for `malformed` the SDK answers with the tool's real result, cut on the
        wire, where in process the tool result's text itself is cut. A call whose answer is not held (its
        client left, or its id is one the face does not read) meets the fault in the tool result, as on
        stdio."""
        if not isinstance(result, Faulted) or request_id is None or result.draw.fault == "empty":
            return result
        key = _key(request_id)
        if key not in self._holding:
            return result
        self._drawn[key] = result.draw
        if result.draw.fault == "malformed" and result.draw.answer is not None:
            return result.draw.answer
        return result

    def wire(self, draw: FaultDraw) -> str:
        """How the fault reaches the client, for the server's log."""
        if draw.fault in ("timeout", "lost_response"):
            return f"no answer for {self.delay_s:g} s, then the connection closed"
        return {
            "server_error": "HTTP 500",
            "rate_limited": f"HTTP 429 with Retry-After {draw.retry_after_s}",
            "malformed": "HTTP 200 with its JSON cut partway",
            "empty": "HTTP 200 with an empty result",
        }[draw.fault]

    def around(self, app: ASGIApp) -> ASGIApp:
        async def face(scope: Scope, receive: Receive, send: Send) -> None:
            await self._serve(app, scope, receive, send)

        return face

    @contextmanager
    def quiet_cuts(self, logger: str = "uvicorn.error") -> Iterator[None]:
        """While serving: uvicorn's error line for a cut response, except for the ones cut here."""
        quiet = _QuietCuts(self._cutting)
        logging.getLogger(logger).addFilter(quiet)
        try:
            yield
        finally:
            logging.getLogger(logger).removeFilter(quiet)

    async def _serve(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        read, body = await _read_body(receive)
        replay = _replaying(read, receive)
        call = self._call_in_scope(body)
        if call is None:
            await app(scope, replay, send)
            return
        key, request_id = call
        held = _Held()
        self._holding.add(key)
        try:
            await app(scope, replay, held.send)
        finally:
            self._holding.discard(key)
            draw = self._drawn.pop(key, None)
        start = held.start()
        if draw is None or start is None:
            await held.release(send)
        elif draw.fault in ("server_error", "rate_limited"):
            await _send_error(send, start, request_id, draw)
        elif draw.fault == "malformed":
            await _send_cut(send, start, held.body())
        else:
            await self._withhold(start, replay, send)

    def _call_in_scope(self, body: bytes | None) -> tuple[str, types.RequestId] | None:
        """The JSON-RPC id of a `tools/call` request this face may have to fault, else None (the SDK
        answers anything else, including a body it cannot parse)."""
        if body is None:
            return None
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return None
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return None
        request_id, params = message.get("id"), message.get("params")
        if not isinstance(request_id, int | str) or isinstance(request_id, bool):
            return None
        if not isinstance(params, dict) or params.get("name") not in self.tools:
            return None
        return _key(request_id), request_id

    async def _withhold(self, start: Message, receive: Receive, send: Send) -> None:
        with anyio.move_on_after(self.delay_s):
            while (await receive())["type"] != "http.disconnect":
                pass
            return  # the client gave up first: there is no one left to answer
        # Still connected: the headers, then the connection closed mid-body (uvicorn closes it when the
        # app returns with the response unfinished), so no client can read an answer into it.
        await send(start)
        task = asyncio.current_task()
        if task is not None:
            self._cutting.add(task)


def _key(request_id: types.RequestId) -> str:
    return json.dumps(request_id)  # 1 and "1" are different requests


async def _read_body(receive: Receive) -> tuple[list[Message], bytes | None]:
    """The messages read and the whole body; None for the body when it is not worth reading (past the
    SDK's own size limit, which the SDK then enforces) or the client left."""
    read: list[Message] = []
    body = b""
    while True:
        message = await receive()
        read.append(message)
        if message["type"] != "http.request":
            return read, None
        body += message.get("body", b"")
        if len(body) > DEFAULT_MAX_REQUEST_BODY_SIZE:
            return read, None
        if not message.get("more_body", False):
            return read, body


def _replaying(read: list[Message], receive: Receive) -> Receive:
    pending = deque(read)

    async def replay() -> Message:
        return pending.popleft() if pending else await receive()

    return replay


@dataclass
class _Held:
    messages: list[Message] = field(default_factory=list)

    async def send(self, message: Message) -> None:
        self.messages.append(message)

    async def release(self, send: Send) -> None:
        for message in self.messages:
            await send(message)

    def start(self) -> Message | None:
        return next((m for m in self.messages if m["type"] == "http.response.start"), None)

    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages if m["type"] == "http.response.body")


async def _send_error(send: Send, start: Message, request_id: types.RequestId, draw: FaultDraw) -> None:
    if draw.fault == "rate_limited":
        status, message = 429, f"too many requests; retry after {draw.retry_after_s} s"
        extra = [(b"retry-after", str(draw.retry_after_s).encode())]
    else:
        status, message, extra = 500, "internal server error", []
    error = types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=types.INTERNAL_ERROR, message=message)
    )
    body = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *_session(start),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _send_cut(send: Send, start: Message, body: bytes) -> None:
    cut = truncated(body, _content_type(start))
    kept = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
    headers = [*kept, (b"content-length", str(len(cut)).encode())]
    await send({"type": "http.response.start", "status": start["status"], "headers": headers})
    await send({"type": "http.response.body", "body": cut})


def truncated(body: bytes, content_type: str) -> bytes:
    """The response cut partway through its JSON yet still well framed: in SSE mode the event carrying
    the JSON keeps its terminator, so a client's SSE parser dispatches it and the JSON then fails."""
    if content_type.startswith(SSE):
        found = list(_DATA.finditer(body))
        if found:
            data = found[-1]
            cut = data.start(1) + max(1, (data.end(1) - data.start(1)) // 2)
            return body[:cut] + body[data.end(1) :]
    return body[: max(1, len(body) // 2)]


def _content_type(start: Message) -> str:
    for name, value in start.get("headers", []):
        if name.lower() == b"content-type":
            return bytes(value).decode("latin-1").lower()
    return ""


def _session(start: Message) -> list[tuple[bytes, bytes]]:
    return [(k, v) for k, v in start.get("headers", []) if k.lower() == SESSION_HEADER]


class _QuietCuts(logging.Filter):
    def __init__(self, cutting: WeakSet[asyncio.Task[Any]]) -> None:
        super().__init__()
        self.cutting = cutting

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != INCOMPLETE:
            return True
        try:
            task = asyncio.current_task()
        except RuntimeError:  # logged outside an event loop: not one of ours
            return True
        return task not in self.cutting
