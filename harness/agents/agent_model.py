"""An agent program's model, as its run's environment and result hold it (`external.ExternalAgent`):
which inherited variables the model proxy replaces or removes, the pre-audit probe's own proxy, and the
agent's usage file set beside the proxy's measure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentrel.harness.agents.base import Usage

if TYPE_CHECKING:
    from agentrel.harness.agents.model_proxy import ModelProxy

# Replaced by the model proxy's values (a model client reading them reaches the proxy, not the provider).
PROVIDER_VARS = frozenset(
    {"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_ORG_ID"}
)


def probe_proxy() -> ModelProxy:
    """The pre-audit probe's model proxy: a built-in model that answers every call with one line."""
    from agentrel.harness.agents.model_proxy import ModelProxy
    from agentrel.harness.agents.model_upstream import Upstream
    from agentrel.harness.agents.probe import PROBE_PROMPT, PROBE_RUN_ID
    from agentrel.harness.agents.scripted_model import ScriptedModel, ScriptedRun

    name = "scripted/probe"
    upstream = Upstream(name, "scripted", name, scripted=ScriptedModel(name))
    return ModelProxy(upstream, PROBE_RUN_ID, ScriptedRun(name, [], PROBE_PROMPT.strip()))


def cross_check(reported: Usage | None, measured: Usage) -> dict[str, Any]:
    """The agent's own usage file beside the proxy's measure (the measure is what is priced)."""
    seen = {"input_tokens": measured.input_tokens, "output_tokens": measured.output_tokens}
    if reported is None:
        return {"measured": seen, "reported": None, "agrees": None}
    said = {"input_tokens": reported.input_tokens, "output_tokens": reported.output_tokens}
    return {"measured": seen, "reported": said, "agrees": said == seen}


def without_secrets(env: Mapping[str, str], secrets: Sequence[str]) -> dict[str, str]:
    """The environment without the provider variables the proxy replaces and without any variable
    that holds one of the upstream's secrets (under whatever name the auditor keeps it)."""
    kept = [s for s in secrets if len(s) >= 4]
    return {
        k: v for k, v in env.items() if k not in PROVIDER_VARS and not any(secret in v for secret in kept)
    }
