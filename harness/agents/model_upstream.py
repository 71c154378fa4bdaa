"""Where the model proxy sends an agent program's model calls: `audit --agent-model SPEC`.

`openai/<model>` and `anthropic/<model>` are the model adapters' own (their base URL and key variables,
their preflight: an unreachable endpoint or a refused key stops the audit before any run); the key stays
in this process and is sent upstream by the proxy only. `scripted/<script>` and `reference/stochastic`
are the built-in scripted model (`scripted_model`), answered inside the proxy: no key, no network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentrel.harness.agents.base import ConfigError
from agentrel.harness.agents.chat import SEED_RULE, ChatAgent, public_url
from agentrel.harness.agents.model_wire import Protocol
from agentrel.harness.agents.scripted_model import PREFIXES, ScriptedModel

# Which of the proxy's protocols each upstream speaks (no translation between them).
PROTOCOLS: dict[str, frozenset[Protocol]] = {
    "openai": frozenset({"chat", "responses"}),
    "anthropic": frozenset({"messages"}),
    "scripted": frozenset({"chat"}),
}
USAGE = "openai/<model>, anthropic/<model>, scripted/<script> or reference/stochastic"


@dataclass(frozen=True)
class Upstream:
    spec: str  # as given: the model the audit says the agent program uses
    kind: str  # openai, anthropic or scripted
    model: str  # the id every forwarded request asks for (the agent's own choice is replaced)
    base_url: str = ""
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # holds the key
    secrets: tuple[str, ...] = field(default=(), repr=False)
    scripted: ScriptedModel | None = None
    adapter: ChatAgent | None = field(default=None, repr=False)

    @property
    def protocols(self) -> frozenset[Protocol]:
        return PROTOCOLS[self.kind]

    @property
    def sends_seed(self) -> bool:
        return "chat" in self.protocols and self.scripted is None

    def config(self) -> dict[str, Any]:
        """What the subject's identity records of its model: never a secret."""
        config: dict[str, Any] = {"spec": self.spec}
        if self.adapter is not None:
            config["base_url"] = public_url(self.base_url)
            if self.adapter.server:
                config["server"] = self.adapter.server  # what it says of itself: claimed, not verified
        config["request_seed"] = SEED_RULE if self.sends_seed else None
        return config

    def preflight(self) -> None:
        if self.adapter is not None:
            self.adapter.preflight()


def resolve_upstream(spec: str) -> Upstream:
    """The upstream for `--agent-model SPEC`; ConfigError (one line) naming what to fix."""
    prefix, _, model = spec.partition("/")
    if prefix in PREFIXES:
        return Upstream(spec, "scripted", spec, scripted=ScriptedModel.named(spec))
    if prefix not in ("openai", "anthropic") or not model:
        raise ConfigError(f"--agent-model {spec!r}: use {USAGE}")
    from agentrel.harness.agents.registry import resolve_agent

    adapter = resolve_agent(spec)
    assert isinstance(adapter, ChatAgent)
    headers, secrets = adapter.credentials()
    return Upstream(spec, prefix, model, adapter.base_url, headers, tuple(secrets), adapter=adapter)
