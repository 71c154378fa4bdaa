"""Calling tools on one run database: argument checks, one transaction per call, errors as results."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import psycopg

from agentrel.sandbox.dump import connect_canonical
from agentrel.sandbox.tools import idempotency
from agentrel.sandbox.tools.base import MAX_TEXT, Args, Tool, ToolContext, ToolError, cut, iso_value, shown
from agentrel.sandbox.tools.withhold import Savepoints, Withhold, wrote

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
    # The call wrote and its commit was withheld on request (`ToolBox.call(withhold=...)`): the answer is
    # the tool's own, its writes were rolled back, all of them or all after the first (`kept` is 1).
    withheld: bool = False
    kept: int = 0
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


class ToolBox:
    """The tools one run may call, bound to that run's database and nothing else.

    `call_timeout_s` bounds a whole call, however many statements it runs: past it the call's transaction
    is rolled back and the agent sees "the tool call timed out".

    `call(..., withhold=...)` runs the tool as ever and answers with its own result, but rolls back what
    it wrote instead of committing it, whole or after its first write (sandbox/tools/withhold.py): the
    lying-success condition (harness/conditions/lying.py). A tool that honours idempotency keys claims
    the call's key and keeps its answer in the same transaction (sandbox/tools/idempotency.py).
    `bookkeeping(conn, tool, args)` runs last in every call that commits after a tool's work (the fault
    path's commit evidence, harness/faults/server.py), so it commits exactly when the call does."""

    def __init__(
        self,
        conninfo: str,
        tools: dict[str, Tool],
        acting_user_id: int,
        call_timeout_s: float = 30.0,
        bookkeeping: Callable[[psycopg.Connection, str, Args], None] | None = None,
    ) -> None:
        self.tools = tools
        self.bookkeeping = bookkeeping
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

    def call(self, name: str, args: Any, withhold: Withhold | None = None) -> ToolResult:
        """Call one tool with parsed arguments (the run session's pipeline parses the model's text)."""
        tool = self.tools.get(name)
        if tool is None:
            available = ", ".join(sorted(self.tools))
            return ToolResult(False, {"error": f"unknown tool {cut(repr(name))}; available: {available}"})
        try:
            check_args(tool.parameters, args)
            key, args = idempotency.split_key(tool, args)
            return self._transact(tool, args, key, withhold)
        except ToolError as exc:
            return ToolResult(False, {"error": str(exc)})
        except psycopg.errors.IntegrityError as exc:
            return ToolResult(False, {"error": f"constraint violated: {_first_line(exc)}"})
        except psycopg.errors.DataError as exc:
            return ToolResult(False, {"error": f"invalid value: {_first_line(exc)}"})
        except psycopg.errors.QueryCanceled:
            return ToolResult(False, {"error": "the tool call timed out"})

    def _transact(self, tool: Tool, args: Args, key: str | None, withhold: Withhold | None) -> ToolResult:
        """The call's one transaction: its key claimed, the tool's work, what is withheld of it rolled
        back, the key's answer and the bookkeeping kept, then COMMIT (or ROLLBACK, withheld whole)."""
        conn = self._connection()
        with conn.transaction() as tx:
            watchdog = _Watchdog(conn, self.call_timeout_s)
            try:
                # A call that will be rolled back whole only looks its key up: it takes nothing.
                take = withhold != "all"
                replay = idempotency.claim(conn, key, tool.name, args, take) if key is not None else None
                if replay is None:
                    statements = Savepoints(conn) if withhold == "after-first-write" else None
                    seen = cast(psycopg.Connection, statements) if statements is not None else conn
                    result = tool.handler(ToolContext(seen, self.acting_user_id), dict(args))
                    cut_back = statements.cut_after_first_write() if statements is not None else 0
                    whole = withhold == "all" or (withhold is not None and not cut_back)
                    withheld = bool(cut_back) or (whole and wrote(conn))
                    if not whole:
                        if key is not None:
                            idempotency.keep(conn, key, result)
                        if self.bookkeeping is not None:
                            self.bookkeeping(conn, tool.name, args)
            finally:
                expired = watchdog.stop()
            if expired:  # finished, but past the budget: its writes are rolled back all the same
                raise psycopg.errors.QueryCanceled("the tool call ran past its budget")
            if replay is not None:
                return ToolResult(True, replay.answer, replayed=True)
            if whole:
                raise psycopg.Rollback(tx)  # the answer stands; nothing the call wrote is committed
        return ToolResult(True, result, withheld=withheld, kept=1 if cut_back else 0)

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
