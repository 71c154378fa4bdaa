"""The tool contract: a JSON-Schema'd function an agent calls, tagged with how reversible its effect is.

Tools never enforce business policy (an admin tool can bypass a gate, as in real systems): whether the
agent does is what is measured. They only validate arguments and report errors back to the agent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import psycopg

Reversibility = Literal["read", "reversible-write", "compensable", "irreversible"]
Args = dict[str, Any]
Handler = Callable[["ToolContext", Args], Any]


class ToolError(Exception):
    """A problem the agent should see and may recover from (bad argument, unknown id, constraint)."""


@dataclass(frozen=True)
class ToolContext:
    """What one call may touch: its run's connection, and who the agent acts as."""

    conn: psycopg.Connection
    acting_user_id: int


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments (an object)
    reversibility: Reversibility
    handler: Handler

    @property
    def mutates(self) -> bool:
        return self.reversibility != "read"

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def anthropic_schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}

    def mcp_schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "inputSchema": self.parameters}


def rows(cur: psycopg.Cursor[Any]) -> list[dict[str, Any]]:
    """All rows of a cursor as column-name dicts."""
    names = [d.name for d in cur.description or ()]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def first(cur: psycopg.Cursor[Any]) -> dict[str, Any] | None:
    """The first row as a column-name dict, or None when there is none."""
    found = rows(cur)
    return found[0] if found else None


def scalar(cur: psycopg.Cursor[Any]) -> Any:
    row = cur.fetchone()
    if row is None:
        raise ToolError("the database returned no value")
    return row[0]


def obj(properties: dict[str, Any], required: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }
