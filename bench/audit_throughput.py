"""Audit throughput: the whole suite x K=16 with the reference agent, and concurrency 16 vs 1 for an
agent whose every model call takes 1 s (what a hosted model costs in wall time), side by side.

The same suite then runs under the noisy condition (each tool call meets a fault with probability 0.3)
and the adversarial one (payloads in what the agent reads, goals labelled with the task's spec), each run
phase timed against the clean one's.

Last line: runs_per_s=<reference suite throughput> speedup_at_16=<wall(c=1) / wall(c=16)>
noisy_ratio=<run-phase runs/s noisy / clean> adversarial_ratio=<adversarial / clean>
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentrel.harness.agents.base import AgentResult, Episode
from agentrel.harness.agents.registry import agent_adapter
from agentrel.harness.agents.scripted import replay
from agentrel.harness.run.audit import audit
from agentrel.sandbox.sandbox import Sandbox

K = 16
CONCURRENCY = 4


class FixedLatencyAgent:
    """Follows each task's oracle, paying 1 s per model call (one call per tool step plus the answer)."""

    kind = "model"
    name = "bench/fixed-latency"

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "latency_s": 1.0}

    async def run(self, episode: Episode) -> AgentResult:
        await asyncio.sleep(1.0)
        result = await replay(episode, episode.task.oracle, "oracle")
        return result


@agent_adapter("bench", "bench/fixed-latency")
def _fixed_latency(rest: str, sampling: dict[str, Any]) -> FixedLatencyAgent:
    return FixedLatencyAgent()


def main() -> None:
    sb = Sandbox.open()
    with tempfile.TemporaryDirectory(prefix="agentrel-bench-") as tmp:
        t0 = time.perf_counter()
        suite = audit(
            models=["reference/stochastic"],
            k=K,
            concurrency=CONCURRENCY,
            results=Path(tmp) / "suite",
            sandbox=sb,
            show_progress=False,
        )
        suite_s = time.perf_counter() - t0
        n = len(suite.new)
        under = {
            condition: audit(
                models=["reference/stochastic"],
                k=K,
                concurrency=CONCURRENCY,
                results=Path(tmp) / condition,
                sandbox=sb,
                show_progress=False,
                conditions=[condition],
            )
            for condition in ("noisy", "adversarial")
        }
        # 32 runs (16 tasks x 2): two full waves at concurrency 16. The run phase is timed on its own
        # (AuditOutcome.runs_per_second), since preparing tasks is a one-off cost of any audit.
        tasks = sorted({r.task for r in suite.new})[:16]
        rates = {}
        for c in (1, 16):
            agent = FixedLatencyAgent()
            out = audit(
                models=[agent.name],
                k=2,
                tasks=tasks,
                concurrency=c,
                results=Path(tmp) / f"latency-{c}",
                sandbox=sb,
                show_progress=False,
            )
            rates[c] = (out.runs_per_second, len(out.new))
    print(f"reference suite: {n} runs (all tasks x K={K}) in {suite_s:.1f} s at concurrency {CONCURRENCY}")
    for c, (rate, runs) in rates.items():
        print(f"fixed 1 s latency agent, concurrency {c}: {runs} runs in {runs / rate:.1f} s ({rate:.2f} /s)")
    clean_rate = suite.runs_per_second
    ratios = {}
    for condition, out in under.items():
        ratios[condition] = out.runs_per_second / clean_rate
        print(f"{condition}: {len(out.new)} runs at {out.runs_per_second:.2f} /s (clean {clean_rate:.2f} /s)")
    speedup = rates[16][0] / rates[1][0]
    print(
        f"runs_per_s={n / suite_s:.2f} speedup_at_16={speedup:.1f} "
        f"noisy_ratio={ratios['noisy']:.2f} adversarial_ratio={ratios['adversarial']:.2f}"
    )


if __name__ == "__main__":
    main()
