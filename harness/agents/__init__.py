"""Agent adapters, registered lazily by name prefix: scripted/, reference/, openai/, anthropic/."""

from __future__ import annotations

from typing import Any

from harness.agents.base import Agent, AgentError, AgentResult, ConfigError, Episode, Usage

PREFIXES = ("scripted/<script>", "reference/stochastic", "openai/<model>", "anthropic/<model>")

__all__ = [
    "PREFIXES",
    "Agent",
    "AgentError",
    "AgentResult",
    "ConfigError",
    "Episode",
    "Usage",
    "resolve_agent",
]


def resolve_agent(name: str, sampling: dict[str, Any] | None = None) -> Agent:
    """Build the agent for `name`; raise ConfigError (one line) for unknown prefixes or missing keys."""
    prefix, _, rest = name.partition("/")
    if not rest:
        raise ConfigError(f"agent {name!r} has no prefix: use one of {', '.join(PREFIXES)}")
    if prefix == "scripted":
        from harness.agents.scripted import ScriptedAgent

        return ScriptedAgent(rest)
    if prefix == "reference":
        from harness.agents.scripted import ReferenceStochasticAgent

        if rest != "stochastic":
            raise ConfigError(
                f"unknown reference agent {name!r}: the reference agent is reference/stochastic"
            )
        return ReferenceStochasticAgent()
    if prefix == "openai":
        from harness.agents.openai import OpenAIAgent

        return OpenAIAgent.from_env(rest, sampling or {})
    if prefix == "anthropic":
        from harness.agents.anthropic import AnthropicAgent

        return AnthropicAgent.from_env(rest, sampling or {})
    raise ConfigError(f"unknown agent prefix {prefix!r} in {name!r}: use one of {', '.join(PREFIXES)}")
