"""Tool-call overhead of the run session's pipeline: the same 10,000 read calls three ways, side by side.

- direct: straight into the tool box, as the runner called it before the session existed
  (`await asyncio.to_thread(box.call, ...)`: a worker thread, one transaction on the run database);
- pipeline: through `RunSession.call` with the empty pipeline (the clean condition);
- layers3: through three pass-through layers.
The three are interleaved in rounds on one run database, so drift in the machine's load hits them alike.

Last line: direct_us=<a> pipeline_us=<b> layers3_us=<c> (microseconds per call). Target: b - a < 20.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentrel.harness.run.episode import prepare
from agentrel.harness.run.pipeline import Next, Pipeline, ToolCall
from agentrel.harness.run.session import RunSession
from agentrel.harness.tasks import load_suite
from agentrel.sandbox.sandbox import Sandbox
from agentrel.sandbox.tools import ToolBox, ToolResult

CALLS = 10_000
ROUNDS = 20
TASK = "itsm-cab-window"
READ = ("get_change_request", {"number": "CHG9000001"})


class PassThrough:
    def __init__(self, name: str) -> None:
        self.name = name

    async def handle(self, call: ToolCall, next: Next) -> ToolResult:
        return await next(call)


async def per_call_us(call, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        result = await call()
        assert result.ok, result.content
    return (time.perf_counter() - t0) / n * 1e6


async def measure(sb: Sandbox) -> dict[str, float]:
    prepared = prepare(sb, load_suite(patterns=[TASK])[0])
    layers = [PassThrough(f"pass{i}") for i in range(3)]
    async with RunSession(sb, prepared, layers=layers) as session:
        assert session.run_db is not None
        # The empty pipeline in front of the same session's tool box, so both share one connection.
        empty = Pipeline(session.pipeline.terminal)
        box = ToolBox(sb.dbs.tool_conninfo(session.run_db), prepared.tools, prepared.acting_user_id)
        ways = {
            "direct": lambda: asyncio.to_thread(box.call, *READ),
            "pipeline": lambda: empty.call(*READ, time.perf_counter),
            "layers3": lambda: session.call(*READ),
        }
        for call in ways.values():  # warm connections and caches
            await per_call_us(call, 200)
        samples: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(ROUNDS):
            for name, call in ways.items():
                samples[name].append(await per_call_us(call, CALLS // ROUNDS))
        box.close()
    return {name: statistics.median(values) for name, values in samples.items()}


async def bookkeeping_us() -> float:
    """The pipeline's own cost with no tool behind it: a terminal that answers at once."""
    answer = ToolResult(True, {})

    async def instant(call: ToolCall) -> ToolResult:
        return answer

    pipeline = Pipeline(instant)
    n = 100_000
    bare = await per_call_us(lambda: instant(None), n)  # type: ignore[arg-type]
    piped = await per_call_us(lambda: pipeline.call(*READ, time.perf_counter), n)
    return piped - bare


def main() -> None:
    us = asyncio.run(measure(Sandbox.open()))
    own = asyncio.run(bookkeeping_us())
    print(f"{CALLS} read calls each way, {ROUNDS} interleaved rounds, median of rounds:")
    extra, extra3 = us["pipeline"] - us["direct"], us["layers3"] - us["direct"]
    print(f"  the empty pipeline adds {extra:.1f} us/call; three pass-through layers add {extra3:.1f}")
    print(f"  the pipeline's own bookkeeping, with no tool behind it: {own:.1f} us/call")
    print(f"direct_us={us['direct']:.1f} pipeline_us={us['pipeline']:.1f} layers3_us={us['layers3']:.1f}")


if __name__ == "__main__":
    main()
