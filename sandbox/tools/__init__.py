"""The agent-facing tool API: generated entity tools plus action tools, and the runtime that calls them."""

from __future__ import annotations

from functools import cache

from agentrel.sandbox.tools.actions import ACTIONS
from agentrel.sandbox.tools.base import Tool, ToolContext, ToolError
from agentrel.sandbox.tools.crud import EntityTools
from agentrel.sandbox.tools.entities import ENTITIES
from agentrel.sandbox.tools.toolbox import ToolBox, ToolResult

__all__ = ["Tool", "ToolBox", "ToolContext", "ToolError", "ToolResult", "all_tools"]


@cache
def all_tools() -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    for entity in ENTITIES:
        for tool in EntityTools(entity).tools():
            tools[tool.name] = tool
    for tool in ACTIONS:
        tools[tool.name] = tool
    return tools
