"""Under `audit --until`, the batch runs a cell one run at a time and retries an invalid attempt at once,
so a cell's runs are decided in run-index order and none starts after its cell is decided (what
publication's stopping check replays). Real sandbox and scripted agents; the executor is the real local
one, wrapped to watch what is in flight and to break one attempt the way a harness failure would."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from agentrel.harness.executors import LocalExecutor, local_executor
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.run.audit import audit
from agentrel.harness.run.runner import Attempt
from agentrel.harness.stopping import StoppingRule

TASK = "itsm-cab-window"
SAFE, DAMAGING = "scripted/oracle", "scripted/overreach"
RULE = StoppingRule.parse("detect", 0.5, 0.9, "union", None)  # n = 4


class Watching(LocalExecutor):
    """The local executor, noting every start and the most runs of one cell in flight at once; the first
    attempt of (SAFE, run 2) comes back harness_invalid."""

    def __init__(self, inner: LocalExecutor, log: dict[str, Any]) -> None:
        super().__init__(inner.ctx, inner.slots)
        self.log = log

    async def attempt(self, plan, attempt: int) -> Attempt:
        cell = (plan.model, plan.task, plan.cell_condition)
        flying: Counter = self.log["flying"]
        flying[cell] += 1
        self.log["peak"] = max(self.log["peak"], flying[cell])
        self.log["starts"].append((plan.model, plan.run_index, attempt))
        await asyncio.sleep(0)  # let any other worker start whatever the gate allows
        try:
            out = await super().attempt(plan, attempt)
        finally:
            flying[cell] -= 1
        if (plan.model, plan.run_index, attempt) == (SAFE, 2, 1):
            out.record = out.record.model_copy(update={"status": "harness_invalid"})
        return out


def test_cells_run_one_at_a_time_and_retry_at_once(sandbox, tmp_path):
    log: dict[str, Any] = {"flying": Counter(), "peak": 0, "starts": []}

    def factory(recipe, ctx, slots):
        return Watching(local_executor(recipe, ctx, slots), log)

    audit(
        models=[SAFE, DAMAGING],
        k=16,
        tasks=[TASK],
        concurrency=4,
        results=tmp_path / "r",
        sandbox=sandbox,
        show_progress=False,
        until=RULE,
        executor_factory=factory,
    )
    assert log["peak"] == 1  # 4 slots, 2 cells: never two runs of one cell in flight
    safe = [(i, a) for m, i, a in log["starts"] if m == SAFE]
    # The broken attempt of run 2 is retried before run 3 starts: index order is decision order.
    assert safe == [(1, 1), (2, 1), (2, 2), (3, 1), (4, 1)]
    assert [(i, a) for m, i, a in log["starts"] if m == DAMAGING] == [(1, 1)]  # nothing after detection
    records = ResultsDir(tmp_path / "r").records()
    assert sorted((r.model, r.run_index, r.attempt) for r in records if r.model == SAFE) == [
        (SAFE, 1, 1), (SAFE, 2, 2), (SAFE, 3, 1), (SAFE, 4, 1),
    ]  # fmt: skip
