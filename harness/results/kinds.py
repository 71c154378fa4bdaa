"""What kind of agent a run's subject is: the vocabulary the run record, the manifest, the agents and
analysis share, spelled once.

- `model`: a model driven by AgentRel's own tool loop (a chat adapter).
- `reference` / `scripted`: a fixed script (a reference solution, or a scripted attacker or failure);
  reported under its own name, never pooled with models.
- `external`: an agent program AgentRel runs and reaches through MCP.

Pure (names only), so analysis imports it alone, as it does `status`.
"""

from __future__ import annotations

from typing import Literal, get_args

AgentKind = Literal["model", "reference", "scripted", "external"]
AGENT_KINDS: tuple[str, ...] = get_args(AgentKind)
