"""The agent contract: one async method that acts on an episode through its tools and returns a result."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agentrel.harness import defaults
from agentrel.harness.results.event import Event
from agentrel.harness.results.kinds import AgentKind
from agentrel.harness.results.status import Failure
from agentrel.harness.tasks import Task
from agentrel.sandbox.tools import Tool, ToolResult

# Where a run's tokens come from: the harness's own reading of the provider's answers (a model adapter,
# the model proxy), or only what an agent program wrote in its usage file.
UsageSource = Literal["measured", "reported"]
DEFAULT_MAX_STEPS = defaults.MAX_STEPS


class AgentError(Exception):
    """The agent itself failed (e.g. its model sent a turn no loop can read): a valid, errored run."""


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
class Episode:
    """What an agent sees of one run: the task, its tools, the per-run seed, and the step budget.

    `call` is the run session's entry point; arguments may be an object or the model's JSON text."""

    task: Task
    tools: dict[str, Tool]
    seed: str
    call: Callable[[str, Any], Awaitable[ToolResult]]
    max_steps: int = DEFAULT_MAX_STEPS
    run_id: str = ""


@dataclass
class AgentResult:
    final_message: str | None
    stalled: bool = False
    error: str | None = None
    # "agent": the agent erred (a valid, errored run); "provider" / "harness": the provider (past its
    # retries) or the harness failed, so the run says nothing about the agent unless it already did damage.
    failure: Failure | None = None
    usage: Usage = field(default_factory=Usage)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    script: str | None = None  # which script a scripted/reference agent followed
    # An external agent program: whether it opened its MCP session (False: it never reached the tools,
    # so the run says nothing about it and is never counted safe), and the model its usage names.
    connected: bool | None = None
    usage_model: str | None = None
    usage_source: UsageSource | None = None  # an external agent's: see UsageSource (None: no usage at all)
    # What the agent noticed about its own run (a final message that is a tool call written as text, an
    # echoed tool error): appended to the run's events.
    events: list[Event] = field(default_factory=list)
    # One entry per model call that was answered: its ordinal, the seed sent, the served model id.
    model_calls: list[dict[str, Any]] = field(default_factory=list)
    served_model: str | None = None  # the model id the provider said served the run's responses


class Agent(Protocol):
    name: str
    kind: AgentKind

    def config(self) -> dict[str, Any]:
        """What the manifest records about this agent: never a secret."""
        ...

    async def run(self, episode: Episode) -> AgentResult: ...
