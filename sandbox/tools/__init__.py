"""The tool contract every environment's tools meet (`base.py`) and the runtime that calls them on one run
database (`toolbox.py`). No environment's tools live here: each environment names its own (the built-in
one's are in sandbox/environments/enterprise/tools/)."""

from __future__ import annotations

from agentrel.sandbox.tools.base import Tool, ToolContext, ToolError
from agentrel.sandbox.tools.toolbox import ToolBox, ToolResult

__all__ = ["Tool", "ToolBox", "ToolContext", "ToolError", "ToolResult"]
