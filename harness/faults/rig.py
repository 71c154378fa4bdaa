"""One fault run's plumbing: run database, tool server process, proxy and client, and the owner-side
reads the witnesses make (commit evidence, the server's backend in pg_stat_activity).

    async with FaultRig.open(sandbox, prepared, timeout_s=1.5) as rig:
        pipeline = Pipeline(rig.client.terminal, [FaultLayer(injector, rig, log)], seed)
        ... scripted or model calls through pipeline.call ...
        after, verdict = await rig.finish(facts)     # server stopped, dump BEFORE drop, judge

The rig clones and drops its own database, as `RunSession` does for the in-process path; the integration
will make the session own it (see README, Faults that really happen).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import psycopg

from dsl.api import RunFacts, Verdict
from dsl.state import State
from harness.episode import PreparedTask, judge
from harness.faults.client import RemoteTools
from harness.faults.process import ServerProcess, ServerSpec
from harness.faults.proxy import FaultProxy
from harness.faults.server import APP_PREFIX
from sandbox import tracking
from sandbox.dump import dump_run
from sandbox.sandbox import Sandbox


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
    @asynccontextmanager
    async def open(
        cls, sandbox: Sandbox, prepared: PreparedTask, *, timeout_s: float = 30.0
    ) -> AsyncIterator[FaultRig]:
        run_db = await asyncio.to_thread(sandbox.dbs.create_run, prepared.template)
        server: ServerProcess | None = None
        proxy: FaultProxy | None = None
        rig: FaultRig | None = None
        try:
            spec = ServerSpec(
                sandbox.dbs.tool_conninfo(run_db), tuple(prepared.tools), prepared.acting_user_id
            )
            server = await asyncio.to_thread(ServerProcess.start, spec)
            proxy = await FaultProxy(server.port).start()
            client = RemoteTools("127.0.0.1", proxy.port, timeout_s, run_tag=secrets.token_hex(4))
            rig = cls(sandbox, prepared, run_db, spec, server, proxy, client, [])
            yield rig
        finally:
            if rig is not None:
                await rig.client.close()
            if proxy is not None:
                await proxy.close()
            servers = [*rig.retired, rig.server] if rig is not None else [server] if server else []
            for each in servers:
                await asyncio.to_thread(each.close)
            await asyncio.to_thread(sandbox.dbs.drop, run_db)

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
    async def finish(self, facts: RunFacts) -> tuple[State, Verdict]:
        """Stop the server (its session ends, nothing in flight), dump as the owner, judge.
        The database is dropped by `open`'s exit, after the dump."""
        await self.client.close()
        await asyncio.to_thread(self.server.stop)
        after = await asyncio.to_thread(
            dump_run, self.sandbox.server.conninfo(self.run_db), self.prepared.before
        )
        verdict = await asyncio.to_thread(judge, self.prepared, after, facts)
        return after, verdict
