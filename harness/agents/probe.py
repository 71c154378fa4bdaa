"""The pre-audit probe of an external agent: does its command start and reach an MCP server at all?

The command is started once with the full environment contract, against a probe endpoint that has no
database (every tool call is refused) and prompt files that say so, with AGENTREL_RUN_ID=probe. It is
stopped (its process group killed) as soon as it opens its MCP session. A command that exits before
connecting, or cannot be started, is reported here as one line, before any run is spent; one that neither
connects nor exits within the window passes (a slow start is its runs' business).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrel.sandbox.tools import ToolResult

if TYPE_CHECKING:
    from agentrel.harness.agents.external import ExternalAgent

PROBE_PROMPT = (
    "AgentRel probe: this is not a run. Connect to the MCP server named by AGENTREL_MCP_URL; you will be"
    " stopped as soon as you do.\n"
)
PROBE_RUN_ID = "probe"


async def probe(agent: ExternalAgent, window_s: float) -> str | None:
    """None when the command connected (or was still starting at the window's end); else why not."""
    from agentrel.harness.mcp.episode import EpisodeFace
    from agentrel.harness.tasks import load_suite
    from agentrel.sandbox.environments import registry

    env = registry.default()  # the probe has no database: the built-in's first task shows the tools' shape
    task = load_suite(env=env)[0]
    known = env.tools()
    tools = {name: known[name] for name in task.tools if name in known}

    async def refuse(tool: str, args: Any) -> ToolResult:
        return ToolResult(False, {"error": "AgentRel probe: no run database; this call did nothing"})

    with tempfile.TemporaryDirectory(prefix="agentrel-probe-") as tmp:
        face = EpisodeFace(task, tools, refuse)
        async with face:
            assert face.token is not None  # a fresh one: fresh_token is on
            # Launched as a run is (sealed unless isolation is none): what it leaves dies with it too.
            end, _ = await agent.launch(
                Path(tmp),
                agent.endpoints(face.url),
                face.token,
                (PROBE_PROMPT, PROBE_PROMPT),
                PROBE_RUN_ID,
                budget_s=window_s,
                stop_when=lambda: face.connected,
            )
        if face.connected or end.timed_out:
            return None
        if end.spawn_error is not None:
            return f"cannot be started: {end.spawn_error}"
        last = next((ln for ln in reversed(end.stderr.text().splitlines()) if ln.strip()), "")
        said = f"; its last stderr line: {last.strip()[:200]}" if last else ""
        return (
            f"exited at once (code {end.returncode}) without connecting to the MCP server{said};"
            " check the command by hand with the AGENTREL_* variables set (docs/how-to/your-own-agent.md)"
        )
