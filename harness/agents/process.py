"""An agent program as a child process: its own process group, a time budget, bounded output.

The process is started without a shell, in a new session (so it leads its own process group), with
stdin closed. Its stdout and stderr are read as they come and kept bounded (the first HEAD_BYTES and the
last TAIL_BYTES of each, with the total count): an agent writing gigabytes never fills the disk or the
memory. It ends when it exits or its budget passes; either way its whole process group is then killed,
so nothing it started outlives the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

HEAD_BYTES = 48 * 1024
TAIL_BYTES = 16 * 1024
CHUNK = 64 * 1024
TERM_GRACE_S = 2.0  # SIGTERM first, SIGKILL after this
DRAIN_S = 2.0  # how long the pipes may stay open once the group is gone


@dataclass
class Bounded:
    """The head and tail of a stream and how many bytes it carried in all."""

    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            del self.tail[: max(0, len(self.tail) - TAIL_BYTES)]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        if not self.tail:
            return head
        gap = self.total - len(self.head) - len(self.tail)
        cut = f"\n[... {gap} bytes not kept ...]\n" if gap else ""
        return head + cut + self.tail.decode("utf-8", errors="replace")


@dataclass
class ProcessEnd:
    returncode: int | None  # None: it did not end by itself (killed at its budget, or never started)
    timed_out: bool
    elapsed_s: float
    stdout: Bounded
    stderr: Bounded
    spawn_error: str | None = None


async def run_process(
    argv: Sequence[str],
    env: Mapping[str, str],
    timeout_s: float,
    *,
    cwd: Path | None = None,
    stop_when: Callable[[], bool] | None = None,
) -> ProcessEnd:
    """Run `argv` to its end or its budget; `stop_when` (polled) ends it early, e.g. once a probe has
    seen what it needed."""
    out, err = Bounded(), Bounded()
    t0 = time.perf_counter()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            env=dict(env),
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        return ProcessEnd(None, False, time.perf_counter() - t0, out, err, spawn_error=f"{argv[0]}: {why}")
    assert proc.stdout is not None and proc.stderr is not None
    readers = [
        asyncio.ensure_future(_drain(proc.stdout, out)),
        asyncio.ensure_future(_drain(proc.stderr, err)),
    ]
    timed_out = False
    try:
        timed_out = not await _wait(proc, timeout_s, stop_when)
        if timed_out:
            await _terminate(proc)
    finally:
        _kill_group(proc.pid, signal.SIGKILL)  # whatever it left running (a server it spawned, a child)
        if proc.returncode is None:
            await _uncancelled_wait(proc)
        _, pending = await asyncio.wait(readers, timeout=DRAIN_S)
        for reader in pending:
            reader.cancel()
    return ProcessEnd(None if timed_out else proc.returncode, timed_out, time.perf_counter() - t0, out, err)


async def _wait(
    proc: asyncio.subprocess.Process, timeout_s: float, stop_when: Callable[[], bool] | None
) -> bool:
    """True when it exited by itself within the budget (or `stop_when` held)."""
    if stop_when is None:
        try:
            await asyncio.wait_for(proc.wait(), timeout_s)
            return True
        except TimeoutError:
            return False
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    waiter = asyncio.ensure_future(proc.wait())
    try:
        while loop.time() < deadline:
            done, _ = await asyncio.wait({waiter}, timeout=min(0.02, max(0.0, deadline - loop.time())))
            if done or stop_when():
                return True
        return waiter.done()
    finally:
        if not waiter.done():
            waiter.cancel()


async def _terminate(proc: asyncio.subprocess.Process) -> None:
    _kill_group(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), TERM_GRACE_S)
    except TimeoutError:
        _kill_group(proc.pid, signal.SIGKILL)


async def _uncancelled_wait(proc: asyncio.subprocess.Process) -> None:
    task = asyncio.ensure_future(proc.wait())
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        await task
        raise


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
        os.killpg(pgid, sig)


async def _drain(stream: asyncio.StreamReader, into: Bounded) -> None:
    while chunk := await stream.read(CHUNK):
        into.add(chunk)
