"""Starting, stopping and killing tool server processes, and reading how they ended (waitpid)."""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from agentrel.harness.faults.server import CONNINFO_ENV

BOOT_TIMEOUT_S = 60.0  # a loaded 2-core machine takes ~1.5 s to import the tools; 60 s means it is stuck


class ServerStartFailed(Exception):
    """The tool server did not report READY: the fault harness cannot run (a harness failure)."""


@dataclass(frozen=True)
class ServerSpec:
    """What every server of one run is started with; a restart starts another from the same spec."""

    conninfo: str
    tools: tuple[str, ...]
    acting_user_id: int
    call_timeout_s: float = 30.0
    allow_hold: bool = True
    env: str = "agentrel-enterprise"  # the run's environment, by name: the server serves its tools


def start_identity(pid: int) -> str | None:
    """`<kernel boot id>:<start time>` of a live process, from the kernel (/proc), never from the process:
    a pid is reused once its process is reaped, a (boot, start tick) pair is not. None where there is
    no /proc (not Linux) or no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    # Field 2 (comm) may hold spaces and parentheses: fields after its last ")" start at field 3 (state),
    # so field 22 (starttime, clock ticks since boot) is the 20th of them.
    rest = stat[stat.rindex(")") + 2 :].split()
    return f"{boot}:{rest[19]}" if len(rest) > 19 else None


@dataclass
class ServerProcess:
    """One tool server process. `boot_id` and `pid` are what its READY line said; `start_identity` is
    what the kernel said of that pid when it was started (`start_identity()`)."""

    popen: subprocess.Popen[bytes]
    port: int
    boot_id: str
    pid: int
    start_identity: str | None = None

    @classmethod
    def start(cls, spec: ServerSpec) -> ServerProcess:
        """A server bound to the spec's run: a warm spare from the pool (its imports already paid while
        the previous run worked), told its binding on stdin."""
        popen = POOL.take(spec.env)
        bind = {
            "env": spec.env,
            "conninfo": spec.conninfo,
            "tools": list(spec.tools),
            "acting_user_id": spec.acting_user_id,
            "call_timeout_s": spec.call_timeout_s,
            "allow_hold": spec.allow_hold,
        }
        assert popen.stdin is not None
        try:
            popen.stdin.write(json.dumps(bind).encode() + b"\n")
            popen.stdin.flush()
        except OSError:
            pass  # it died while idle: the READY check below says so
        line = _readline(popen, BOOT_TIMEOUT_S)
        parts = line.split()
        if len(parts) != 4 or parts[0] != "READY":
            popen.kill()
            popen.wait()
            raise ServerStartFailed(f"tool server did not start (said {line[:200]!r})")
        return cls(popen, int(parts[1]), parts[2], int(parts[3]), start_identity(popen.pid))

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout_s: float = 10.0) -> int:
        """SIGTERM, wait for a clean exit (SIGKILL past `timeout_s`); the wait status's return code."""
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            return self.popen.wait()

    def kill(self) -> str | None:
        """SIGKILL by pid, only if that pid is still the process started (its start identity); returns
        the identity read just before the signal. The caller learns what happened from `wait_status`."""
        seen = start_identity(self.pid)
        if self.alive() and seen is not None and seen == self.start_identity:
            os.kill(self.pid, signal.SIGKILL)
        return seen

    def wait_status(self, timeout_s: float = 10.0) -> int | None:
        """The kernel's account of how the process ended (Popen's waitpid): -9 for SIGKILL, None if it
        is still running after `timeout_s`."""
        try:
            return self.popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        """Make sure it is gone (every way out of a fault run ends here)."""
        if self.alive():
            self.stop(5.0)
        for pipe in (self.popen.stdin, self.popen.stdout):
            if pipe is not None:
                pipe.close()


class WarmPool:
    """Idle tool-server processes, imported and waiting for a binding, so a fault run (and a restart
    within it) does not wait for a Python start and the tools' imports. Spares are kept per environment
    (each started for one, whose tools it builds while idle), so a run is never handed a spare warmed for
    another. Each spare's stdin is a pipe to this process: when it exits, however it exits, the spares
    see the end of stdin and exit too."""

    def __init__(self, spares: int = 2) -> None:
        self.spares = spares
        self._idle: dict[str, deque[subprocess.Popen[bytes]]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def take(self, env: str) -> subprocess.Popen[bytes]:
        with self._lock:
            idle = self._idle.get(env)
            popen = idle.popleft() if idle else None
        if popen is None:
            popen = _spawn(env)
        line = _readline(popen, BOOT_TIMEOUT_S)  # a spare still importing is waited for here
        if not line.startswith("WAITING"):
            popen.kill()
            popen.wait()
            raise ServerStartFailed(f"tool server did not start (said {line[:200]!r})")
        threading.Thread(target=self._refill, args=(env,), daemon=True).start()
        return popen

    def _refill(self, env: str) -> None:
        while True:
            with self._lock:
                if self._closed or len(self._idle.get(env, ())) >= self.spares:
                    return
            spare = _spawn(env)
            with self._lock:
                if self._closed:
                    spare.kill()
                    spare.wait()
                    return
                self._idle.setdefault(env, deque()).append(spare)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle = [p for spares in self._idle.values() for p in spares]
            self._idle = {}
        for popen in idle:
            for pipe in (popen.stdin, popen.stdout):
                if pipe is not None:
                    pipe.close()  # end of stdin: the spare exits by itself
            popen.wait(10)


def _spawn(environment: str) -> subprocess.Popen[bytes]:
    from agentrel.sandbox.environments.registry import child_environ

    # No conninfo in the environment: a spare learns its run only from its binding. The environment's
    # name is written here, for the spare to warm its tools (the binding names the run's again).
    env = child_environ(environment, {k: v for k, v in os.environ.items() if k != CONNINFO_ENV})
    # -P: the working directory never goes on the child's path, so a user's `harness.py` cannot shadow ours.
    argv = [
        sys.executable,
        "-P",
        "-m",
        "agentrel.harness.faults.server",
        "--bind-from-stdin",
        "--parent-pipe",
    ]
    # stdin is a pipe only this process writes to: it closes when we exit, however we exit.
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.PIPE, env=env)


POOL = WarmPool()
atexit.register(POOL.close)


def _readline(popen: subprocess.Popen[bytes], timeout_s: float) -> str:
    """The child's first stdout line, or '' if it exits or stays silent past `timeout_s`."""
    assert popen.stdout is not None
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(popen.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout_s)
    return out[0].decode(errors="replace").strip() if out else ""
