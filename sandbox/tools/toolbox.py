"""Calling tools on one run database: argument checks, one transaction per call, errors as results."""

from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass
from typing import Any

import psycopg

from agentrel.sandbox.dump import connect_canonical
from agentrel.sandbox.tools import idempotency
from agentrel.sandbox.tools.base import MAX_TEXT, Tool, ToolContext, ToolError, cut, iso_value, shown

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    content: Any  # the result, or {"error": message}
    raw: str | None = None  # what the agent is shown instead, when it is not the content as JSON
    # The call wrote and its commit was withheld on request (`ToolBox.call(withhold=True)`): the answer
    # is the tool's own, its writes were rolled back.
    withheld: bool = False
    replayed: bool = False  # the first answer under the call's idempotency key, nothing done again

    def text(self) -> str:
        if self.raw is not None:
            return self.raw
        return json.dumps(self.content, separators=(",", ":"), default=str)


def check_args(schema: dict[str, Any], args: Any, path: str = "arguments") -> None:
    """A small JSON-Schema subset (type, required, additionalProperties, enum, minimum, maximum,
    maxLength, format date / date-time). Every string is bounded, by its maxLength or MAX_TEXT."""
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else types
        ok = any(
            isinstance(args, _JSON_TYPES[t]) and not (t in ("integer", "number") and isinstance(args, bool))
            for t in allowed
        )
        if not ok:
            raise ToolError(f"{path} must be {' or '.join(allowed)}, got {shown(args)}")
    if "enum" in schema and args not in schema["enum"]:
        raise ToolError(f"{path} must be one of {schema['enum']}, got {shown(args)}")
    if isinstance(args, str):
        limit = schema.get("maxLength", MAX_TEXT)
        if len(args) > limit:
            raise ToolError(f"{path} is {len(args)} characters long; the limit is {limit}")
        if schema.get("format") in ("date", "date-time"):
            iso_value(schema["format"], args, path)
    if isinstance(args, int | float) and not isinstance(args, bool):
        if "minimum" in schema and args < schema["minimum"]:
            raise ToolError(f"{path} must be >= {schema['minimum']}")
        if "maximum" in schema and args > schema["maximum"]:
            raise ToolError(f"{path} must be <= {schema['maximum']}")
    if isinstance(args, dict) and "properties" in schema:
        props = schema["properties"]
        unknown = sorted(set(args) - set(props))
        if unknown and schema.get("additionalProperties") is False:
            names = cut(", ".join(unknown))
            raise ToolError(f"unknown field(s) {names} in {path}; allowed: {', '.join(props)}")
        missing = [r for r in schema.get("required", []) if r not in args]
        if missing:
            raise ToolError(f"missing required field(s) {', '.join(missing)} in {path}")
        for key, value in args.items():
            if key in props:
                check_args(props[key], value, f"{path}.{key}" if path != "arguments" else key)


class _Watchdog:
    """Cancels the call's statement when its budget runs out, and again every CANCEL_EVERY_S until the
    call ends: a cancel that lands between two statements is ignored by the server, so one is not enough.
    Postgres 15 has no transaction_timeout, and statement_timeout bounds each statement, not the call."""

    CANCEL_EVERY_S = 0.05

    def __init__(self, conn: psycopg.Connection, budget_s: float) -> None:
        self.expired = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, args=(conn, budget_s), daemon=True)
        self._thread.start()

    def _watch(self, conn: psycopg.Connection, budget_s: float) -> None:
        if self._done.wait(budget_s):
            return
        self.expired = True
        while True:
            with contextlib.suppress(psycopg.Error):
                conn.cancel_safe(timeout=1.0)
            if self._done.wait(self.CANCEL_EVERY_S):
                return

    def stop(self) -> bool:
        """End the watch before COMMIT (so no cancel can hit it); True if the budget ran out."""
        self._done.set()
        self._thread.join()
        return self.expired


# Whether the current transaction wrote anything: Postgres assigns a transaction id at its first write,
# whatever path the tool's statements took (triggers included); reads and sequence draws assign none.
_WROTE = "SELECT pg_current_xact_id_if_assigned() IS NOT NULL"


class ToolBox:
    """The tools one run may call, bound to that run's database and nothing else.

    `call_timeout_s` bounds a whole call, however many statements it runs: past it the call's transaction
    is rolled back and the agent sees "the tool call timed out".

    `call(..., withhold=True)` runs the tool as ever and answers with its own result, but rolls its
    transaction back instead of committing: the lying-success condition (harness/conditions/lying.py).
    It is exact only for tools that write through the connection they are handed (an environment's
    `transactional_tools`). A tool that honours idempotency keys claims the call's key and keeps its
    answer in the same transaction (sandbox/tools/idempotency.py)."""

    def __init__(
        self, conninfo: str, tools: dict[str, Tool], acting_user_id: int, call_timeout_s: float = 30.0
    ) -> None:
        self.tools = tools
        self.call_timeout_s = call_timeout_s
        self.acting_user_id = acting_user_id
        self._conninfo = conninfo
        self._conn: psycopg.Connection | None = None

    def _connection(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            self._conn = connect_canonical(self._conninfo)
            # A backstop under the call budget's watchdog: no one statement outlives the whole budget.
            self._conn.execute(f"SET statement_timeout = {int(self.call_timeout_s * 1000)}")
        return self._conn

    def call(self, name: str, args: Any, withhold: bool = False) -> ToolResult:
        """Call one tool with parsed arguments (the run session's pipeline parses the model's text)."""
        tool = self.tools.get(name)
        if tool is None:
            available = ", ".join(sorted(self.tools))
            return ToolResult(False, {"error": f"unknown tool {cut(repr(name))}; available: {available}"})
        try:
            check_args(tool.parameters, args)
            key, args = idempotency.split_key(tool, args)
            conn = self._connection()
            withheld = False
            with conn.transaction() as tx:
                watchdog = _Watchdog(conn, self.call_timeout_s)
                try:
                    replay = (
                        idempotency.claim(conn, key, name, args, not withhold) if key is not None else None
                    )
                    if replay is None:
                        result = tool.handler(ToolContext(conn, self.acting_user_id), dict(args))
                        if key is not None and not withhold:
                            idempotency.keep(conn, key, result)
                    if withhold and replay is None:
                        withheld = bool(conn.execute(_WROTE).fetchone()[0])  # type: ignore[index]
                finally:
                    expired = watchdog.stop()
                if expired:  # finished, but past the budget: its writes are rolled back all the same
                    raise psycopg.errors.QueryCanceled("the tool call ran past its budget")
                if replay is not None:
                    return ToolResult(True, replay.answer, replayed=True)
                if withhold:
                    raise psycopg.Rollback(tx)  # the answer stands; nothing the call wrote is committed
            return ToolResult(True, result, withheld=withheld)
        except ToolError as exc:
            return ToolResult(False, {"error": str(exc)})
        except psycopg.errors.IntegrityError as exc:
            return ToolResult(False, {"error": f"constraint violated: {_first_line(exc)}"})
        except psycopg.errors.DataError as exc:
            return ToolResult(False, {"error": f"invalid value: {_first_line(exc)}"})
        except psycopg.errors.QueryCanceled:
            return ToolResult(False, {"error": "the tool call timed out"})

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()

    def __enter__(self) -> ToolBox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return cut(text.splitlines()[0]) if text else type(exc).__name__
