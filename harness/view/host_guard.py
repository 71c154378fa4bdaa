"""The view answers only requests addressed to itself: a foreign Host or Origin gets 421/403 and a line.

The view shows agents' transcripts and customers' rows. Bound to 127.0.0.1 it is out of other machines'
reach, but not out of a web page's: a site whose name is re-bound to 127.0.0.1 (DNS rebinding) would
read the pages from the user's own browser, with its own name in `Host`. The rule (which names and
port are ours) is `harness.host_names.addressed_to_us`, shared with the MCP face's names; the port is
the one the server is actually bound to (the ASGI scope's `server`), so `--port 0` is covered too.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from agentrel.harness.host_names import addressed_to_us, allowed_hosts

HOSTS = allowed_hosts("127.0.0.1")  # 127.0.0.1, localhost, [::1]


class HostGuard:
    """ASGI middleware: the request goes on only when `addressed_to_us` finds nothing wrong."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        server = scope.get("server") or (None, None)
        port = server[1] if isinstance(server[1], int) else -1  # no socket address: nothing is ours
        problem = addressed_to_us(headers.get("host"), headers.get("origin"), HOSTS, port)
        if problem is None:
            await self.app(scope, receive, send)
            return
        # 421 Misdirected Request for a foreign Host, 403 for a foreign Origin on our own Host.
        status = 421 if problem.startswith("Host") else 403
        await PlainTextResponse(problem + "\n", status_code=status)(scope, receive, send)
