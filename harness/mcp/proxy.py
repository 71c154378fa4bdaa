"""`agentrel mcp stdio-proxy`: the run's MCP endpoint on stdio, for agents that spawn their MCP server.

An agent framework configured with a stdio MCP server command (`agentrel mcp stdio-proxy`) gets the run's
tools: each JSON-RPC message read on stdin is sent to AGENTREL_MCP_URL with the bearer token
AGENTREL_MCP_TOKEN (from the environment, never argv), and each message the endpoint sends back is written
to stdout. The proxy holds no state of its own: the run, its session and its record are the endpoint's.
"""

from __future__ import annotations

import sys

import anyio
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp.shared._httpx_utils import create_mcp_http_client


async def stdio_proxy(url: str, token: str | None) -> None:
    """Relay until stdin closes or the endpoint ends the session."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (remote_read, remote_write),
        stdio_server() as (local_read, local_write),
        anyio.create_task_group() as tg,
    ):

        async def up() -> None:
            async for message in local_read:
                if isinstance(message, Exception):  # a line that is not JSON-RPC: say so, keep going
                    print(f"agentrel mcp stdio-proxy: unreadable message: {message}", file=sys.stderr)
                    continue
                await remote_write.send(message)
            tg.cancel_scope.cancel()

        async def down() -> None:
            async for message in remote_read:
                if isinstance(message, Exception):
                    print(f"agentrel mcp stdio-proxy: {type(message).__name__}: {message}", file=sys.stderr)
                    continue
                await local_write.send(message)
            tg.cancel_scope.cancel()

        tg.start_soon(up)
        tg.start_soon(down)
