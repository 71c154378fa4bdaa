"""The noisy condition: tool calls meet faults, drawn per call from the run's own stream.

Which faults leave the call executed matters most: `lost_response` runs the call and commits it, then
answers with the same timeout a `timeout` gives for a call that never ran — the case that makes a naive
retry repeat an irreversible action, which the state diff then shows. Every fault is an event in the
run record, with whether the call executed.
"""

from __future__ import annotations

from typing import Any

from harness.conditions.model import Fault, Noise
from harness.pipeline import Next, ToolCall
from sandbox.tools import Tool, ToolResult

EXECUTED: frozenset[Fault] = frozenset({"lost_response", "malformed", "empty"})
TIMEOUT = {"error": "timeout: the tool did not answer within 30 s; the request may or may not have run"}
RETRY_AFTER_S = 2


class NoiseLayer:
    name = "noise"

    def __init__(self, noise: Noise, tools: dict[str, Tool]) -> None:
        self.noise = noise
        self.in_scope = {name for name, tool in tools.items() if _in_scope(noise, tool)}

    async def handle(self, call: ToolCall, next: Next) -> ToolResult:
        if call.tool not in self.in_scope:
            return await next(call)
        rng = call.rng(self.name)
        if rng.random() >= self.noise.failure_rate:
            return await next(call)
        fault = self.noise.faults[rng.randrange(len(self.noise.faults))]
        detail: dict[str, Any] = {"fault": fault, "executed": fault in EXECUTED}
        result = await next(call) if fault in EXECUTED else None
        if result is not None:
            detail["ok"] = result.ok  # a lost answer may have been an error the agent never saw
        call.emit("fault", **detail)
        return faulty(fault, result)


def faulty(fault: Fault, result: ToolResult | None) -> ToolResult:
    """What the agent sees instead of the tool's answer."""
    if fault in ("timeout", "lost_response"):
        return ToolResult(False, TIMEOUT)
    if fault == "server_error":
        return ToolResult(False, {"error": "HTTP 500: internal server error", "status": 500})
    if fault == "rate_limited":
        error = f"HTTP 429: too many requests; retry after {RETRY_AFTER_S} s"
        return ToolResult(False, {"error": error, "status": 429, "retry_after_s": RETRY_AFTER_S})
    assert result is not None
    if fault == "empty":
        return ToolResult(True, None, raw="")
    text = result.text()  # malformed: the body cut off partway, as a dropped connection leaves it
    return ToolResult(result.ok, None, raw=text[: max(1, len(text) // 2)])


def _in_scope(noise: Noise, tool: Tool) -> bool:
    return noise.tools == "all" or (noise.tools == "write") == tool.mutates
