"""One fault run's process path on a run database the run session made: the tool server process, the
proxy and the client, and the owner-side reads the witnesses make (commit evidence, the server's backend
in pg_stat_activity). The session clones, dumps and drops the database, as on the in-process path:

    rig = await FaultRig.start(sandbox, prepared, run_db, timeout_s=2.5)
    ... calls through rig.client.terminal, a FaultLayer bound to the rig in front of it ...
    await rig.stop_server()      # before the dump: nothing in flight, the server's session ended
    await rig.close()            # on every way out
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass

import psycopg

from agentrel.harness.faults.client import RemoteTools
from agentrel.harness.faults.process import ServerProcess, ServerSpec
from agentrel.harness.faults.proxy import FaultProxy
from agentrel.harness.faults.server import APP_PREFIX
from agentrel.harness.run.episode import PreparedTask
from agentrel.sandbox import tracking
from agentrel.sandbox.sandbox import Sandbox


@dataclass
class FaultRig:
    sandbox: Sandbox
    prepared: PreparedTask
    run_db: str
    spec: ServerSpec
    server: ServerProcess
    proxy: FaultProxy
    client: RemoteTools
    retired: list[ServerProcess]  # servers stopped or killed during the run, reaped at the end

    @classmethod
    async def start(
        cls, sandbox: Sandbox, prepared: PreparedTask, run_db: str, *, timeout_s: float = 30.0
    ) -> FaultRig:
        spec = ServerSpec(
            sandbox.dbs.tool_conninfo(run_db),
            tuple(prepared.tools),
            prepared.acting_user_id,
            env=sandbox.env.name,
        )
        server = await asyncio.to_thread(ServerProcess.start, spec)
        try:
            proxy = await FaultProxy(server.port).start()
        except BaseException:
            await asyncio.to_thread(server.close)
            raise
        client = RemoteTools("127.0.0.1", proxy.port, timeout_s, run_tag=secrets.token_hex(4))
        rig = cls(sandbox, prepared, run_db, spec, server, proxy, client, [])
        try:
            await client.connect()
        except BaseException:
            await rig.close()
            raise
        return rig

    async def close(self) -> None:
        """Client, proxy and every server this run started, whatever state they are in."""
        await self.client.close()
        await self.proxy.close()
        for each in [*self.retired, self.server]:
            await asyncio.to_thread(each.close)

    # -- actions the injectors take ---------------------------------------------------------------------
    async def replace_server(self) -> ServerProcess:
        """Start a new server from the same spec and point the proxy at it (the old one is retired)."""
        new = await asyncio.to_thread(ServerProcess.start, self.spec)
        self.retired.append(self.server)
        self.server = new
        self.proxy.retarget(new.port)
        return new

    # -- owner-side reads (what the witnesses trust) ----------------------------------------------------
    def _owner(self) -> psycopg.Connection:
        return psycopg.connect(self.sandbox.server.conninfo(self.run_db), autocommit=True)

    async def committed(self, call_ids: list[str]) -> dict[str, str]:
        """call id -> boot id of the server that committed it, read on the owner's own connection."""

        def read() -> dict[str, str]:
            with self._owner() as conn:
                return tracking.committed_calls(conn, call_ids)

        return await asyncio.to_thread(read)

    async def commit_log(self) -> list[tuple[str, str, str]]:
        """Every committed call of the run as (call id, tool, effect digest), on the owner's connection."""

        def read() -> list[tuple[str, str, str]]:
            with self._owner() as conn:
                return tracking.commit_log(conn)

        return await asyncio.to_thread(read)

    async def backend_state(self, boot_id: str) -> str | None:
        """The wait event (or 'active'/'idle') of the server's Postgres session, None if it has none."""

        def read() -> str | None:
            with self._owner() as conn:
                row = conn.execute(
                    "SELECT coalesce(wait_event, state) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND application_name = %s",
                    (f"{APP_PREFIX}{boot_id}",),
                ).fetchone()
            return None if row is None else str(row[0])

        return await asyncio.to_thread(read)

    async def wait_backend(self, boot_id: str, want: str | None, timeout_s: float) -> bool:
        """Poll until the server's backend is in state `want` (None: gone); False past `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if await self.backend_state(boot_id) == want:
                return True
            await asyncio.sleep(0.02)
        return False

    # -- the end of the run -----------------------------------------------------------------------------
    async def stop_server(self) -> None:
        """Stop the server before the dump, so its session has ended and nothing is in flight."""
        await self.client.close()
        await asyncio.to_thread(self.server.stop)
