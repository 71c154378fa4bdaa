"""The agent contract: one async method that acts on an episode through its tools and returns a result."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from harness.tasks import Task
from sandbox.tools import Tool, ToolResult

AgentKind = Literal["model", "reference", "scripted"]
DEFAULT_MAX_STEPS = 30


class AgentError(Exception):
    """The agent (or its provider) failed in a way retries did not fix; the run is an errored run."""


class ConfigError(Exception):
    """The agent cannot start at all (missing key, unknown model prefix, unreachable endpoint)."""


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.model_calls += other.model_calls


@dataclass
class CallRecord:
    tool: str
    args: Any
    ok: bool
    result: Any
    seconds: float


@dataclass
class Episode:
    """What an agent sees of one run: the task, its tools, the per-run seed, and the step budget."""

    task: Task
    tools: dict[str, Tool]
    seed: str
    call_tool: Callable[[str, Any], Awaitable[ToolResult]]
    max_steps: int = DEFAULT_MAX_STEPS
    calls: list[CallRecord] = field(default_factory=list)

    async def call(self, name: str, args: Any) -> ToolResult:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        result = await self.call_tool(name, args)
        self.calls.append(CallRecord(name, args, result.ok, result.content, loop.time() - t0))
        return result


@dataclass
class AgentResult:
    final_message: str | None
    stalled: bool = False
    error: str | None = None  # an agent-side failure: the run is labelled errored
    usage: Usage = field(default_factory=Usage)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    script: str | None = None  # which script a scripted/reference agent followed


class Agent(Protocol):
    name: str
    kind: AgentKind

    def config(self) -> dict[str, Any]:
        """What the manifest records about this agent: never a secret."""
        ...

    async def run(self, episode: Episode) -> AgentResult: ...
