"""Agent adapters by name prefix: `openai/<model>` goes to the factory registered for "openai".

Built-in adapters register themselves with `@agent_adapter` when their module is imported; the module is
imported only when its prefix is asked for, so auditing a scripted agent never imports an HTTP client.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from agentrel.harness.agents.base import Agent, ConfigError

AgentFactory = Callable[[str, dict[str, Any]], Agent]

# prefix -> (module that registers it, usage shown in help and errors)
BUILTIN: dict[str, tuple[str, str]] = {
    "scripted": ("agentrel.harness.agents.scripted", "scripted/<script>"),
    "reference": ("agentrel.harness.agents.scripted", "reference/stochastic"),
    "openai": ("agentrel.harness.agents.openai", "openai/<model>"),
    "anthropic": ("agentrel.harness.agents.anthropic", "anthropic/<model>"),
}

_factories: dict[str, AgentFactory] = {}
_usages: dict[str, str] = {prefix: usage for prefix, (_, usage) in BUILTIN.items()}


def agent_adapter(prefix: str, usage: str) -> Callable[[AgentFactory], AgentFactory]:
    """Register `factory(rest_of_name, sampling) -> Agent` for names `prefix/...`."""

    def register(factory: AgentFactory) -> AgentFactory:
        _factories[prefix] = factory
        _usages[prefix] = usage
        return factory

    return register


def usages() -> list[str]:
    return list(_usages.values())


def resolve_agent(name: str, sampling: dict[str, Any] | None = None) -> Agent:
    """Build the agent for `name`; ConfigError (one line) for an unknown prefix or a missing key."""
    prefix, _, rest = name.partition("/")
    if not rest:
        raise ConfigError(f"agent {name!r} has no prefix: use one of {', '.join(usages())}")
    if prefix not in _factories and prefix in BUILTIN:
        importlib.import_module(BUILTIN[prefix][0])
    factory = _factories.get(prefix)
    if factory is None:
        raise ConfigError(f"unknown agent prefix {prefix!r} in {name!r}: use one of {', '.join(usages())}")
    return factory(rest, sampling or {})
