"""The MCP face over HTTP: which hosts may address it, the gate in front of the SDK's app, its socket.

The SDK's Host/Origin check (DNS-rebinding protection) is on whatever the host, fed the names a
legitimate client may send; the gate asks for the bearer token when there is one, and admits only the
first MCP session, since one server serves one run.
"""

from __future__ import annotations

import asyncio
import hmac
import os
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentrel.harness.conditions.http_faults import HttpFaults
from agentrel.harness.errors import EnvironmentFailure
from agentrel.harness.host_names import LOOPBACK_HOSTS, WILDCARDS, allowed_hosts, is_loopback

__all__ = [
    "LOOPBACK_HOSTS",
    "MCP_PATH",
    "WILDCARDS",
    "allowed_hosts",
    "http_app",
    "is_loopback",
    "listen",
    "url_of",
]

MCP_PATH = "/mcp"


def http_app(
    server: Server[Any],
    *,
    host: str,
    extra_hosts: Sequence[str] = (),
    token: str | None = None,
    faults: HttpFaults | None = None,
) -> ASGIApp:
    """The ASGI app the HTTP face serves on `host`: the gate, the fault face (a noisy run), the SDK's app."""
    hosts = allowed_hosts(host, extra_hosts)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:*" for h in hosts],
        allowed_origins=[f"{scheme}://{h}:*" for h in hosts for scheme in ("http", "https")],
    )
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=security,
        max_sessions=1,
        session_idle_timeout=None,  # the session cannot be replaced, so it must not expire under the agent
    )
    # Behind the gate, so a refused request is never a fault.
    return _Gate(app if faults is None else faults.around(app), token)


class _Gate:
    """In front of the SDK's app: the bearer token, then one MCP session for the whole run.

    The SDK creates a session for any request without a session id (and serves 2026-07-28 requests with no
    session at all), so a second client could act on the run being judged. Here the first session to be
    established is the only one: any later request without a session id is refused, and so is the
    sessionless protocol era.
    """

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.taken = False  # the run's session has been established
        self.opening = False  # a request that may establish it is in flight

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if self.token is not None and not self._authorized(headers.get("authorization", "")):
            await _refusal(401, "a valid bearer token is required", {"WWW-Authenticate": "Bearer"})(
                scope, receive, send
            )
            return
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            supported = ", ".join(HANDSHAKE_PROTOCOL_VERSIONS)
            await _refusal(400, f"this server needs a session: use protocol version {supported}")(
                scope, receive, send
            )
            return
        if headers.get(MCP_SESSION_ID_HEADER) is not None:
            await self.app(scope, receive, send)  # the SDK knows only the one session (or none yet)
            return
        if self.taken or self.opening:
            message = "this server serves one run and its MCP session is taken; start another server"
            await _refusal(409, message)(scope, receive, send)
            return
        self.opening = True
        try:
            await self.app(scope, receive, self._pinning(send))
        finally:
            self.opening = False

    def _authorized(self, authorization: str) -> bool:
        scheme, _, credentials = authorization.partition(" ")
        # Headers arrive decoded as latin-1: back to the bytes the client sent.
        given = credentials.strip().encode("latin-1")
        return scheme.lower() == "bearer" and hmac.compare_digest(given, self.token or b"")

    def _pinning(self, send: Send) -> Send:
        async def pin(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                self.taken |= MCP_SESSION_ID_HEADER in Headers(raw=message.get("headers", []))
            await send(message)

        return pin


def _refusal(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    body = types.JSONRPCError(
        jsonrpc="2.0", id=None, error=types.ErrorData(code=types.INVALID_REQUEST, message=message)
    )
    return Response(
        body.model_dump_json(by_alias=True, exclude_unset=True),
        status_code=status,
        media_type="application/json",
        headers=headers,
    )


def listen(host: str, port: int) -> socket.socket:
    """Bind the HTTP socket before anything else, so a busy port is one clear line and port 0 works.

    Its protocol is named (IPPROTO_TCP): asyncio sets TCP_NODELAY only on sockets that say so, and
    `socket.create_server` makes proto 0, so every answer on a kept-alive connection waited out the
    client's delayed ACK (about 40 ms a call). The model proxy listens the same way."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as create_server does on POSIX
            sock.bind((host, port))
            sock.listen()
        except OSError:
            sock.close()
            raise
        return sock
    except socket.gaierror as exc:
        reason = exc.strerror
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
    raise EnvironmentFailure(f"cannot listen on {host}:{port}: {reason}; choose another --host/--port")


START_TIMEOUT_S = 30.0


class _QuietServer(uvicorn.Server):
    """uvicorn without its signal capture: an audit runs several servers at once in the main thread (each
    run's MCP face and model proxy), and their save-and-restore of SIGINT/SIGTERM handlers would interleave
    and leave a stale handler."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def start_served(
    config: uvicorn.Config, sock: socket.socket, what: str
) -> tuple[uvicorn.Server, asyncio.Task[None]]:
    """Serve `config` on the bound `sock` in this event loop and return once it listens: the server and
    its task (`stop_served` ends them; the socket is closed when serving ends). `what` names it in the
    error when it cannot start."""
    web = _QuietServer(config)

    async def serve() -> None:
        try:
            await web.serve(sockets=[sock])
        finally:
            sock.close()

    serving = asyncio.ensure_future(serve())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_TIMEOUT_S
    # uvicorn exposes only a flag for "listening"; the socket is already bound, so this is short.
    while not web.started:
        if serving.done():
            serving.result()  # raise why it could not start
            raise RuntimeError(f"{what} stopped before it started")
        if loop.time() > deadline:
            raise RuntimeError(f"{what} did not start within {START_TIMEOUT_S:.0f} s")
        await asyncio.sleep(0.002)
    return web, serving


async def stop_served(web: Any, serving: asyncio.Task[Any], grace_s: float) -> None:
    """Stop a uvicorn server (`web`) serving in task `serving`: gracefully first; a connection still open
    (a client that outlived its agent) can hold that, so then forced; only as a last resort the task is
    cancelled. A server that failed while stopping is left be (its run's evidence is elsewhere)."""
    web.should_exit = True
    for force in (False, True):
        web.force_exit = force
        try:
            await asyncio.wait_for(asyncio.shield(serving), grace_s + 2)
            return
        except TimeoutError:
            continue
        except Exception:
            return
    serving.cancel()


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{MCP_PATH}"
