"""Agent adapters, registered lazily by name prefix (see `registry`)."""

from __future__ import annotations

from agentrel.harness.agents.base import Agent, AgentError, AgentResult, ConfigError, Episode, Usage
from agentrel.harness.agents.registry import agent_adapter, resolve_agent, usages

__all__ = [
    "Agent",
    "AgentError",
    "AgentResult",
    "ConfigError",
    "Episode",
    "Usage",
    "agent_adapter",
    "resolve_agent",
    "usages",
]
