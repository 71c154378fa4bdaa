"""Which attempt of a run decides it.

Each line of runs.jsonl is one attempt of a run (model, task, condition, run_index). The rule is the
results owner's (`harness.results.attempts`): the first terminal attempt decides, else the latest, so a
run whose attempts were all invalid is an invalid run and a re-roll after a valid attempt never replaces
it. Every other attempt is superseded: listed and counted, never rated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from agentrel.harness.results.attempts import rank
from agentrel.harness.results.reading import RunReading

RunKey = tuple[str, str, str, int]


class Run(NamedTuple):
    """One run: its decisive attempt, that attempt's status, and how many attempts it had."""

    record: RunReading
    status: str
    attempts: int


@dataclass(frozen=True)
class Decided:
    runs: list[Run]  # in the order each run first appears
    superseded: list[tuple[RunReading, str]]  # (attempt, its status), in line order


def decide(lines: Sequence[tuple[int, RunReading]]) -> Decided:
    """Pick each run's decisive attempt from (line number, record) pairs (see the module docstring)."""
    best: dict[RunKey, tuple[tuple[bool, int, int], RunReading, str]] = {}  # rank, attempt, status
    attempts: dict[RunKey, int] = {}
    for lineno, rec in lines:
        status = rec.effective_status
        key = (rec.model, rec.task, rec.condition, rec.run_index)
        ranked = rank(status, rec.attempt, lineno)
        held = best.get(key)
        if held is None:
            best[key] = (ranked, rec, status)
            attempts[key] = 1
            continue
        attempts[key] += 1
        if ranked > held[0]:
            best[key] = (ranked, rec, status)
    runs = [Run(rec, status, attempts[key]) for key, (_, rec, status) in best.items()]
    superseded = []
    if len(best) < len(lines):  # a second pass only when some run has several attempts
        for lineno, rec in lines:
            decided, _, _ = best[(rec.model, rec.task, rec.condition, rec.run_index)]
            if abs(decided[2]) != lineno:
                superseded.append((rec, rec.effective_status))
    return Decided(runs, superseded)
