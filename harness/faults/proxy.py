"""FaultProxy: a loopback TCP proxy between the client and the tool server, controlled by the harness.

Modes: pass; swallow the next response (the request is forwarded, the whole upstream response is read
and 0 bytes of it are forwarded); partition for T seconds (every byte either way is dropped, the
connections stay open, as a network that loses packets leaves them). It frames HTTP messages (wire.py),
so it can swallow exactly one response and record each request's call id.

Counters (`ProxyCounters`) are what the proxy saw, per exchange and in total: upstream response bytes
seen, response bytes forwarded, bytes dropped, connections dropped (closed by the proxy after losing
traffic), the call ids of requests. When the upstream server goes away (a restart, a kill), the client's
connection is closed too, so the client sees the disconnect a real one would. `retarget(port)` points the
proxy at a restarted server: the client keeps one address, as behind a load balancer.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

from agentrel.harness.faults import wire


@dataclass
class Exchange:
    """One request the proxy read, and what became of it and its response."""

    call_id: str | None
    path: str
    request_bytes: int
    forwarded_request: bool = False
    upstream_response_bytes: int = 0
    forwarded_response_bytes: int = 0
    swallowed: bool = False
    dropped: bool = False  # lost to a partition (the request, or its response)
    dropped_bytes: int = 0  # of this exchange, lost to a partition


@dataclass
class ProxyCounters:
    connections: int = 0
    connections_dropped: int = 0
    upstream_closed: int = 0  # client connections closed because the server's side ended
    upstream_response_bytes: int = 0
    forwarded_response_bytes: int = 0
    dropped_bytes: int = 0
    exchanges: list[Exchange] = field(default_factory=list)

    @property
    def call_ids(self) -> list[str]:
        return [e.call_id for e in self.exchanges if e.call_id is not None]

    def exchange(self, call_id: str) -> Exchange | None:
        return next((e for e in self.exchanges if e.call_id == call_id), None)


class FaultProxy:
    def __init__(self, upstream_port: int, host: str = "127.0.0.1") -> None:
        if host != "127.0.0.1":
            raise ValueError("the fault proxy listens on 127.0.0.1 only")
        self.host = host
        self.upstream_port = upstream_port
        self.counters = ProxyCounters()
        self.port = 0
        self._server: asyncio.Server | None = None
        self._swallow = 0
        self._partition_until = 0.0
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._accept, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    # -- control --------------------------------------------------------------------------------------
    def retarget(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port

    def swallow_next_response(self) -> None:
        self._swallow += 1

    def partition(self, seconds: float) -> None:
        self._partition_until = time.monotonic() + seconds

    def heal(self) -> None:
        self._partition_until = 0.0

    def partitioned(self) -> bool:
        return time.monotonic() < self._partition_until

    def partition_left_s(self) -> float:
        return max(0.0, self._partition_until - time.monotonic())

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task

    # -- forwarding -----------------------------------------------------------------------------------
    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.counters.connections += 1
        up: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        lost = False  # this connection lost bytes to a partition: its byte stream is no longer whole
        try:
            while True:
                message, upstream_gone = await _next_request(reader, up)
                if upstream_gone:
                    self.counters.upstream_closed += 1
                    return
                if message is None:
                    return
                path = message.start.split(" ")[1] if " " in message.start else ""
                exchange = Exchange(wire.call_id_of(message), path, message.size)
                self.counters.exchanges.append(exchange)
                if self.partitioned():
                    exchange.dropped, lost = True, True
                    exchange.dropped_bytes += message.size
                    self.counters.dropped_bytes += message.size
                    continue
                if up is None:
                    try:
                        up = await asyncio.open_connection(self.host, self.upstream_port)
                    except OSError:
                        return  # nothing listens: the client sees its connection end
                up[1].write(wire.encode(message))
                await up[1].drain()
                exchange.forwarded_request = True
                answer = await wire.read_message(up[0])
                if answer is None:
                    self.counters.upstream_closed += 1
                    return
                size = answer.size
                exchange.upstream_response_bytes = size
                self.counters.upstream_response_bytes += size
                if self.partitioned():
                    exchange.dropped, lost = True, True
                    exchange.dropped_bytes += size
                    self.counters.dropped_bytes += size
                elif self._swallow > 0:
                    self._swallow -= 1
                    exchange.swallowed = True
                else:
                    writer.write(wire.encode(answer))
                    await writer.drain()
                    exchange.forwarded_response_bytes = size
                    self.counters.forwarded_response_bytes += size
        except (OSError, wire.FramingError):
            return
        finally:
            if lost:
                self.counters.connections_dropped += 1
            for w in (writer, up[1] if up else None):
                if w is not None:
                    w.close()
            self._tasks.discard(task)


async def _next_request(
    reader: asyncio.StreamReader, up: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None
) -> tuple[wire.Message | None, bool]:
    """The client's next request, or (None, True) when the upstream connection ends first (the server
    restarted or died while the client was idle): the client's connection is then closed as well."""
    request = asyncio.ensure_future(wire.read_message(reader))
    if up is None:
        return await request, False
    gone = asyncio.ensure_future(up[0].read(1))  # the server sends nothing unasked: any return is its end
    done, _ = await asyncio.wait({request, gone}, return_when=asyncio.FIRST_COMPLETED)
    if request in done:
        # Wait for the cancel to land: two readers on one stream is an error, and the exchange is next.
        gone.cancel()
        with contextlib.suppress(BaseException):
            await gone
        if gone.done() and not gone.cancelled() and gone.exception() is None:
            return None, True  # it ended (or spoke unasked) at the same moment: treat it as gone
        return request.result(), False
    request.cancel()
    with contextlib.suppress(BaseException):
        await request
    return None, True
