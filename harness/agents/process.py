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
POLL_S = 0.01  # how often the exit status is looked at


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
    marker: str | None = None,
    pass_fds: Sequence[int] = (),
) -> ProcessEnd:
    """Run `argv` to its end or its budget; `stop_when` (polled) ends it early, e.g. once a probe has
    seen what it needed. `marker` ("NAME=value", unique to this run, in `env`): at the end, every process
    still carrying it in its environment is killed too, for what left the process group (an MCP client
    library starts its stdio server in a session of its own, which would keep the run's connection open).
    `pass_fds`: descriptors the child inherits (the sandbox's info pipe)."""
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
            pass_fds=tuple(pass_fds),
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
        if marker is not None:
            kill_marked(marker)
        # Reaped by now or soon (SIGKILL); the pipes may stay open in what escaped both kills: bounded.
        await _uncancelled_wait(proc, DRAIN_S)
        _, pending = await asyncio.wait(readers, timeout=DRAIN_S)
        for reader in pending:
            reader.cancel()
        # Our ends of the pipes are closed here, while the loop runs: left to the garbage collector after
        # the loop has closed (a descendant that escaped both kills holds the pipes open), the transport's
        # finalizer raises, and on CPython 3.11 a finalizer that runs inside `ast.parse` breaks it
        # ("AST constructor recursion depth mismatch", seen in an unrelated test of a loaded run).
        transport = getattr(proc, "_transport", None)  # asyncio's Process exposes no close of its own
        if transport is not None:
            transport.close()
    return ProcessEnd(None if timed_out else proc.returncode, timed_out, time.perf_counter() - t0, out, err)


async def _wait(
    proc: asyncio.subprocess.Process, timeout_s: float, stop_when: Callable[[], bool] | None
) -> bool:
    """True when it exited by itself within the budget (or `stop_when` held). Polls the exit status:
    asyncio's `wait()` also waits for the pipes to close, which a child that outlives the agent holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while proc.returncode is None:
        if stop_when is not None and stop_when():
            return True
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(POLL_S)
    return True


async def _terminate(proc: asyncio.subprocess.Process) -> None:
    _kill_group(proc.pid, signal.SIGTERM)
    if not await _wait(proc, TERM_GRACE_S, None):
        _kill_group(proc.pid, signal.SIGKILL)


async def _uncancelled_wait(proc: asyncio.subprocess.Process, bound_s: float) -> None:
    """Wait (a bounded time) for the killed process to be reaped, even if the caller is cancelled."""
    task = asyncio.ensure_future(_wait(proc, bound_s, None))
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


def kill_marked(marker: str) -> list[int]:
    """SIGKILL every process (of this user) whose environment holds `marker` exactly; Linux /proc only.
    The marker is a per-run secret, so no other process can carry it by chance."""
    needle = marker.encode() + b"\0"
    me, killed = os.getpid(), list[int]()
    proc = Path("/proc")
    if not proc.is_dir():
        return killed
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue  # gone, or another user's
        if environ.startswith(needle) or b"\0" + needle in environ:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
    return killed
