"""Model-bound throughput: how well an audit fills the wait on a model, at concurrency 1, 16, 64 and 128.

A real audit waits on provider inference far more than it works. Here the model is a loopback
OpenAI-compatible provider (`bench/loopback_provider.py`, its own process) that answers each task's oracle
calls after `--latency` seconds per model call (± `--jitter`), and the audit is the real one:
`openai/loopback` through the chat adapter, every run cloned, acted on, dumped, labelled and recorded.

For each concurrency c the audit runs `--waves` × c runs (tasks × K), and the bench prints:
- `runs/s` over the run phase (AgentRel's own measure: task preparation excluded);
- `efficiency`: runs/s ÷ the ideal c ÷ L, where L is the mean time a run spends waiting on its model
  calls (their number × the mean latency), so 1.0 is every slot waiting on the model all the time;
- `batch_efficiency`: the same batch's ideal wall time ÷ its measured one. A finite batch cannot reach
  c ÷ L: its last runs finish one by one while slots go idle (with 3 waves of runs 3-10 calls long that
  tail alone costs ~10%). The ideal here is the batch scheduled on c slots exactly as AgentRel dispatches
  it (plan order, each run taken by the first free slot), each run lasting only its model calls' waits
  (their jittered delays, recomputed from the request seeds), so what is lost is AgentRel's alone;
- `steady_eff`: the share of the c slots' time spent waiting on the model while runs were still queued
  (from the level's first model call to the last run's first one, timed by the provider): the runs/s
  of that phase over c ÷ L, what thousands of runs approach, free of the batch's idle tail;
- `peak_mb_per_run`: the driver's peak resident memory over the level, less its resident memory after
  the first level (imports, templates and caches warm), per run in flight;
- `pg_conns`: the most Postgres client connections open at once (sampled), against `max_connections`;
- `in_flight`: the most model requests the provider held at once.

    python bench/model_bound.py                       # 2 s per call, 3 waves (a few minutes)
    python bench/model_bound.py --latency 0.2 --levels 1,16,64 --waves 2   # a quick check

Last line: latency_s=... eff_<c>=... batch_eff_<c>=... steady_eff_<c>=... runs_per_s_<c>=...
mb_per_run_<c>=... conns_<c>=... load1=...
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import psycopg  # noqa: E402

from agentrel.harness.agents.chat import request_seed  # noqa: E402
from agentrel.harness.executors.capacity import size_server  # noqa: E402
from agentrel.harness.run.audit import audit  # noqa: E402
from agentrel.harness.run.matrix import expand  # noqa: E402
from agentrel.harness.tasks import load_suite  # noqa: E402
from agentrel.sandbox.sandbox import Sandbox  # noqa: E402
from bench.loopback_provider import delay_of, plans_of  # noqa: E402

MODEL = "loopback"
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass
class Level:
    concurrency: int
    runs: int
    runs_per_s: float
    ideal_per_s: float
    peak_mb_per_run: float
    pg_conns: int
    in_flight: int
    invalid: int

    batch_ideal_s: float
    wall_s: float
    steady_efficiency: float
    overhead_ms: dict[str, float]  # per run, mean: clone, dump, label, and the rest of its wall time

    @property
    def efficiency(self) -> float:
        return self.runs_per_s / self.ideal_per_s

    @property
    def batch_efficiency(self) -> float:
        return self.batch_ideal_s / self.wall_s


def model_wait(seed: str, calls: int, latency: float, jitter: float) -> float:
    """What one run waits on its model: each call's delay, drawn by the provider from its request seed."""
    return sum(delay_of(request_seed(seed, n), latency, jitter) for n in range(1, calls + 1))


def ideal_makespan(waits: list[float], slots: int) -> float:
    """The batch on `slots` slots in dispatch order, each run taken by the first slot to free up."""
    free = [0.0] * min(slots, len(waits))
    heapq.heapify(free)
    for wait in waits:
        heapq.heappush(free, heapq.heappop(free) + wait)
    return max(free)


def steady_busy(waits: list[list[float]], slots: int) -> float:
    """The share of `slots` slots' time spent waiting on the model while runs were still queued.

    The window opens at the level's first model call and closes at the last run's first one (every run
    has started: from then on slots go idle because the batch is ending, not because of AgentRel). In
    it each slot could wait on the model all the time; whatever it spends otherwise (cloning, tool
    calls, dumping, labelling, recording, the event loop's queue) is AgentRel's. Runs per second in
    that phase are this share times the ideal c / L, whatever the batch's length."""
    opened = min(start for start, _end, _step in waits)
    closed = max(start for start, _end, step in waits if step == 0)
    if closed <= opened:
        return float("nan")
    busy = sum(max(0.0, min(end, closed) - max(start, opened)) for start, end, _step in waits)
    return busy / (slots * (closed - opened))


def waits_by_run(waits: list[list[float]], runs: int) -> float:
    """The mean time a run of the level spent waiting on its model calls (as the provider timed them)."""
    return sum(end - start for start, end, _step in waits) / max(runs, 1)


def overhead_of(records: list[Any], model_wait_s: float) -> dict[str, float]:
    """Where a run's wall time went besides the model, mean ms per run: what AgentRel costs a slot."""
    n = max(len(records), 1)
    clone = sum(r.timings.clone_s for r in records) / n
    dump = sum(r.timings.dump_s for r in records) / n
    label = sum(r.timings.label_s for r in records) / n
    total = sum(r.timings.total_s for r in records) / n
    rest = total - clone - dump - label - model_wait_s
    return {k: 1000 * v for k, v in {"clone": clone, "dump": dump, "label": label, "other": rest}.items()}


def rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * PAGE


@contextmanager
def sampled(conninfo: str, every_s: float = 0.25) -> Any:
    """Sample this process's resident memory and the server's client connections while the block runs."""
    peak = {"rss": rss_bytes(), "conns": 0}
    stop = threading.Event()

    def sample() -> None:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            while not stop.is_set():
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
                ).fetchone()
                peak["conns"] = max(peak["conns"], int(row[0]) - 1 if row else 0)  # less this one
                peak["rss"] = max(peak["rss"], rss_bytes())
                stop.wait(every_s)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        stop.set()
        thread.join()


def start_provider(plans: dict[str, Any], latency: float, jitter: float, tmp: Path) -> tuple[Any, str]:
    path = tmp / "plans.json"
    path.write_text(json.dumps(plans))
    cmd = [sys.executable, str(ROOT / "bench" / "loopback_provider.py"), "--plans", str(path)]
    cmd += ["--model", MODEL, "--latency", str(latency), "--jitter", str(jitter)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("port="):
        proc.kill()
        raise SystemExit(f"the loopback provider did not start: {line!r}")
    return proc, f"http://127.0.0.1:{line.strip().split('=')[1]}/v1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per model call (mean)")
    parser.add_argument("--jitter", type=float, default=0.25, help="uniform +/- seconds around it")
    parser.add_argument("--levels", default="1,16,64,128", help="concurrency levels, comma-separated")
    parser.add_argument("--waves", type=int, default=3, help="runs per level: waves x concurrency")
    parser.add_argument("--tasks", default="*", help="task id glob (default: the whole suite)")
    args = parser.parse_args()
    levels = [int(c) for c in args.levels.split(",")]

    sb = Sandbox.open()
    tasks = load_suite(patterns=[args.tasks])
    plans = plans_of(tasks)
    with tempfile.TemporaryDirectory(prefix="agentrel-bench-") as tmp_name:
        tmp = Path(tmp_name)
        provider, base_url = start_provider(plans, args.latency, args.jitter, tmp)
        os.environ["OPENAI_BASE_URL"] = base_url
        os.environ.pop("OPENAI_API_KEY", None)
        admin = sb.server.conninfo("postgres")
        # Sized for the largest level before the sampler opens its session: a private cluster is not
        # restarted under an open session (the audit would say so and carry on unsized).
        max_conns = size_server(sb.server, max(levels), lambda m: print(f"  {m}", file=sys.stderr))
        results: list[Level] = []
        warm: int | None = None  # resident memory once the first level has warmed every cache
        try:
            for c in levels:
                runs_wanted = max(args.waves * c, 2)
                k = max(1, math.ceil(runs_wanted / len(tasks)))
                chosen = tasks if c > 1 else tasks[: args.waves]
                if c == 1:
                    k = 1
                calls = [len(t.oracle.steps) + 1 for t in chosen]
                mean_wait = args.latency * sum(calls) / len(calls)  # the K runs of each task weigh alike
                httpx.post(base_url.removesuffix("/v1") + "/stats/reset")
                with sampled(admin) as peak:
                    rss0 = warm if warm is not None else peak["rss"]
                    out = audit(
                        models=[f"openai/{MODEL}"],
                        k=k,
                        tasks=[t.id for t in chosen],
                        concurrency=c,
                        results=tmp / f"c{c}",
                        sandbox=sb,
                        show_progress=False,
                        say=lambda message: print(f"  audit: {message}", file=sys.stderr),
                    )
                calls_of = {t.id: len(t.oracle.steps) + 1 for t in chosen}
                order = expand([f"openai/{MODEL}"], [t.id for t in chosen], ["clean"], k)
                waits = [model_wait(p.seed, calls_of[p.task], args.latency, args.jitter) for p in order]
                stats = httpx.get(base_url.removesuffix("/v1") + "/stats").json()
                level = Level(
                    concurrency=c,
                    runs=len(out.new),
                    runs_per_s=out.runs_per_second,
                    ideal_per_s=min(c, len(out.new)) / mean_wait,
                    peak_mb_per_run=(peak["rss"] - rss0) / 2**20 / min(c, len(out.new)),
                    pg_conns=peak["conns"],
                    in_flight=stats["peak_in_flight"],
                    invalid=sum(1 for r in out.new if not r.terminal),
                    batch_ideal_s=ideal_makespan(waits, c),
                    wall_s=len(out.new) / out.runs_per_second,
                    steady_efficiency=steady_busy(stats["waits"], c),
                    overhead_ms=overhead_of(out.new, waits_by_run(stats["waits"], len(out.new))),
                )
                results.append(level)
                warm = warm if warm is not None else rss_bytes()
                print(
                    f"concurrency {c:>3}: {level.runs} runs at {level.runs_per_s:.2f} /s "
                    f"(ideal {level.ideal_per_s:.2f} /s, efficiency {level.efficiency:.2f}; "
                    f"batch: ideal {level.batch_ideal_s:.1f} s, took {level.wall_s:.1f} s, "
                    f"efficiency {level.batch_efficiency:.2f}; "
                    f"steady: {level.steady_efficiency:.2f} of the slots' time waiting on the model); "
                    f"model requests in flight at most {level.in_flight}; "
                    f"peak memory {level.peak_mb_per_run:.2f} MB per run in flight; "
                    f"Postgres connections at most {level.pg_conns} of {max_conns}; "
                    f"{level.invalid} invalid attempts; per run, ms: "
                    + " ".join(f"{k} {v:.0f}" for k, v in level.overhead_ms.items()),
                    flush=True,
                )
        finally:
            provider.kill()
            provider.wait()
    load1 = os.getloadavg()[0]
    parts = [f"latency_s={args.latency:g}", f"max_connections={max_conns}"]
    for lv in results:
        c = lv.concurrency
        parts += [
            f"eff_{c}={lv.efficiency:.2f}",
            f"batch_eff_{c}={lv.batch_efficiency:.2f}",
            f"steady_eff_{c}={lv.steady_efficiency:.2f}",
            f"runs_per_s_{c}={lv.runs_per_s:.2f}",
            f"mb_per_run_{c}={lv.peak_mb_per_run:.2f}",
            f"conns_{c}={lv.pg_conns}",
        ]
    parts.append(f"load1={load1:.1f}")
    print(" ".join(parts))


if __name__ == "__main__":
    main()
