"""Scale-out: the reference suite at K=16 with an agent whose every model call takes 0.5 s, on the local
executor (concurrency 8) and on Ray with 1 and 2 actors (concurrency 8 each), side by side.

Ray runs on this machine (`start_local_ray`, loopback only), started once before the three measurements;
each actor owns a private cluster under .agentrel/ray/slot-<i>, built by a warm-up audit first (so a
first run pays initdb, seeding and template builds there, not inside a measurement). Each rate is the
audit's run phase: runs / (wall time from the first attempt to the last), that is without the executor's
one-off start (for Ray: creating the actors and loading each one's templates), which is printed beside it.

Last line: local_runs_per_s=<a> ray1_runs_per_s=<b> ray2_runs_per_s=<c>
Targets: ray2 >= 1.7 x ray1 (two actors, two sandboxes), ray1 >= 0.8 x local (the engine's overhead).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentrel.harness.agents.base import AgentResult, Episode
from agentrel.harness.agents.registry import agent_adapter
from agentrel.harness.errors import UsageError
from agentrel.harness.executors import Executor, ExecutorFactory, local_executor
from agentrel.harness.executors.ray import ray_executor, start_local_ray
from agentrel.harness.run.audit import audit
from agentrel.harness.run.matrix import RunPlan
from agentrel.harness.run.recipe import RunRecipe
from agentrel.harness.run.runner import Attempt, RunContext
from agentrel.sandbox.sandbox import Sandbox

K = 16
CONCURRENCY = 8
LATENCY_S = 0.5


class FixedLatencyAgent:
    """Follows each task's oracle, paying LATENCY_S per model call (one per tool step, one for the answer)."""

    kind = "model"
    name = "bench/fixed-latency"

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "latency_s": LATENCY_S}

    async def run(self, episode: Episode) -> AgentResult:
        oracle = episode.task.oracle
        for step in oracle.steps:
            await asyncio.sleep(LATENCY_S)
            await episode.call(step.tool, step.args)
        await asyncio.sleep(LATENCY_S)
        return AgentResult(final_message=oracle.final, script="oracle")


def register() -> None:
    """In the driver, and in each actor as its setup hook (pickled by value, as this is __main__)."""
    agent_adapter("bench", "bench/fixed-latency")(lambda rest, sampling: FixedLatencyAgent())


class Timed:
    """An executor with its start and close timed, so the run phase can be told from the one-off costs."""

    def __init__(self, inner: Executor) -> None:
        self.inner = inner
        self.start_s = self.close_s = 0.0

    @property
    def slots(self) -> int:
        return self.inner.slots

    async def start(self) -> None:
        t0 = time.perf_counter()
        await self.inner.start()
        self.start_s = time.perf_counter() - t0

    async def attempt(self, plan: RunPlan, attempt: int) -> Attempt:
        return await self.inner.attempt(plan, attempt)

    async def close(self) -> None:
        t0 = time.perf_counter()
        await self.inner.close()
        self.close_s = time.perf_counter() - t0

    def facts(self) -> Sequence[BaseModel]:
        return self.inner.facts()


def measure(sb: Sandbox, results: Path, factory: ExecutorFactory, k: int = K) -> tuple[int, float, float]:
    """(runs, run-phase runs/s, start seconds) of the suite x k with the fixed-latency agent."""
    made: list[Timed] = []

    def timed(recipe: RunRecipe, ctx: RunContext, concurrency: int) -> Executor:
        made.append(Timed(factory(recipe, ctx, concurrency)))
        return made[-1]

    t0 = time.perf_counter()
    out = audit(
        models=[FixedLatencyAgent.name],
        k=k,
        concurrency=CONCURRENCY,
        results=results,
        sandbox=sb,
        show_progress=False,
        executor_factory=timed,
    )
    wall = len(out.new) / out.runs_per_second  # from the progress start (after task preparation)
    start_s, close_s = made[0].start_s, made[0].close_s
    invalid = sum(not r.valid for r in out.new)
    assert invalid == 0, f"{invalid} invalid attempts in {results}"
    print(f"  ({time.perf_counter() - t0:.1f} s in all, task preparation included)", flush=True)
    return len(out.new), len(out.new) / (wall - start_s - close_s), start_s


def main() -> None:
    register()
    sb = Sandbox.open()
    t0 = time.perf_counter()
    try:
        start_local_ray(2)
    except UsageError as exc:
        sys.exit(f"scale_out: {exc}")
    print(f"local Ray started in {time.perf_counter() - t0:.1f} s (2 CPUs, 127.0.0.1)", flush=True)
    ray1 = ray_executor(workers=1, setup=register)
    ray2 = ray_executor(workers=2, setup=register)
    with tempfile.TemporaryDirectory(prefix="agentrel-bench-") as tmp:
        t0 = time.perf_counter()
        measure(sb, Path(tmp) / "warm-up", ray2, k=1)
        print(f"warm-up (each actor's cluster and templates): {time.perf_counter() - t0:.1f} s", flush=True)
        rates = {}
        for name, factory in (("local", local_executor), ("ray1", ray1), ("ray2", ray2)):
            runs, rate, start_s = measure(sb, Path(tmp) / name, factory)
            rates[name] = rate
            print(
                f"{name}: {runs} runs at {rate:.2f} runs/s in the run phase (executor start {start_s:.1f} s)",
                flush=True,
            )
    print(
        f"ray2/ray1={rates['ray2'] / rates['ray1']:.2f} (target >= 1.7)  "
        f"ray1/local={rates['ray1'] / rates['local']:.2f} (target >= 0.8)"
    )
    print(
        f"local_runs_per_s={rates['local']:.2f} ray1_runs_per_s={rates['ray1']:.2f} "
        f"ray2_runs_per_s={rates['ray2']:.2f}"
    )


if __name__ == "__main__":
    main()
