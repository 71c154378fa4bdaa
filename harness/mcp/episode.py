"""One audit run's tools served over MCP streamable HTTP on 127.0.0.1, for an external agent program.

    async with EpisodeFace(task, tools, call) as face:   # port chosen by the OS, a fresh bearer token
        ... start the agent with face.url and face.token ...
    face.connected   # the agent established its MCP session
    face.died        # the server stopped while the agent ran: AgentRel failed, not the agent

Every `tools/call` goes to `call`, the run's pipeline entry, so the calls recorded there (AgentRel's own
boundary) are what the agent did, whatever it logs. The face is the same gated app `mcp serve` uses
(Host/Origin check, bearer token, one MCP session), in this process's event loop.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import uvicorn

from agentrel.harness.mcp.http import http_app, listen, start_served, stop_served, url_of
from agentrel.harness.mcp.server import Log, tool_server
from agentrel.harness.tasks import Task
from agentrel.sandbox.tools import Tool, ToolResult

STOP_GRACE_S = 1  # the agent's process group is gone by then: no connection should linger


class EpisodeFace:
    def __init__(
        self,
        task: Task,
        tools: Mapping[str, Tool],
        call: Callable[[str, Any], Awaitable[ToolResult]],
        log: Log | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        fresh_token: bool = True,
        allowed_hosts: tuple[str, ...] = (),
    ) -> None:
        """`token`: the bearer to require; without one, a fresh one (an agent program's run) unless
        `fresh_token` is off (a person's session on loopback, as `mcp serve` allows)."""
        self.token = token or (secrets.token_urlsafe(32) if fresh_token else None)
        self.host, self.port = host, port
        server = tool_server(task, tools, call, None, log)
        self._app = http_app(server, host=host, extra_hosts=allowed_hosts, token=self.token)
        self.url = ""
        self._web: uvicorn.Server | None = None
        self._serving: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def connected(self) -> bool:
        """The agent opened its MCP session (initialize answered): it reached the run's tools."""
        return bool(getattr(self._app, "taken", False))

    @property
    def died(self) -> bool:
        return self._serving is not None and self._serving.done() and not self._stopping

    async def __aenter__(self) -> EpisodeFace:
        sock = listen(self.host, self.port)
        self.url = url_of(sock)
        config = uvicorn.Config(
            self._app,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=STOP_GRACE_S,
        )
        self._web, self._serving = await start_served(config, sock, "the MCP server")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stopping = True
        if self._web is None or self._serving is None:
            return
        await stop_served(self._web, self._serving, STOP_GRACE_S)
