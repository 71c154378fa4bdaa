"""Idempotency keys: the optional contract a write tool may honour.

A tool that honours keys (`Tool.idempotent`, set by `honouring_keys`) takes an optional `idempotency_key`
argument. The first call that commits under a key stores its answer; a later call with the same key and
the same arguments gets that first answer back and writes nothing; the same key with other arguments (or
another tool) is refused as a tool error, never answered with the first call's answer. The key is claimed
and its answer kept inside the call's own transaction (`agentrel_meta.claim_key` / `keep_answer`,
sandbox/tracking.py), so it is taken exactly when the call's writes commit, in the run's own database:
a retry after a lost response (the call committed, its answer never arrived) cannot commit twice, even
across a tool-server restart, and no run sees another run's keys. The key never reaches the tool's
handler, so a keyed call and an unkeyed one have the same effect.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any

import psycopg

from agentrel.sandbox.tools.base import Args, Tool, ToolError, shown

KEY = "idempotency_key"
MAX_KEY = 200
KEY_SCHEMA: dict[str, Any] = {
    "type": "string",
    "maxLength": MAX_KEY,
    "description": "optional: a key of your choice for this action; a retry with the same key and the same "
    "arguments returns the first call's answer and does not act again",
}


def honouring_keys(tool: Tool) -> Tool:
    """`tool`, declared to honour idempotency keys: its schema shows the optional `idempotency_key`."""
    if not tool.mutates:
        raise ValueError(f"tool {tool.name}: a read tool has nothing to make idempotent")
    if KEY in tool.parameters.get("properties", {}):
        raise ValueError(f"tool {tool.name}: it already has an argument named {KEY}")
    properties = {**tool.parameters.get("properties", {}), KEY: KEY_SCHEMA}
    return replace(tool, parameters={**tool.parameters, "properties": properties}, idempotent=True)


def request_digest(tool: str, args: Args) -> str:
    """What a key was first used for: the tool and its canonical arguments (the key itself left out)."""
    text = json.dumps({"tool": tool, "args": args}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Replay:
    """The first answer given under a key, returned instead of acting again."""

    answer: Any


def split_key(tool: Tool, args: Args) -> tuple[str | None, Args]:
    """The call's key (None when it gave none, or the tool does not honour keys) and the arguments the
    handler gets, without it."""
    if not tool.idempotent or KEY not in args:
        return None, args
    rest = {k: v for k, v in args.items() if k != KEY}
    key = args[KEY]
    if not isinstance(key, str) or not key.strip():
        raise ToolError(f"{KEY} must be a non-empty string, got {shown(key)}")
    return key, rest


def claim(conn: psycopg.Connection, key: str, tool: str, args: Args, take: bool = True) -> Replay | None:
    """Claim `key` for this call inside its transaction: None when the key is new (the call then acts
    and `keep`s its answer), the first answer when the same call was made under it before. `take=False`
    only looks (a call whose transaction will be rolled back writes nothing, not even its key)."""
    digest = request_digest(tool, args)
    row = conn.execute(
        "SELECT fresh, first_tool, first_request, first_answer FROM agentrel_meta.claim_key(%s, %s, %s, %s)",
        (key, tool, digest, take),
    ).fetchone()
    if row is None:  # the function always returns a row; a missing one is a broken database
        raise ToolError(f"{KEY} {shown(key)} could not be claimed")
    fresh, first_tool, first_request, first_answer = row
    if fresh:
        return None
    if (first_tool, first_request) != (tool, digest):
        what = "another tool" if first_tool != tool else "other arguments"
        raise ToolError(
            f"{KEY} {shown(key)} was first used for a different call ({what}); give each action its own key"
        )
    if first_answer is None:
        raise ToolError(f"{KEY} {shown(key)} has no recorded answer")
    return Replay(json.loads(first_answer))


def keep(conn: psycopg.Connection, key: str, answer: Any) -> Any:
    """Store the first answer under `key`, in the call's transaction; return it as a replay will give
    it (JSON: what the agent is shown either way)."""
    text = json.dumps(answer, separators=(",", ":"), default=str)
    conn.execute("SELECT agentrel_meta.keep_answer(%s, %s)", (key, text))
    return answer
