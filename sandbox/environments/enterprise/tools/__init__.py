"""The built-in environment's tools: generated entity tools (`entities.py`, `crud.py`) and action tools
with effects beyond one row (`actions.py`), on the tool contract of sandbox/tools/base.py."""

from __future__ import annotations

from functools import cache

from agentrel.sandbox.environments.enterprise.tools.actions import ACTIONS
from agentrel.sandbox.environments.enterprise.tools.crud import EntityTools
from agentrel.sandbox.environments.enterprise.tools.entities import ENTITIES
from agentrel.sandbox.tools.base import Tool

__all__ = ["all_tools"]


@cache
def all_tools() -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    for entity in ENTITIES:
        for tool in EntityTools(entity).tools():
            tools[tool.name] = tool
    for tool in ACTIONS:
        tools[tool.name] = tool
    return tools
