"""RemoteTools: the fault path's pipeline terminal, a tool-server client with a transport timeout.

One persistent connection, one call at a time. What the transport did is recorded as it happens, for the
witnesses: every answer's boot id and pid, every timeout (with its call id), every disconnect (idle, found
before a request is sent, or mid-call) and every reconnect. A call is never resent by the transport: after
a timeout or a mid-call disconnect the call may or may not have run, and only the agent (or its policy)
may decide to repeat it; the connection is closed, since a late answer on it would answer the next call.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from agentrel.harness.conditions.noise import TIMEOUT
from agentrel.harness.faults import wire
from agentrel.harness.run.pipeline import ToolCall
from agentrel.sandbox.tools import ToolResult
from agentrel.sandbox.tools.withhold import Withhold

# What the agent sees when the connection dies under its call: like a timeout, the outcome is unknown.
LOST = {
    "error": "connection lost: the tool server closed the connection before answering; "
    "the request may or may not have run"
}
TransportKind = Literal["connect", "reconnect", "disconnect", "timeout", "answer"]


@dataclass(frozen=True)
class TransportEvent:
    kind: TransportKind
    call_id: str | None
    at: float  # time.monotonic()
    boot_id: str | None = None
    pid: int | None = None
    detail: str = ""


@dataclass
class RemoteTools:
    host: str
    port: int
    timeout_s: float = 30.0
    run_tag: str = "call"  # call ids are `<run_tag>:<ordinal>`, unique within the run database
    log: list[TransportEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._ever_connected = False
        self._lock = asyncio.Lock()

    def call_id(self, ordinal: int) -> str:
        return f"{self.run_tag}:{ordinal}"

    async def terminal(self, call: ToolCall) -> ToolResult:
        """The pipeline's end on the fault path (`Pipeline(remote.terminal, layers, seed)`)."""
        if call.error is not None:
            return ToolResult(False, {"error": call.error})
        return await self.call(call.tool, call.args, self.call_id(call.ordinal), call.withhold)

    async def connect(self) -> None:
        """Open the connection and greet the server before the first call, as an MCP client initializes
        its session: a fault on the very first call then meets a live connection (through the proxy, to
        the server that answered), as a fault on any later call does."""
        async with self._lock:
            reader, writer = await self._connection(None)
            writer.write(wire.encode(wire.request("/health")))
            await writer.drain()
            message = await asyncio.wait_for(wire.read_message(reader), self.timeout_s)
            body = message.json() if message is not None else None
            if not isinstance(body, dict):
                raise ConnectionError("the tool server did not answer the greeting")
            self._note("answer", None, boot_id=body.get("boot_id"), pid=body.get("pid"), detail="greeting")

    async def call(self, tool: str, args: Any, call_id: str, withhold: Withhold | None = None) -> ToolResult:
        async with self._lock:
            try:
                reader, writer = await self._connection(call_id)
            except OSError as exc:
                self._note("disconnect", call_id, detail=f"connect failed: {type(exc).__name__}")
                return ToolResult(False, LOST)
            try:
                payload = {"tool": tool, "args": args, "call_id": call_id}
                if withhold is not None:  # only when asked: every other request's bytes are as they were
                    payload["withhold"] = withhold
                writer.write(wire.encode(wire.request("/call", payload)))
                await writer.drain()
                message = await asyncio.wait_for(wire.read_message(reader), self.timeout_s)
            except TimeoutError:
                self._note("timeout", call_id)
                await self._drop()
                return ToolResult(False, TIMEOUT)
            except (OSError, wire.FramingError) as exc:
                self._note("disconnect", call_id, detail=f"mid-call: {type(exc).__name__}")
                await self._drop()
                return ToolResult(False, LOST)
            except TypeError as exc:  # arguments JSON cannot carry: the agent's own, as a tool error
                return ToolResult(False, {"error": f"tool call failed: {exc}"[:300]})
            if message is None:
                self._note("disconnect", call_id, detail="mid-call: end of stream")
                await self._drop()
                return ToolResult(False, LOST)
            body = message.json()
            if wire.status_of(message) != 200 or not isinstance(body, dict):
                self._note("answer", call_id, detail=f"HTTP {wire.status_of(message)}")
                error = body.get("error") if isinstance(body, dict) else None
                return ToolResult(False, {"error": f"HTTP {wire.status_of(message)}: {error}"})
            self._note("answer", call_id, boot_id=body.get("boot_id"), pid=body.get("pid"))
            return ToolResult(
                bool(body.get("ok")),
                body.get("content"),
                body.get("raw"),
                withheld=bool(body.get("withheld")),
                kept=int(body.get("kept") or 0),
                replayed=bool(body.get("replayed")),
            )

    async def _connection(self, call_id: str | None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        await asyncio.sleep(0)  # let a pending end-of-stream reach the reader before it is checked
        if self._writer is not None and self._reader is not None:
            if not (self._reader.at_eof() or self._writer.is_closing()):
                return self._reader, self._writer
            # Found closed while idle: the request is not yet sent, so nothing is in doubt.
            self._note("disconnect", call_id, detail="idle")
            await self._drop()
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        self._note("reconnect" if self._ever_connected else "connect", call_id)
        self._ever_connected = True
        return self._reader, self._writer

    async def _drop(self) -> None:
        writer, self._reader, self._writer = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    def _note(self, kind: TransportKind, call_id: str | None, **kw: Any) -> None:
        self.log.append(TransportEvent(kind, call_id, time.monotonic(), **kw))

    def answers(self) -> list[TransportEvent]:
        return [e for e in self.log if e.kind == "answer"]

    async def close(self) -> None:
        async with self._lock:
            await self._drop()


async def probe(host: str, port: int, timeout_s: float) -> dict[str, Any] | None:
    """GET /health on a fresh connection: the server's `{boot_id, pid}`, or None if no answer came."""
    return await _once(host, port, wire.request("/health"), timeout_s)


async def post(
    host: str, port: int, path: str, payload: Any, timeout_s: float = 5.0
) -> dict[str, Any] | None:
    """One request on a fresh connection (the harness's own, straight to a server: `/hold`)."""
    return await _once(host, port, wire.request(path, payload), timeout_s)


async def _once(host: str, port: int, message: wire.Message, timeout_s: float) -> dict[str, Any] | None:
    writer: asyncio.StreamWriter | None = None
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(wire.encode(message))
            await writer.drain()
            answer = await wire.read_message(reader)
        body = answer.json() if answer is not None else None
        return body if isinstance(body, dict) else None
    except (TimeoutError, OSError, wire.FramingError, ValueError):
        return None
    finally:
        if writer is not None:
            writer.close()
