"""The model proxy: an agent program's model calls go through AgentRel (`audit --agent-model SPEC`).

Per run, a loopback HTTP server (127.0.0.1, a port the OS chooses) takes OpenAI Chat Completions
(`/v1/chat/completions`), OpenAI Responses (`/v1/responses`) and Anthropic Messages (`/v1/messages`),
whole or streamed (server-sent events), and forwards each to the audit's upstream (`model_upstream`):

- the agent holds only a per-run token (`AGENTREL_MODEL_API_KEY`, also as OPENAI_API_KEY and
  ANTHROPIC_API_KEY); a request without it (`Authorization: Bearer` or `x-api-key`) is refused with a
  401 and counted. The token is stripped and the auditor's key put in its place, upstream only;
- the request's `model` is replaced by the audit's (the subject's model is the auditor's statement), a
  Chat Completions request gets the run's seed for its ordinal (`chat.request_seed`), and a streamed one
  asks for its usage (`stream_options.include_usage`) so its tokens are measured;
- every call is recorded (`ModelCall`): the request and the answer (keys and the token redacted,
  bounded), status, served model id, tokens as the upstream counted them, the seed sent, and any error;
- what the upstream does wrong reaches the agent as an error and stays in the record: a transport
  failure or a 200 that is not JSON is a 502, an HTTP error is passed on with its status, and a stream
  cut before its end event gets an `error` event (which the OpenAI and Anthropic SDKs raise).

A scripted upstream is answered here, without a network (`scripted_model`).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agentrel.harness.agents.base import Usage
from agentrel.harness.agents.chat import DEFAULT_TIMEOUT_S, request_seed
from agentrel.harness.agents.model_upstream import Upstream
from agentrel.harness.agents.model_wire import (
    PATHS,
    UPSTREAM_PATHS,
    Protocol,
    Reading,
    StreamReader,
    read_body,
)
from agentrel.harness.agents.scripted_model import ScriptedRun
from agentrel.harness.mcp.http import listen, start_served, stop_served
from agentrel.harness.redact import redact

TOKEN_PREFIX = "agentrel-run-"
KEEP_CHARS = 256 * 1024  # of each call's request and answer, in the transcript
STOP_GRACE_S = 1
FORWARDED = ("anthropic-beta",)  # the only request headers passed upstream besides the auditor's own


@dataclass
class ModelCall:
    """One model call through the proxy, as the transcript keeps it."""

    ordinal: int
    protocol: Protocol
    asked_model: str | None = None
    stream: bool = False
    seed: int | None = None
    status: int | None = None
    served_model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    elapsed_ms: float = 0.0
    error: str | None = None
    request: str = ""
    response: str = ""

    def read(self, reading: Reading) -> None:
        self.input_tokens, self.output_tokens = reading.input_tokens, reading.output_tokens
        self.served_model = reading.served

    def entry(self) -> dict[str, Any]:
        return {"role": "model_call", **self.__dict__}


class ModelProxy:
    """`async with ModelProxy(upstream, seed, scripted) as proxy:` then start the agent with
    `proxy.environment()`; afterwards `proxy.calls`, `proxy.usage()`, `proxy.served_model()`."""

    def __init__(
        self,
        upstream: Upstream,
        run_seed: str,
        scripted: ScriptedRun | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.upstream, self.run_seed, self.scripted = upstream, run_seed, scripted
        self.token = TOKEN_PREFIX + secrets.token_urlsafe(24)
        self.calls: list[ModelCall] = []
        self.refused = 0
        self._secrets = [*upstream.secrets, self.token]
        self._timeout_s = timeout_s
        self._client: httpx.AsyncClient | None = None
        self._web: uvicorn.Server | None = None
        self._serving: asyncio.Task[None] | None = None
        self.root = ""
        self._app = Starlette(routes=[Route("/v1/{rest:path}", self._handle, methods=["GET", "POST"])])

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (ends in /v1); Anthropic clients take `root`."""
        return self.root + "/v1"

    def environment(self) -> dict[str, str]:
        """The variables that point an agent program's model client at this proxy, with its token."""
        return {
            "AGENTREL_MODEL_BASE_URL": self.base_url,
            "AGENTREL_MODEL_API_KEY": self.token,
            "AGENTREL_MODEL": self.upstream.model,
            "OPENAI_BASE_URL": self.base_url,
            "OPENAI_API_KEY": self.token,
            "ANTHROPIC_BASE_URL": self.root,
            "ANTHROPIC_API_KEY": self.token,
        }

    def usage(self) -> Usage:
        """Tokens as the upstream counted them, over every answered call."""
        answered = [c for c in self.calls if c.status == 200]
        return Usage(
            sum(c.input_tokens for c in answered), sum(c.output_tokens for c in answered), len(answered)
        )

    def served_model(self) -> str | None:
        return next((c.served_model for c in self.calls if c.served_model), None)

    def model_calls(self) -> list[dict[str, Any]]:
        """Each answered call's ordinal, seed sent and served model id (as a model subject's run has)."""
        return [
            {"ordinal": c.ordinal, "seed": c.seed, "served_model": c.served_model}
            for c in self.calls
            if c.status == 200
        ]

    def upstream_fault(self) -> str | None:
        """Why the run's last model call failed on the provider's side (a 5xx, a 502 for an unreachable
        upstream or a body that is not JSON, a cut stream), or None: an agent program that then ends in
        error was ended by its provider, as a model subject whose provider fails."""
        last = self.calls[-1] if self.calls else None
        if (
            last is None
            or last.error is None
            or (last.status is not None and last.status < 500 and last.status != 200)
        ):
            return None
        return last.error

    def transcript(self) -> list[dict[str, Any]]:
        summary = {"role": "model_proxy", "model": self.upstream.spec, "calls": len(self.calls)}
        return [c.entry() for c in self.calls] + [{**summary, "refused": self.refused}]

    # --- serving ---
    async def __aenter__(self) -> ModelProxy:
        sock = _listen()
        self.root = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self._client = httpx.AsyncClient(timeout=self._timeout_s, follow_redirects=False)
        config = uvicorn.Config(
            self._app, log_config=None, log_level="warning", access_log=False, lifespan="off"
        )
        config.timeout_graceful_shutdown = STOP_GRACE_S
        self._web, self._serving = await start_served(config, sock, "the model proxy")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._web is not None and self._serving is not None:
            await stop_served(self._web, self._serving, STOP_GRACE_S)
        if self._client is not None:
            await self._client.aclose()

    # --- one request ---
    def _authorized(self, request: Request) -> bool:
        given = request.headers.get("x-api-key", "")
        auth = request.headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            given = given or auth[7:].strip()
        return bool(given) and secrets.compare_digest(given.encode(), self.token.encode())

    def _scrub(self, text: str) -> str:
        return redact(text, self._secrets)

    async def _handle(self, request: Request) -> Response:
        if not self._authorized(request):
            self.refused += 1
            return _error(
                401, "not this run's model token: use AGENTREL_MODEL_API_KEY", "authentication_error"
            )
        if request.method == "GET":
            if request.url.path == "/v1/models":
                return JSONResponse(
                    {"object": "list", "data": [{"id": self.upstream.model, "object": "model"}]}
                )
            return _error(404, f"no such path {request.url.path}")
        protocol = PATHS.get(request.url.path)
        if protocol is None:
            known = ", ".join(PATHS)
            return _error(404, f"the model proxy serves {known}, not {request.url.path}")
        t0 = time.perf_counter()
        call = ModelCall(len(self.calls) + 1, protocol)
        self.calls.append(call)  # recorded whatever happens next
        raw = await request.body()
        call.request = self._scrub(raw[:KEEP_CHARS].decode("utf-8", errors="replace"))
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            body = None
        if not isinstance(body, dict):
            return self._fail(call, 400, "the request body is not a JSON object", t0)
        if protocol not in self.upstream.protocols:
            speaks = " or ".join(p for p, v in PATHS.items() if v in self.upstream.protocols)
            return self._fail(call, 400, f"this run's model ({self.upstream.spec}) is served at {speaks}", t0)
        body = self._rewrite(call, protocol, body)
        if self.scripted is not None:
            return self._scripted(call, body, t0)
        headers = {
            **self.upstream.headers,
            **{h: request.headers[h] for h in FORWARDED if h in request.headers},
        }
        url = self.upstream.base_url.rstrip("/") + UPSTREAM_PATHS[protocol]
        if call.stream:
            return await self._stream(call, url, headers, body, t0)
        return await self._forward(call, url, headers, body, t0)

    def _rewrite(self, call: ModelCall, protocol: Protocol, body: dict[str, Any]) -> dict[str, Any]:
        asked = body.get("model")
        call.asked_model = asked if isinstance(asked, str) else None
        call.stream = body.get("stream") is True
        body = {**body, "model": self.upstream.model}
        if protocol == "chat" and self.upstream.sends_seed:
            call.seed = body["seed"] = request_seed(self.run_seed, call.ordinal)
        if protocol == "chat" and call.stream:
            options = body.get("stream_options")
            body["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
        return body

    def _fail(self, call: ModelCall, status: int, message: str, t0: float) -> Response:
        call.status, call.error = status, message
        call.elapsed_ms = _ms(t0)
        return _error(status, message)

    def _scripted(self, call: ModelCall, body: dict[str, Any], t0: float) -> Response:
        assert self.scripted is not None
        call.status = 200
        if call.stream:
            events = self.scripted.stream(body)
            reader = StreamReader("chat")
            for event in events:
                reader.feed(event)
            call.read(reader.reading)
            call.response = b"".join(events).decode()[:KEEP_CHARS]
            call.elapsed_ms = _ms(t0)
            return StreamingResponse(_iterate(events), media_type="text/event-stream")
        answer = self.scripted.answer(body)
        call.read(read_body("chat", answer))
        call.response = json.dumps(answer)[:KEEP_CHARS]
        call.elapsed_ms = _ms(t0)
        return JSONResponse(answer)

    async def _forward(
        self, call: ModelCall, url: str, headers: dict[str, str], body: dict[str, Any], t0: float
    ) -> Response:
        assert self._client is not None
        try:
            resp = await self._client.post(url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            return self._fail(call, 502, f"the upstream could not be reached ({type(exc).__name__})", t0)
        text = self._scrub(resp.text)  # an upstream may echo the key in any body
        call.response = text[:KEEP_CHARS]
        if resp.status_code != 200:
            call.status, call.error = resp.status_code, f"upstream HTTP {resp.status_code}: {text[:200]}"
            call.elapsed_ms = _ms(t0)
            kind = resp.headers.get("content-type", "application/json")
            return Response(text, resp.status_code, media_type=kind.split(";")[0])
        try:
            answer = json.loads(text)
        except (ValueError, RecursionError):
            kind = resp.headers.get("content-type", "").split(";")[0] or "no content type"
            return self._fail(
                call, 502, f"the upstream answered HTTP 200 with a body that is not JSON ({kind})", t0
            )
        call.status = 200
        call.read(read_body(call.protocol, answer))
        call.elapsed_ms = _ms(t0)
        return Response(text, 200, media_type="application/json")

    async def _stream(
        self, call: ModelCall, url: str, headers: dict[str, str], body: dict[str, Any], t0: float
    ) -> Response:
        assert self._client is not None
        try:
            resp = await self._client.send(
                self._client.build_request("POST", url, json=body, headers=headers), stream=True
            )
        except httpx.HTTPError as exc:
            return self._fail(call, 502, f"the upstream could not be reached ({type(exc).__name__})", t0)
        if resp.status_code != 200:
            try:
                text = self._scrub((await resp.aread()).decode("utf-8", errors="replace"))
            except httpx.HTTPError:
                text = ""
            finally:
                await resp.aclose()
            call.response = text[:KEEP_CHARS]
            call.status, call.error = resp.status_code, f"upstream HTTP {resp.status_code}: {text[:200]}"
            call.elapsed_ms = _ms(t0)
            return Response(text, resp.status_code, media_type="application/json")
        call.status = 200
        return StreamingResponse(self._relay(call, resp, t0), media_type="text/event-stream")

    async def _relay(self, call: ModelCall, resp: httpx.Response, t0: float) -> AsyncIterator[bytes]:
        """Pass the stream on event by event (each redacted whole), reading it as it goes."""
        reader = StreamReader(call.protocol)
        kept: list[str] = []
        size = 0
        pending = b""
        try:
            async for chunk in resp.aiter_bytes():
                pending += chunk.replace(b"\r\n", b"\n")
                *events, pending = pending.split(b"\n\n")
                for event in events:
                    data = self._scrub(event.decode("utf-8", errors="replace")) + "\n\n"
                    reader.feed(data.encode())
                    if size < KEEP_CHARS:
                        kept.append(data)
                        size += len(data)
                    yield data.encode()
        except httpx.HTTPError as exc:
            call.error = f"the upstream's stream broke ({type(exc).__name__})"
        except (asyncio.CancelledError, GeneratorExit):
            # The agent hung up mid-stream: what it was sent so far is still the call's record.
            call.read(reader.reading)
            call.error = "the agent closed the stream before its end"
            call.response, call.elapsed_ms = "".join(kept)[:KEEP_CHARS], _ms(t0)
            raise
        finally:
            await resp.aclose()
        call.read(reader.reading)
        if not reader.reading.ended:
            call.error = call.error or "the upstream's stream ended before its end event"
            event = _error_event(f"AgentRel model proxy: {call.error}")
            kept.append(event.decode())
            yield event
        call.response = "".join(kept)[:KEEP_CHARS]
        call.elapsed_ms = _ms(t0)


def _listen() -> socket.socket:
    return listen("127.0.0.1", 0)  # one owner of how AgentRel listens (TCP_NODELAY, see there)


def _error(status: int, message: str, kind: str = "agentrel_proxy_error") -> JSONResponse:
    """An error body both SDK families read: OpenAI's `error.message`, Anthropic's `type: error`."""
    return JSONResponse({"type": "error", "error": {"type": kind, "message": message}}, status_code=status)


def _error_event(message: str) -> bytes:
    payload = {"type": "error", "error": {"type": "api_error", "message": message}}
    return f"event: error\ndata: {json.dumps(payload)}\n\n".encode()


async def _iterate(events: list[bytes]) -> AsyncIterator[bytes]:
    for event in events:
        yield event


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)
