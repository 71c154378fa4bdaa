"""The tool-call pipeline: the one seam between an agent and a run's tools.

Every tool call of a run, whoever makes it (a model adapter, a scripted agent, an MCP client), enters
`Pipeline.call`, gets the run's next ordinal, has its arguments parsed once, and then passes through the
run's layers in a fixed order before it reaches the tool box. A layer is an object with one async method,
`handle(call, next)`: it may look at the call, change what the agent sees, refuse it (answer without
calling `next`), ask the tools to roll back what the call writes (`call.withhold`), or record an event.
The clean condition is the empty pipeline. A call the tools answered from its idempotency key is an
`idempotent_replay` event, noted where the tools answered (before any layer sees the answer).

A layer never draws from a shared random generator: `call.rng(layer)` is a generator seeded by
sha256(run seed | layer name | call ordinal), so a layer's draws for call 7 are the same for every agent
and do not shift when another layer draws more or fewer numbers.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentrel.harness.results.event import Event
from agentrel.sandbox.tools import ToolResult
from agentrel.sandbox.tools.withhold import Withhold

# Python refuses to turn more digits than this into an int (CVE-2020-10735); JSON that a model sends may
# hold longer integers, which then reach the tools as text and fail their schema check.
_MAX_INT_DIGITS = 4300


@dataclass
class ToolCall:
    """One tool call as the layers see it. `args` is already parsed; `error` says why it could not be."""

    ordinal: int
    tool: str
    args: Any
    seed: str
    events: list[Event]
    error: str | None = None
    # Asked by a layer (the lying-success condition): the tools answer as ever but roll back what the call
    # wrote, whole or after its first write (sandbox/tools/withhold.py).
    withhold: Withhold | None = None

    def rng(self, layer: str) -> random.Random:
        """This call's own random stream for `layer`: sha256(seed | layer | ordinal)."""
        return stream(self.seed, layer, self.ordinal)

    def emit(self, kind: str, **detail: Any) -> None:
        self.events.append(Event(kind=kind, ordinal=self.ordinal, tool=self.tool, detail=detail))


def stream(seed: str, layer: str, ordinal: int) -> random.Random:
    """The random stream of (run seed, layer, call ordinal); ordinal 0 is the layer's per-run draws."""
    digest = hashlib.sha256(f"{seed}|{layer}|{ordinal}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


Next = Callable[[ToolCall], Awaitable[ToolResult]]


class Layer(Protocol):
    name: str

    async def handle(self, call: ToolCall, next: Next) -> ToolResult: ...


@dataclass
class CallRecord:
    """What the run record and the transcript keep of one call."""

    ordinal: int
    tool: str
    args: Any
    ok: bool
    result: Any
    seconds: float


def parse_arguments(raw: Any) -> tuple[Any, str | None]:
    """Arguments as the tools take them, or the reason they cannot be read (answered as a tool error).

    OpenAI-style adapters pass the model's JSON text, others an object; either way whatever the model
    sent is its own, so no input may raise here."""
    if not isinstance(raw, str):
        return raw, None
    if not raw.strip():
        return {}, None
    try:
        return loads(raw), None
    except json.JSONDecodeError as exc:
        return raw, f"arguments are not valid JSON: {exc.msg}"
    except RecursionError:
        return raw, "arguments are nested too deeply to read"
    except ValueError as exc:
        return raw, f"arguments cannot be read: {exc}"


def loads(text: str) -> Any:
    """json.loads for what a model wrote: an integer too long for Python stays its digits (a string)."""
    return json.loads(text, parse_int=_parse_int)


def _parse_int(text: str) -> int | str:
    return int(text) if len(text.lstrip("-")) <= _MAX_INT_DIGITS else text


@dataclass
class Pipeline:
    """The layers of one run, in order, in front of `terminal` (the tool box)."""

    terminal: Next
    layers: Sequence[Layer] = ()
    seed: str = ""
    events: list[Event] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        chain: Next = _noting_replays(self.terminal)
        for layer in reversed(self.layers):
            chain = _bind(layer, chain)
        self._entry = chain

    async def call(self, tool: str, raw_args: Any, clock: Callable[[], float]) -> ToolResult:
        args, error = parse_arguments(raw_args)
        call = ToolCall(len(self.calls) + 1, tool, args, self.seed, self.events, error)
        t0 = clock()
        # Reserve the ordinal before awaiting, so concurrent calls (an MCP client may send several) keep
        # distinct ordinals in arrival order.
        record = CallRecord(call.ordinal, tool, args, False, None, 0.0)
        self.calls.append(record)
        result = await self._entry(call)
        record.ok, record.result, record.seconds = result.ok, result.content, clock() - t0
        return result


def _noting_replays(terminal: Next) -> Next:
    """The terminal, with an `idempotent_replay` event for a call the tools answered from its key: noted
    where the tools answered, so a layer that then hides the answer (a lost response) hides no event."""

    async def step(call: ToolCall) -> ToolResult:
        result = await terminal(call)
        if result.replayed:
            call.emit("idempotent_replay")
        return result

    return step


def _bind(layer: Layer, next: Next) -> Next:
    async def step(call: ToolCall) -> ToolResult:
        return await layer.handle(call, next)

    return step
