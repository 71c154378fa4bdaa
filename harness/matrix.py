"""The run matrix: models x tasks x conditions x k, with per-run seeds shared across models."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from harness.records import run_id


def run_seed(task_id: str, condition: str, run_index: int) -> str:
    """sha256("task|condition|index"): independent of the model, so models meet identical runs."""
    return hashlib.sha256(f"{task_id}|{condition}|{run_index}".encode()).hexdigest()


@dataclass(frozen=True)
class RunPlan:
    model: str
    task: str
    condition: str
    run_index: int

    @property
    def seed(self) -> str:
        return run_seed(self.task, self.condition, self.run_index)

    @property
    def run_id(self) -> str:
        return run_id(self.model, self.task, self.condition, self.run_index)


def expand(models: list[str], tasks: list[str], conditions: list[str], k: int) -> list[RunPlan]:
    # Run index outermost: an interrupted audit has spread its finished runs over every cell.
    return [RunPlan(m, t, c, i) for i in range(1, k + 1) for m in models for t in tasks for c in conditions]
