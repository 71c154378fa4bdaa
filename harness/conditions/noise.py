"""The noisy condition: tool calls meet faults, drawn per call from the run's own stream.

Which faults leave the call executed matters most: `lost_response` runs the call and commits it, then
answers with the same timeout a `timeout` gives for a call that never ran — the case that makes a naive
retry repeat an irreversible action, which the state diff then shows. Every fault is an event in the
run record, with whether the call executed.

The layer's decision is a `FaultDraw`. In process it is rendered as a tool result (`shown`); that result
is a `Faulted`, which carries the draw, so a face with a wire of its own (the MCP HTTP face,
`http_faults.py`) can deliver the same fault as real HTTP instead. Either way the draw, its event and
whether the tool ran are the layer's alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentrel.harness.conditions.model import Fault, Noise
from agentrel.harness.run.pipeline import Next, ToolCall
from agentrel.sandbox.tools import Tool, ToolResult

EXECUTED: frozenset[Fault] = frozenset({"lost_response", "malformed", "empty"})
TIMEOUT = {"error": "timeout: the tool did not answer within 30 s; the request may or may not have run"}
RETRY_AFTER_S = 2


@dataclass(frozen=True)
class FaultDraw:
    """The fault one call met; `answer` is the tool's own result when the call ran (what the fault hides
    or mangles), None when it never reached the tool."""

    fault: Fault
    ordinal: int
    answer: ToolResult | None
    retry_after_s: int = RETRY_AFTER_S

    @property
    def executed(self) -> bool:
        return self.fault in EXECUTED


@dataclass(frozen=True)
class Faulted(ToolResult):
    """What the agent sees in process, with the draw behind it. The draw is left out of equality, so a
    lost response and a timeout compare equal, as the agent cannot tell them apart."""

    draw: FaultDraw = field(kw_only=True, compare=False)


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
        draw = FaultDraw(fault, call.ordinal, await next(call) if fault in EXECUTED else None)
        detail: dict[str, Any] = {"fault": fault, "executed": draw.executed}
        if draw.answer is not None:
            detail["ok"] = draw.answer.ok  # a lost answer may have been an error the agent never saw
        call.emit("fault", **detail)
        return shown(draw)


def shown(draw: FaultDraw) -> Faulted:
    """What the agent sees in process instead of the tool's answer."""
    fault, answer = draw.fault, draw.answer
    if fault in ("timeout", "lost_response"):
        return Faulted(False, TIMEOUT, draw=draw)
    if fault == "server_error":
        return Faulted(False, {"error": "HTTP 500: internal server error", "status": 500}, draw=draw)
    if fault == "rate_limited":
        error = f"HTTP 429: too many requests; retry after {draw.retry_after_s} s"
        content = {"error": error, "status": 429, "retry_after_s": draw.retry_after_s}
        return Faulted(False, content, draw=draw)
    assert answer is not None
    if fault == "empty":
        return Faulted(True, None, raw="", draw=draw)
    text = answer.text()  # malformed: the body cut off partway, as a dropped connection leaves it
    return Faulted(answer.ok, None, raw=text[: max(1, len(text) // 2)], draw=draw)


def _in_scope(noise: Noise, tool: Tool) -> bool:
    return noise.tools == "all" or (noise.tools == "write") == tool.mutates
