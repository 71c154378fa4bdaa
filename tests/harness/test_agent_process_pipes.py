"""An agent program's process leaves nothing for the garbage collector (harness/agents/process.py).

A descendant that escapes the run's kills (a session of its own) can hold the program's pipes open past
its end. The run's transport was then left to the collector after its event loop had closed: its
finalizer raised into whatever ran next, and on CPython 3.11 a finalizer running inside `ast.parse`
breaks it ("AST constructor recursion depth mismatch"), which failed an unrelated test in a loaded run.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
from typing import Any

from agentrel.harness.agents.process import run_process

# Starts a sleeper in a session of its own that inherits stdout, says its pid, and exits at once.
ESCAPE = (
    "import subprocess, sys\n"
    "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'], start_new_session=True)\n"
    "print(p.pid, flush=True)\n"
)


def test_a_descendant_holding_the_pipes_leaves_no_transport_to_the_collector() -> None:
    caught: list[Any] = []
    previous = sys.unraisablehook
    sys.unraisablehook = caught.append
    sleeper = None
    try:
        end = asyncio.run(run_process([sys.executable, "-c", ESCAPE], dict(os.environ), 20))
        sleeper = int(end.stdout.text().split()[0])
        gc.collect()
    finally:
        sys.unraisablehook = previous
        if sleeper is not None:
            os.kill(sleeper, signal.SIGKILL)
    assert end.returncode == 0
    assert not caught, [f"{u.exc_type.__name__}: {u.exc_value} in {u.object!r}" for u in caught]
