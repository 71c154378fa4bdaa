"""FaultProxy's modes and counters against a real upstream on 127.0.0.1 (no database needed)."""

from __future__ import annotations

import asyncio
from typing import Any

from agentrel.harness.faults import wire
from agentrel.harness.faults.client import RemoteTools, probe
from agentrel.harness.faults.proxy import FaultProxy


async def _upstream() -> tuple[asyncio.Server, int]:
    """A stand-in tool server: answers every /call with its call id, /health with a boot id."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (message := await wire.read_message(reader)) is not None:
            body: dict[str, Any] = {"boot_id": "b1", "pid": 1}
            if message.start.startswith("POST /call"):
                body |= {"ok": True, "content": {"echo": wire.call_id_of(message)}}
            writer.write(wire.encode(wire.response(200, body)))
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def test_pass_swallow_partition_counters() -> None:
    async def main() -> None:
        upstream, port = await _upstream()
        proxy = await FaultProxy(port).start()
        client = RemoteTools("127.0.0.1", proxy.port, timeout_s=0.5, run_tag="t")
        try:
            first = await client.call("get_case", {}, "t:1")
            assert first.ok and first.content == {"echo": "t:1"}
            c = proxy.counters
            assert c.upstream_response_bytes == c.forwarded_response_bytes > 0

            proxy.swallow_next_response()
            lost = await client.call("issue_refund", {}, "t:2")
            assert not lost.ok and lost.content["error"].startswith("timeout")
            ex = c.exchange("t:2")
            assert ex is not None and ex.swallowed and ex.upstream_response_bytes > 0
            assert ex.forwarded_response_bytes == 0
            assert c.upstream_response_bytes > c.forwarded_response_bytes
            # only one response is swallowed; the client reconnected after its timeout
            assert (await client.call("get_case", {}, "t:3")).ok
            assert [e.kind for e in client.log].count("reconnect") == 1

            proxy.partition(0.6)
            assert await probe("127.0.0.1", proxy.port, 0.2) is None
            assert await probe("127.0.0.1", port, 0.2) is not None  # the control probe, straight
            cut = await client.call("get_case", {}, "t:4")
            assert not cut.ok and c.dropped_bytes > 0
            await asyncio.sleep(proxy.partition_left_s())
            assert await probe("127.0.0.1", proxy.port, 1.0) is not None
            assert (await client.call("get_case", {}, "t:5")).ok
            await asyncio.sleep(0.05)
            assert c.connections_dropped >= 2  # the probe's and the call's connections lost bytes
            assert c.call_ids == ["t:1", "t:2", "t:3", "t:4", "t:5"]
            assert [e.call_id for e in c.exchanges if e.dropped] == [None, "t:4"]
        finally:
            await client.close()
            await proxy.close()
            upstream.close()

    asyncio.run(main())


def test_upstream_end_is_seen_by_the_client_before_it_sends() -> None:
    """A server that goes away between calls: the proxy closes the client's connection too, so the
    client finds it closed while idle (nothing in doubt), reconnects, and the next call goes through."""

    async def main() -> None:
        async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            message = await wire.read_message(reader)
            assert message is not None
            body = {"boot_id": "b", "pid": 1, "ok": True, "content": {"echo": wire.call_id_of(message)}}
            writer.write(wire.encode(wire.response(200, body)))
            await writer.drain()
            writer.close()  # one answer, then the server side ends

        upstream = await asyncio.start_server(once, "127.0.0.1", 0)
        proxy = await FaultProxy(upstream.sockets[0].getsockname()[1]).start()
        client = RemoteTools("127.0.0.1", proxy.port, timeout_s=0.5)
        try:
            assert (await client.call("get_case", {}, "x:1")).ok
            await asyncio.sleep(0.1)
            assert proxy.counters.upstream_closed == 1
            assert (await client.call("get_case", {}, "x:2")).ok
            kinds = [(e.kind, e.detail) for e in client.log]
            assert kinds == [
                ("connect", ""),
                ("answer", ""),
                ("disconnect", "idle"),
                ("reconnect", ""),
                ("answer", ""),
            ]
        finally:
            await client.close()
            await proxy.close()
            upstream.close()

    asyncio.run(main())
