"""Latency of `agentrel view` over a 100,000-run results directory (10 agents x 20 tasks x 2
conditions x 250 runs), served over real HTTP on 127.0.0.1 by the same server `agentrel view` starts.

The records are in the harness's format, about 1.5 kB a line (verdict, events, 2-4 tool calls with
digests); 2% are provider_invalid, half of them retried into a valid second attempt. Every run of
csm-goodwill-cap points at real dumps: the seed state (generated, no database) as its pre-run dump and
one of four post-run deltas (a credit over the cap, one within it, a credit plus a work note, nothing),
so a run page re-runs the labeller over real dumps.

Times, side by side in one process:
  index_ms       building the index alone (one pass over runs.jsonl), for scale;
  first_page_ms  the first GET / of a fresh server: the index is built inside it, then the headline
                 (first_page_cpu_ms: the CPU time the process spent on it; on a machine shared with
                 other work, wall time exceeds it by what the other work took);
  again_ms       a second GET / after 100 more records were appended (reads only the appended bytes);
  cold_run_ms    the first run page: suite, spec and the 26,791-row pre-run dump are loaded in it;
  run_page_ms    the median first visit of 9 other runs' pages (their post-run deltas rebuilt against
                 the cached pre-run dump, the labeller re-run, the page rendered).

Last line: runs=<n> first_page_ms=<a> run_page_ms=<b>
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from agentrel.dsl.state import State, TableState  # noqa: E402
from agentrel.harness.results import layout  # noqa: E402
from agentrel.harness.results.directory import ResultsDir  # noqa: E402
from agentrel.harness.tasks import load_suite  # noqa: E402
from agentrel.harness.view.app import bind, create_app, serve  # noqa: E402
from agentrel.harness.view.index import ResultsIndex  # noqa: E402
from agentrel.sandbox.environments.enterprise.seed import generate  # noqa: E402

AGENTS = [f"vendor{i}/model-{i}" for i in range(10)]
CONDITIONS = ["clean", "noisy"]
K = 250
TASK = "csm-goodwill-cap"


def _after(before: State, credit: str | None, note: bool) -> State:
    tables = dict(before.tables)
    if credit is not None:
        t = before.tables["credits"]
        rows = dict(t.rows)
        rows[(990001,)] = (
            990001,
            10201,
            10201,
            credit,
            "Goodwill: checkout outage",
            None,
            "2026-03-02T09:00:00Z",
        )
        tables["credits"] = TableState(t.info, rows)
    if note:
        t = before.tables["work_notes"]
        rows = dict(t.rows)
        rows[(990001,)] = (990001, "cases", 10201, 1, "Applied the goodwill credit.", "2026-03-02T09:00:00Z")
        tables["work_notes"] = TableState(t.info, rows)
    return State(tables)


def build(path: Path) -> list[str]:
    """Write the results directory; returns the ids of some csm-goodwill-cap runs to visit."""
    tasks = [t.id for t in load_suite()]
    rd = ResultsDir(path)
    rd.open()
    before = generate()
    base = rd.store_dump(before)
    afters = [
        rd.store_dump(_after(before, c, n), before)
        for c, n in [("600.00", True), ("250.00", True), ("600.00", False), (None, False)]
    ]
    params = next(t.params for t in load_suite() if t.id == TASK)
    manifest = {
        "format": "agentrel-manifest/1",
        "k": K,
        "max_attempts": 3,
        "agents": [{"name": a, "kind": "model"} for a in AGENTS],
        "conditions": [{"name": c} for c in CONDITIONS],
        "tasks": [{"id": t, "params": params if t == TASK else {}} for t in tasks],
    }
    rd.manifest.write_text(json.dumps(manifest))
    visit: list[str] = []
    with open(rd.runs, "w", encoding="utf-8") as fh:
        n = 0
        for agent in AGENTS:
            for task in tasks:
                for cond in CONDITIONS:
                    for i in range(1, K + 1):
                        n += 1
                        rid = f"{agent.replace('/', '_')}__{task}__{cond}__{i:04d}"
                        shape = n % 4
                        if n % 50 == 0:
                            fh.write(_line(rid, agent, task, cond, i, base, afters[shape], shape, 1, False))
                            if n % 100 == 0:
                                continue  # never retried: an invalid run
                            fh.write(_line(rid, agent, task, cond, i, base, afters[shape], shape, 2, True))
                        else:
                            fh.write(_line(rid, agent, task, cond, i, base, afters[shape], shape, 1, True))
                        if task == TASK and len(visit) < 10 and n % 50:
                            visit.append(rid)
    rd.close()
    return visit


def _line(
    rid: str,
    agent: str,
    task: str,
    cond: str,
    i: int,
    base: str,
    after: str,
    shape: int,
    attempt: int,
    ok: bool,
) -> str:
    damaged = shape in (0, 2)
    events = (
        [
            {
                "rule": "goodwill credit above the cap",
                "table": "credits",
                "key": [990001],
                "op": "insert",
                "changed_columns": [],
                "severity": "high",
                "irreversibility": "governance",
                "dollars": "350.00",
                "spec": task,
                "aggregate": False,
                "rows": 1,
            }
        ]
        if damaged
        else []
    )
    verdict = {
        "outcome": "FAIL_DAMAGE" if damaged else "PASS",
        "sub_label": "completed_damage" if damaged else "completed_mutated",
        "inconsistent": False,
        "mutated": shape != 3,
        "changes": 2 - (shape >= 2) - (shape == 3),
        "events": events,
        "max_severity": "high" if damaged else None,
        "dollars": "350.00" if damaged else "0.00",
        "irreversibility": ["governance"] if damaged else [],
        "requirements": [{"label": "credit applied", "met": not damaged}],
        "status": "completed",
        "allowed": {},
        "spec": f"{task}@1",
    }
    calls = [
        {
            "ordinal": j,
            "tool": "issue_credit" if j == 2 else "get_case",
            "ok": True,
            "args_digest": f"{j:016x}",
        }
        for j in range(1, 2 + shape % 3 + 1)
    ]
    rec = {
        "run_id": rid,
        "model": agent,
        "agent_kind": "model",
        "task": task,
        "condition": cond,
        "run_index": i,
        "seed": "0" * 64,
        "protocol_hash": "f" * 64,
        "attempt": attempt,
        "status": "valid" if ok else "provider_invalid",
        "verdict": verdict if ok else None,
        "error": None if ok else {"kind": "provider", "message": "HTTP 529 overloaded"},
        "events": [],
        "final_message": "Applied the goodwill credit and noted it on the case.",
        "tool_calls": calls,
        "usage": {"input_tokens": 5120, "output_tokens": 312, "model_calls": 4},
        "cost_usd": 0.0123,
        "timings": {"clone_s": 0.1, "agent_s": 2.5, "dump_s": 0.1, "label_s": 0.02, "total_s": 2.8},
        "before_digest": base,
        "after_digest": after if ok else None,
        "transcript_digest": None,
        "started_at": "2026-12-01T10:00:00Z",
    }
    return json.dumps(rec) + "\n"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "results"
        t0 = time.perf_counter()
        visit = build(path)
        size = path.joinpath(layout.RUNS).stat().st_size >> 20
        print(f"built {path} in {time.perf_counter() - t0:.1f} s ({size} MiB)")

        t0 = time.perf_counter()
        runs = len(ResultsIndex(path).snapshot().runs)
        index_ms = (time.perf_counter() - t0) * 1000

        sock = bind(0)
        port = sock.getsockname()[1]
        threading.Thread(target=serve, args=(create_app(path), sock), daemon=True).start()
        url = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=url, timeout=60) as client:
            for _ in range(100):  # wait for the server to answer (a cheap page: no index yet)
                try:
                    client.get("/static/view.css")
                    break
                except httpx.TransportError:
                    time.sleep(0.05)
            cpu0 = time.process_time()
            first_page_ms = _timed(client, "/")
            first_page_cpu_ms = (time.process_time() - cpu0) * 1000
            with open(path / layout.RUNS, "a", encoding="utf-8") as fh:
                for i in range(100):
                    fh.write(
                        _line(
                            f"late__{i}", AGENTS[0], TASK, "clean", K + 1 + i, "0" * 64, "0" * 64, 3, 1, True
                        )
                    )
            again_ms = _timed(client, "/")
            cold_run_ms = _timed(client, f"/runs/{visit[0]}")
            run_page_ms = statistics.median(_timed(client, f"/runs/{rid}") for rid in visit[1:])
        load = os.getloadavg()[0]
        print(
            f"index_ms={index_ms:.0f} first_page_cpu_ms={first_page_cpu_ms:.0f} again_ms={again_ms:.0f} "
            f"cold_run_ms={cold_run_ms:.0f} load_average={load:.1f} on {os.cpu_count()} cores "
            "(targets: first page < 1500 ms, run page < 300 ms)"
        )
        print(f"runs={runs} first_page_ms={first_page_ms:.0f} run_page_ms={run_page_ms:.0f}")


def _timed(client: httpx.Client, path: str) -> float:
    t0 = time.perf_counter()
    r = client.get(path)
    ms = (time.perf_counter() - t0) * 1000
    if r.status_code != 200:
        raise SystemExit(f"view_latency: GET {path} answered {r.status_code}")
    return ms


if __name__ == "__main__":
    main()
