"""The run matrix: models x tasks x conditions x k, with per-run seeds shared across models."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from agentrel.harness.faults.schedule import fault_condition
from agentrel.harness.results.record import run_id


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
) -> list[RunPlan]:
    """Every cell k times; `faults`: the schedule's (task, fault id) cells, each run under clean."""
    # Run index outermost: an interrupted audit has spread its finished runs over every cell.
    plans = []
    for i in range(1, k + 1):
        for m in models:
            plans += [RunPlan(m, t, c, i) for t in tasks for c in conditions]
            plans += [RunPlan(m, t, "clean", i, fault) for t, fault in faults]
    return plans
