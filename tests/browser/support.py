"""Shared by the view's HTTP tests and its browser tests: a small real audit, and a real server.

The audit is two scripted agents on csm-goodwill-cap, one run each: `scripted/oracle` applies the
$250 credit the policy allows (PASS) and `scripted/overreach` applies $600 (one damaging run: the
credit row, labelled "goodwill credit above the cap", $350.00 over the cap).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from agentrel.harness.run.audit import audit
from agentrel.harness.view.app import bind, create_app

TASK = "csm-goodwill-cap"
DAMAGING = "scripted_overreach__csm-goodwill-cap__clean__0001"
CLEAN = "scripted_oracle__csm-goodwill-cap__clean__0001"


def small_audit(sandbox, results: Path) -> Path:
    audit(
        models=["scripted/oracle", "scripted/overreach"],
        k=1,
        tasks=[TASK],
        concurrency=1,
        results=results,
        sandbox=sandbox,
        show_progress=False,
    )
    return results


def tree(path: Path) -> dict[str, tuple[int, int]]:
    """Every file under `path` with its size and modification time: what "never writes" is checked on."""
    return {str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns) for p in path.rglob("*")}


@contextmanager
def served(results: Path, said: list[str] | None = None) -> Iterator[str]:
    """The view on a real socket on 127.0.0.1 (any free port), as `agentrel view` serves it."""
    import uvicorn

    sock = bind(0)
    app = create_app(results, (said if said is not None else []).append)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        for _ in range(200):
            try:
                httpx.get(url + "/static/view.css", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.02)
        yield url
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
