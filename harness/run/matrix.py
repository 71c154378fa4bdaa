"""The run matrix: models x tasks x conditions x k, with per-run seeds shared across models."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agentrel.harness.faults.schedule import fault_condition
from agentrel.harness.results.record import run_id

Order = Literal["run", "task"]
ORDERS: tuple[str, ...] = ("run", "task")


def run_seed(task_id: str, condition: str, run_index: int) -> str:
    """sha256("task|condition|index"): independent of the model, so models meet identical runs."""
    return hashlib.sha256(f"{task_id}|{condition}|{run_index}".encode()).hexdigest()


@dataclass(frozen=True)
class RunPlan:
    model: str
    task: str
    condition: str
    run_index: int
    fault: str | None = None  # a scheduled fault's id: the run meets it under `condition` (clean)

    @property
    def seed(self) -> str:
        """A fault run shares its clean twin's seed: the twin is the baseline its overhead is read from."""
        return run_seed(self.task, self.condition, self.run_index)

    @property
    def cell_condition(self) -> str:
        return self.condition if self.fault is None else fault_condition(self.fault)

    @property
    def run_id(self) -> str:
        return run_id(self.model, self.task, self.cell_condition, self.run_index)


def expand(
    models: list[str],
    tasks: list[str],
    conditions: list[str],
    k: int,
    faults: Sequence[tuple[str, str]] = (),
    order: Order = "run",
) -> list[RunPlan]:
    """Every cell k times; `faults`: the schedule's (task, fault id) cells, each run under clean.

    `order="run"` (the default): run index outermost, so an interrupted audit has spread its finished runs
    over every cell. `order="task"`: task outermost (then model, then the run-major order within), so
    consecutive runs share their first prompt and a single-context local server reuses its prompt cache.
    The order is not part of the matrix: the same cells, seeds and run ids either way."""
    plans = []
    for i in range(1, k + 1):
        for m in models:
            plans += [RunPlan(m, t, c, i) for t in tasks for c in conditions]
            plans += [RunPlan(m, t, "clean", i, fault) for t, fault in faults]
    if order == "task":
        task_rank, model_rank = {t: n for n, t in enumerate(tasks)}, {m: n for n, m in enumerate(models)}
        plans.sort(key=lambda p: (task_rank[p.task], model_rank[p.model]))  # stable: run-major within
    return plans
