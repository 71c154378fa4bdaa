"""Starting, stopping and killing tool server processes, and reading how they ended (waitpid)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from harness.faults.server import CONNINFO_ENV

_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding `harness/`, for the child's imports
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


@dataclass
class ServerProcess:
    """One tool server process. `boot_id` and `pid` are what its READY line said."""

    popen: subprocess.Popen[bytes]
    port: int
    boot_id: str
    pid: int

    @classmethod
    def start(cls, spec: ServerSpec) -> ServerProcess:
        env = {**os.environ, CONNINFO_ENV: spec.conninfo}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH", "")) if p)
        argv = [sys.executable, "-m", "harness.faults.server", "--tools", ",".join(spec.tools)]
        argv += ["--acting-user-id", str(spec.acting_user_id), "--call-timeout-s", str(spec.call_timeout_s)]
        argv.append("--parent-pipe")
        if spec.allow_hold:
            argv.append("--allow-hold")
        # stdin is a pipe only this process writes to: it closes when we exit, however we exit.
        popen = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.PIPE, env=env)
        line = _readline(popen, BOOT_TIMEOUT_S)
        parts = line.split()
        if len(parts) != 4 or parts[0] != "READY":
            popen.kill()
            popen.wait()
            raise ServerStartFailed(f"tool server did not start (said {line[:200]!r})")
        return cls(popen, int(parts[1]), parts[2], int(parts[3]))

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

    def kill(self) -> None:
        """SIGKILL by pid; the caller learns what happened from `wait_status`, not from this call."""
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)

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


def _readline(popen: subprocess.Popen[bytes], timeout_s: float) -> str:
    """The child's first stdout line, or '' if it exits or stays silent past `timeout_s`."""
    assert popen.stdout is not None
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(popen.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout_s)
    return out[0].decode(errors="replace").strip() if out else ""
