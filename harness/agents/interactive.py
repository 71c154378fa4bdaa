"""A person's session as one recorded run: `agentrel mcp serve --task ID --results DIR`.

The run goes through the audit like any subject's (manifest, protocol, fresh database, the run's
pipeline, dump before drop, verdict, record, resume): its agent serves the run's tools over MCP
streamable HTTP on the host and port given, logs the URL, and waits for SIGINT or SIGTERM, which end
the session. The tools a desktop assistant called through it are the run's recorded calls; a final
message file, if the person wrote one, is read at the end. A session nobody connected to is
`not_exposed`, as for an agent program that never connected.
"""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrel.harness.agents.base import AgentKind, AgentResult, Episode

Log = Any  # Callable[[str], None]
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass
class SessionOptions:
    name: str = "interactive"
    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = field(default=None, repr=False)
    allowed_hosts: tuple[str, ...] = ()
    final_message: Path | None = None


class InteractiveAgent:
    kind: AgentKind = "external"

    def __init__(self, opts: SessionOptions, log: Log) -> None:
        self.opts = opts
        self.name = f"agent/{opts.name}"
        self.log = log

    def config(self) -> dict[str, Any]:
        """A person at an MCP client: no command or code to name; the token is never recorded."""
        return {"name": self.name, "kind": self.kind, "interactive": True}

    async def run(self, episode: Episode) -> AgentResult:
        from agentrel.harness.mcp.episode import EpisodeFace
        from agentrel.harness.mcp.server import read_final_message

        opts = self.opts
        face = EpisodeFace(
            episode.task,
            episode.tools,
            episode.call,
            self.log,
            host=opts.host,
            port=opts.port,
            token=opts.token,
            fresh_token=False,
            allowed_hosts=opts.allowed_hosts,
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for s in STOP_SIGNALS:
            loop.add_signal_handler(s, stop.set)
        try:
            async with face:
                note = "; a bearer token is required" if face.token else ""
                self.log(f"run {episode.run_id} (task {episode.task.id}): listening on {face.url}{note}")
                self.log("Ctrl-C or SIGTERM ends the session; the run is then dumped, judged and recorded")
                stopped = asyncio.ensure_future(stop.wait())
                while not stopped.done() and not face.died:
                    await asyncio.wait({stopped}, timeout=0.5)
                stopped.cancel()
                died = face.died
        finally:
            for s in STOP_SIGNALS:
                loop.remove_signal_handler(s)
        final = read_final_message(opts.final_message, self.log)
        if died:
            return AgentResult(final, error="the MCP server stopped during the session", failure="harness")
        if not face.connected:
            return AgentResult(final, error="no MCP client connected during the session", connected=False)
        return AgentResult(final, connected=True)
