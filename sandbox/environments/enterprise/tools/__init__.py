"""The built-in environment's tools: generated entity tools (`entities.py`, `crud.py`) and action tools
with effects beyond one row (`actions.py`), on the tool contract of sandbox/tools/base.py. Every write
tool honours idempotency keys (sandbox/tools/idempotency.py): each writes only through its call's
connection, so the key is kept in the same transaction as the write."""

from __future__ import annotations

from functools import cache

from agentrel.sandbox.environments.enterprise.tools.actions import ACTIONS
from agentrel.sandbox.environments.enterprise.tools.crud import EntityTools
from agentrel.sandbox.environments.enterprise.tools.entities import ENTITIES
from agentrel.sandbox.tools.base import Tool
from agentrel.sandbox.tools.idempotency import honouring_keys

__all__ = ["all_tools"]


@cache
def all_tools() -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    for entity in ENTITIES:
        for tool in EntityTools(entity).tools():
            tools[tool.name] = tool
    for tool in ACTIONS:
        tools[tool.name] = tool
    return {name: honouring_keys(tool) if tool.mutates else tool for name, tool in tools.items()}
