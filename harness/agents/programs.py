"""The agent programs an audit declares (`--agent NAME=COMMAND`, `--agent-file`), with the options that
apply to each of them, checked before anything runs: one `UsageError` line each."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from agentrel.harness.agents.base import ConfigError
from agentrel.harness.agents.external import ExternalSpec, load_agent_file, parse_agent_option
from agentrel.harness.errors import UsageError

__all__ = ["declare_programs"]


def declare_programs(
    options: Sequence[str],
    files: Sequence[Path],
    timeout_s: float,
    *,
    model: str | None = None,
    isolation: str = "sealed",
    network: str = "loopback",
) -> tuple[ExternalSpec, ...]:
    """Every declared agent program; `model` (--agent-model) is the upstream each one's model proxy
    forwards to, `isolation` and `network` how each one is sealed."""
    if not (timeout_s > 0 and timeout_s < math.inf):
        raise UsageError(
            f"--agent-timeout {timeout_s:g}: the time budget must be a positive number of seconds"
        )
    if model is not None and not (options or files):
        raise UsageError("--agent-model goes with --agent or --agent-file (a model subject is --model)")
    if isolation not in ("sealed", "none"):
        raise UsageError(f"--agent-isolation {isolation}: use sealed or none")
    if network not in ("loopback", "host"):
        raise UsageError(f"--agent-network {network}: use loopback or host")
    if network == "host" and isolation == "none":
        raise UsageError("--agent-network host goes with a sealed agent; without a sandbox it has the host's")
    try:
        specs = [parse_agent_option(o, timeout_s) for o in options]
        specs += [load_agent_file(f, timeout_s) for f in files]
        if model is not None:
            from agentrel.harness.agents.model_upstream import resolve_upstream

            resolve_upstream(model)  # an unknown prefix or a missing key: one line, before anything runs
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    update = {"isolation": isolation, "network": network, **({"model": model} if model is not None else {})}
    return tuple(s.model_copy(update=update) for s in specs)
