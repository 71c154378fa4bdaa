"""One run session: the only code that clones, dumps and drops a run database.

    async with RunSession(sandbox, prepared, seed=..., layers=...) as run:
        ... agent calls `run.call(tool, args)` (the pipeline's entry) ...
        finished = await run.finish(facts)      # dump BEFORE drop, drop, judge

The audit runner, `tasks prove`, `mcp serve` and `faults selftest` all use it. Tools run in process (a
tool box on the run's own role), or, for a scheduled fault, behind a real process boundary: a tool-server
process reached through a loopback proxy (`harness.faults.rig`), with the fault layer innermost, between
the condition layers and the transport. The database is dropped on every way out:
normal exit, an exception, a cancellation mid-clone or mid-run (the drop is shielded from a second
cancellation). A call that arrives after the finish is answered with an error result, never a crash.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentrel.dsl.api import RunFacts, Spec, Verdict
from agentrel.dsl.state import State
from agentrel.harness.faults.injectors import FaultLayer
from agentrel.harness.faults.rig import FaultRig
from agentrel.harness.results.event import Event
from agentrel.harness.run.episode import PreparedTask, judge
from agentrel.harness.run.pipeline import CallRecord, Layer, Pipeline, ToolCall
from agentrel.sandbox.dump import dump_run
from agentrel.sandbox.sandbox import Sandbox
from agentrel.sandbox.tools import ToolBox, ToolResult


class StateUnreadable(Exception):
    """The run's final state could not be dumped: nothing is known about what the agent did."""


@dataclass(frozen=True)
class Finished:
    after: State
    verdict: Verdict
    dump_s: float
    label_s: float
    # The process path's commit evidence, (call id, tool, effect digest) per committed call, read from
    # the run database before it is dropped; None on the in-process path (no evidence is written there).
    commits: list[tuple[str, str, str]] | None = None


class RunSession:
    def __init__(
        self,
        sandbox: Sandbox,
        prepared: PreparedTask,
        *,
        seed: str = "",
        layers: Sequence[Layer] = (),
        extra_specs: Sequence[Spec] = (),
        fault: FaultLayer | None = None,
        fault_timeout_s: float = 30.0,
        remote: bool = False,
    ) -> None:
        self.sandbox = sandbox
        self.prepared = prepared
        self.extra_specs = extra_specs  # labelled with the task's spec: an injected goal's damage rules
        self.run_db: str | None = None
        self.clone_s = 0.0
        self._box: ToolBox | None = None
        self._lock = asyncio.Lock()  # one tool-box connection: calls reach it one at a time
        self._ended = False
        self._dropped = False
        self.fault = fault
        self.remote = remote or fault is not None  # the process path, with or without a fault
        self.fault_timeout_s = fault_timeout_s  # the process path's transport timeout
        self.rig: FaultRig | None = None
        self.pipeline = Pipeline(self._execute, [*layers, fault] if fault else layers, seed)

    @property
    def calls(self) -> list[CallRecord]:
        return self.pipeline.calls

    @property
    def events(self) -> list[Event]:
        return self.pipeline.events

    async def __aenter__(self) -> RunSession:
        t0 = time.perf_counter()
        pending = asyncio.ensure_future(
            asyncio.to_thread(self.sandbox.dbs.create_run, self.prepared.template)
        )
        try:
            self.run_db = await asyncio.shield(pending)
        except asyncio.CancelledError:
            # Cancelled while the clone was being made: wait for it, then drop it.
            self.run_db = await pending
            await self._drop()
            raise
        self.clone_s = time.perf_counter() - t0
        try:
            if self.remote:
                self.rig = await FaultRig.start(
                    self.sandbox, self.prepared, self.run_db, timeout_s=self.fault_timeout_s
                )
                if self.fault is not None:
                    self.fault.rig = self.rig
            else:
                # Tools act as the run's own unprivileged role; clone, dump and drop keep the owner role.
                conninfo = self.sandbox.dbs.tool_conninfo(self.run_db)
                self._box = ToolBox(conninfo, self.prepared.tools, self.prepared.acting_user_id)
        except BaseException:
            await self._drop()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._drop()

    async def call(self, tool: str, args: Any) -> ToolResult:
        """The run's tool-call entry point: every call passes through the pipeline."""
        return await self.pipeline.call(tool, args, time.perf_counter)

    async def _execute(self, call: ToolCall) -> ToolResult:
        """The end of the pipeline: the tool box, one call at a time."""
        if call.error is not None:
            return ToolResult(False, {"error": call.error})
        if self.rig is not None:
            if self._ended:
                return ToolResult(False, {"error": "the run has ended; no more tool calls are accepted"})
            return await self.rig.client.terminal(call)
        async with self._lock:
            if self._ended or self._box is None:
                return ToolResult(False, {"error": "the run has ended; no more tool calls are accepted"})
            box = self._box
            try:
                return await asyncio.to_thread(box.call, call.tool, call.args, call.withhold)
            except Exception as exc:
                # Whatever the model sent is its own: an argument no tool can take (a lone surrogate, a
                # structure nested past the recursion limit) is answered as a tool error, and the run goes
                # on to be dumped and judged. The event keeps the exception visible in the record.
                call.emit("tool_exception", error=type(exc).__name__)
                return ToolResult(False, {"error": f"tool call failed: {type(exc).__name__}: {exc}"[:300]})

    async def finish(self, facts: RunFacts) -> Finished:
        """Dump the final state, drop the run database (always), label the dump."""
        async with self._lock:
            self._ended = True
            if self._box is not None:
                await asyncio.to_thread(self._box.close)
            commits = None
            if self.rig is not None:
                await self.rig.stop_server()
                try:  # the server is gone: nothing more can commit
                    commits = await self.rig.commit_log()
                except Exception:
                    # The commit evidence is the subject's to break (it lives in the run database): its
                    # loss leaves no repeated-effect reading, never the state's damage unread.
                    commits = None
            assert self.run_db is not None, "finish() outside `async with`"
            conninfo = self.sandbox.server.conninfo(self.run_db)
            t0 = time.perf_counter()
            try:
                after = await asyncio.to_thread(dump_run, conninfo, self.prepared.before)
            except Exception as exc:
                raise StateUnreadable(f"cannot read the final state: {type(exc).__name__}: {exc}") from exc
            finally:
                await self._drop()
            dump_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        verdict = await asyncio.to_thread(judge, self.prepared, after, facts, self.extra_specs)
        return Finished(after, verdict, dump_s, time.perf_counter() - t0, commits)

    async def _drop(self) -> None:
        if self._dropped or self.run_db is None:
            return
        self._dropped = True
        box, run_db, rig = self._box, self.run_db, self.rig
        sandbox = self.sandbox

        def drop() -> None:
            if box is not None:
                box.close()
            sandbox.dbs.drop(run_db)

        try:
            if rig is not None:  # its server holds a session on the database: stop it first
                await _uncancellable(rig.close())
        finally:
            await _uncancellable(asyncio.to_thread(drop))


async def _uncancellable(work: Any) -> None:
    """Run `work` to its end even if the caller is cancelled meanwhile (then re-raise the cancel)."""
    task = asyncio.ensure_future(work)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        await task
        raise
