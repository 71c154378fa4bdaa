"""The tool server process: one run's tools on its run database, over loopback HTTP/JSON.

    AGENTREL_FAULTS_CONNINFO=... [AGENTREL_ENV=name] python -m harness.faults.server \\
        --tools get_case,issue_refund --acting-user-id 8 [--port 0] [--allow-hold]

The conninfo comes from the environment, never argv: on an external server it carries the run role's
password, and argv is readable by every user in the process list. Once listening, the server prints one
line, `READY <port> <boot id> <pid>`, and then serves:

- `POST /call {"tool", "args", "call_id"[, "withhold"]}`: the tool through an ordinary `ToolBox` (the same
  argument checks, one transaction per call, errors as results, `withhold` for the lying-success
  condition, idempotency keys for the tools that honour them), with the call id written by
  `agentrel_meta.note_call` as the last statement of the tool's own transaction: the row exists exactly
  when the call committed (the commit evidence a lost-response witness reads).
- `GET /health`: a probe (partition witnesses), answered even while a call runs.
- `POST /hold {"seconds"}` (only with `--allow-hold`, which the fault harness alone passes): the next
  call holds its transaction open that long after its writes and its evidence, before COMMIT, so a
  SIGKILL lands on a call that is really in flight.

Every answer carries the server's `boot_id` (random per process) and `pid`: a restart witness compares
them across the restart. SIGTERM stops it cleanly (connections closed, exit 0); with `--parent-pipe`
(the launcher passes it) it also stops when its stdin closes, so it never outlives the harness.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from agentrel.harness.faults import wire
from agentrel.sandbox.environments import registry
from agentrel.sandbox.tools import ToolBox, ToolResult
from agentrel.sandbox.tools.base import Args
from agentrel.sandbox.tools.withhold import WITHHOLDS, Withhold

CONNINFO_ENV = "AGENTREL_FAULTS_CONNINFO"
MAX_HOLD_S = 10.0
APP_PREFIX = "agentrel-faults-"  # application_name of the server's Postgres session, + its boot id


@dataclass
class _Current:
    """The call being served: one at a time (the server's lock), read by the wrapped tool handlers."""

    call_id: str = ""
    hold_s: float = 0.0


def effect_digest(tool: str, args: Any) -> str:
    """The logical effect of a call: its tool and canonical arguments (a retry of the same action has the
    same digest under a new call id)."""
    import hashlib

    try:
        text = json.dumps({"tool": tool, "args": args}, sort_keys=True, separators=(",", ":"), default=str)
    except (ValueError, RecursionError):  # arguments JSON cannot carry: never fail the call over evidence
        text = repr((tool, args))
    return hashlib.sha256(text.encode()).hexdigest()


def evidence(boot_id: str, current: _Current) -> Callable[[psycopg.Connection, str, Args], None]:
    """The tool box's bookkeeping: each committing call writes its call id after its own work, inside the
    same transaction (`ToolBox(bookkeeping=)`).

    The evidence is written after the tool's work (and after anything a lying-success cut rolled back),
    so a call whose handler raised (a tool error, a constraint violation: rolled back), or that was
    withheld whole, leaves none; the hold comes after the evidence, so a kill during it leaves evidence
    written but uncommitted, which Postgres then discards with the rest of the call."""

    def note(conn: psycopg.Connection, tool: str, args: Args) -> None:
        conn.execute(
            "SELECT agentrel_meta.note_call(%s, %s, %s, %s)",
            (current.call_id, boot_id, tool, effect_digest(tool, args)),
        )
        if current.hold_s > 0:
            conn.execute("SELECT pg_sleep(%s)", (current.hold_s,))

    return note


def server_conninfo(conninfo: str, boot_id: str) -> str:
    """The run role's conninfo, named by boot id (so a kill witness finds this server's backend in
    pg_stat_activity), with a client liveness check: a backend whose client was SIGKILLed mid-call then
    ends within ~100 ms instead of sleeping out its hold."""
    params = conninfo_to_dict(conninfo)
    options = f"{params.get('options', '')} -c client_connection_check_interval=100".strip()
    return make_conninfo(conninfo, application_name=f"{APP_PREFIX}{boot_id}", options=options)


class ToolServer:
    def __init__(self, box: ToolBox, boot_id: str, current: _Current, allow_hold: bool) -> None:
        self.box = box
        self.boot_id = boot_id
        self.current = current
        self.allow_hold = allow_hold
        self.armed_hold_s = 0.0
        self._lock = asyncio.Lock()  # one Postgres connection: calls reach it one at a time
        self._writers: set[asyncio.StreamWriter] = set()

    def stamp(self, payload: dict[str, Any]) -> dict[str, Any]:
        return {"boot_id": self.boot_id, "pid": os.getpid(), **payload}

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                try:
                    message = await wire.read_message(reader)
                except (wire.FramingError, ConnectionError):
                    return
                if message is None:
                    return
                status, payload = await self.answer(message)
                writer.write(wire.encode(wire.response(status, self.stamp(payload))))
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            # Cancelled at shutdown (SIGTERM while a call ran): the call's transaction ends with the
            # connection; swallowing the cancel keeps Python 3.11's stream callback from logging it.
            return
        finally:
            self._writers.discard(writer)
            writer.close()

    async def answer(self, message: wire.Message) -> tuple[int, dict[str, Any]]:
        method, _, rest = message.start.partition(" ")
        path = rest.split(" ", 1)[0]
        if (method, path) == ("GET", "/health"):
            return 200, {"ok": True}
        try:
            body = message.json()
        except (ValueError, UnicodeDecodeError):
            return 400, {"error": "the request body is not JSON"}
        if (method, path) == ("POST", "/hold") and self.allow_hold and isinstance(body, dict):
            self.armed_hold_s = min(float(body.get("seconds", 0.0)), MAX_HOLD_S)
            return 200, {"ok": True, "hold_s": self.armed_hold_s}
        if (method, path) == ("POST", "/call") and isinstance(body, dict):
            return 200, await self.call(body)
        return 404, {"error": f"no such endpoint {method} {path}"}

    async def call(self, body: dict[str, Any]) -> dict[str, Any]:
        call_id, tool = body.get("call_id"), body.get("tool")
        if not isinstance(call_id, str) or not call_id or not isinstance(tool, str):
            return {"call_id": call_id, "ok": False, "content": {"error": "a call needs call_id and tool"}}
        async with self._lock:
            self.current.call_id, self.current.hold_s = call_id, self.armed_hold_s
            self.armed_hold_s = 0.0
            try:
                asked = body.get("withhold")
                withhold = cast(Withhold, asked) if asked in WITHHOLDS else None
                result = await asyncio.to_thread(self.box.call, tool, body.get("args"), withhold)
            except Exception as exc:
                # As the in-process session answers it (harness/run/session.py): an argument no tool can take
                # is the agent's own, answered as a tool error.
                error = f"tool call failed: {type(exc).__name__}: {exc}"[:300]
                result = ToolResult(False, {"error": error})
        answer = {"call_id": call_id, "ok": result.ok, "content": result.content, "raw": result.raw}
        return {**answer, "withheld": result.withheld, "kept": result.kept, "replayed": result.replayed}

    def close_connections(self) -> None:
        for writer in list(self._writers):
            writer.close()


async def run(args: argparse.Namespace) -> None:
    if args.bind_from_stdin:
        _bind_from_stdin(args)
    conninfo = os.environ.get(CONNINFO_ENV) or args.conninfo
    if not conninfo:
        sys.exit(f"agentrel: error: set {CONNINFO_ENV} to the run database's tool conninfo")
    boot_id = secrets.token_hex(8)
    # The run's environment, by the name its binding (or, started directly, AGENTREL_ENV) gave.
    known = registry.load(args.env).tools()
    names = [n for n in args.tools.split(",") if n]
    unknown = [n for n in names if n not in known]
    if unknown:
        sys.exit(f"agentrel: error: --tools: unknown tool(s) {', '.join(unknown)}")
    current = _Current()
    tools = {n: known[n] for n in names}
    box = ToolBox(
        server_conninfo(conninfo, boot_id),
        tools,
        args.acting_user_id,
        args.call_timeout_s,
        bookkeeping=evidence(boot_id, current),
    )
    app = ToolServer(box, boot_id, current, args.allow_hold)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    if args.parent_pipe:
        # The harness holds the other end of stdin: if it dies (even by SIGKILL) the pipe closes and this
        # server stops, so a crashed audit leaves no tool server behind.
        def watch() -> None:
            # os.read, not sys.stdin: a buffered reader's lock held by a daemon thread aborts shutdown.
            while os.read(0, 4096):
                pass
            loop.call_soon_threadsafe(stop.set)

        threading.Thread(target=watch, daemon=True).start()
    # Fail fast with one line on a conninfo that cannot connect, before READY is reported.
    try:
        psycopg.connect(server_conninfo(conninfo, boot_id), connect_timeout=10).close()
    except psycopg.Error as exc:
        sys.exit(f"agentrel: error: the tool server cannot reach its run database: {exc}".splitlines()[0])
    server = await asyncio.start_server(app.serve, "127.0.0.1", args.port)
    port = server.sockets[0].getsockname()[1]
    print(f"READY {port} {boot_id} {os.getpid()}", flush=True)
    await stop.wait()
    server.close()
    app.close_connections()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(server.wait_closed(), 2.0)
    # A call still running finishes or is rolled back with its connection; evidence stays exact.
    await asyncio.to_thread(box.close)


def _bind_from_stdin(args: argparse.Namespace) -> None:
    """A warm spare: imported and idle until the harness binds it to a run with one JSON line on stdin
    (environment, conninfo, tools, acting user, call timeout, hold). stdin, like the environment and
    unlike argv, is not readable by other users. End of stdin before the line (the harness went away):
    exit quietly. The spare was started for one environment (AGENTREL_ENV, `WarmPool`) and builds its
    tools while idle; the binding names the run's, which is the one served."""
    registry.load(args.env).tools()  # build the tools now, while idle, not on the run's clock
    try:
        print(f"WAITING {os.getpid()}", flush=True)
    except BrokenPipeError:  # the harness closed the pool before this spare was ready
        os._exit(0)
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(0, 1)  # byte by byte: nothing past the newline may be taken from the pipe
        if not chunk:
            sys.exit(0)
        line += chunk
    bind = json.loads(line)
    os.environ[CONNINFO_ENV] = bind["conninfo"]
    args.env = str(bind.get("env") or args.env)
    args.tools = ",".join(bind["tools"])
    args.acting_user_id = int(bind["acting_user_id"])
    args.call_timeout_s = float(bind["call_timeout_s"])
    args.allow_hold = bool(bind["allow_hold"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m harness.faults.server", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free one)")
    parser.add_argument("--tools", default="", help="comma list of the run's tools")
    parser.add_argument("--acting-user-id", type=int, default=0)
    parser.add_argument("--call-timeout-s", type=float, default=30.0)
    parser.add_argument("--allow-hold", action="store_true", help="accept POST /hold (fault harness only)")
    parser.add_argument("--parent-pipe", action="store_true", help="stop when stdin reaches its end")
    parser.add_argument("--conninfo", help=f"discouraged (visible in ps): prefer {CONNINFO_ENV}")
    parser.add_argument(
        "--bind-from-stdin", action="store_true", help="start idle; take the run's binding from stdin"
    )
    args = parser.parse_args(argv)
    # The entry point builds the environment from its process's variables; the library is handed it.
    args.env = registry.from_environ(os.environ).name
    asyncio.run(run(args))
    # Every connection is closed and the run database's session ended: skip the interpreter's teardown
    # (a second or more of module cleanup), which the harness would otherwise wait for at every stop.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
