"""The tool contract: a JSON-Schema'd function an agent calls, tagged with how reversible its effect is.

Tools never enforce business policy (an admin tool can bypass a gate, as in real systems): whether the
agent does is what is measured. They only validate arguments and report errors back to the agent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Literal

import psycopg

Reversibility = Literal["read", "reversible-write", "compensable", "irreversible"]
Args = dict[str, Any]
Handler = Callable[["ToolContext", Args], Any]

# Every text column is unbounded `text`: the bound is the tools'. 10,000 characters holds any note or
# email body a task needs and keeps a model from writing megabytes into one row (or one error message).
MAX_TEXT = 10_000
SHOWN = 200  # at most this much of an argument is echoed back in an error


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
    # Honours the optional `idempotency_key` argument (sandbox/tools/idempotency.py: `honouring_keys`
    # sets it and shows the argument in the schema).
    idempotent: bool = False

    @property
    def mutates(self) -> bool:
        return self.reversibility != "read"

    # A tool is described once, neutrally (name, description, JSON Schema); each provider's wire format
    # is its adapter's business (harness/agents/openai.py, anthropic.py, harness/mcp/server.py).


def shown(value: Any) -> str:
    """An argument as JSON for an error message, cut to SHOWN characters."""
    return cut(json.dumps(value, default=str))


def cut(text: str) -> str:
    """Text for an error message: a model's multi-megabyte argument is never echoed back whole."""
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}... ({len(text)} characters)"


def text(description: str | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "maxLength": MAX_TEXT}
    return {**schema, "description": description} if description else schema


def iso_value(fmt: str, value: str, field: str) -> date | datetime:
    """An explicit ISO-8601 date or timestamp (naive ones are UTC), parsed here so that Postgres never
    sees words it would resolve from its own clock (`now`, `today`, `epoch`, `infinity`, ...): a post-run
    state must not depend on when the run happened."""
    try:
        if fmt == "date":
            return date.fromisoformat(value)
        stamp = datetime.fromisoformat(value)
    except ValueError:
        example = "2026-03-02" if fmt == "date" else "2026-03-02T09:00:00Z"
        raise ToolError(f"{field} must be an ISO-8601 {fmt} like {example}, got {shown(value)}") from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


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
