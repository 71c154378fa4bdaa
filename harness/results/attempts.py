"""Which attempt of a run decides it: one rule, stated once, used by the runner's resume, analysis, the
view, publication and the Inspect scorer.

Each line of runs.jsonl is one attempt of a run (model, task, condition, run index). An invalid attempt
(the provider or the harness failed) says nothing about the agent, so the run is attempted again, up to
the preregistered cap, and every attempt is kept.

**The first terminal attempt decides** (valid, or not exposed to its fault); a run with none is decided by
its latest attempt, and is an invalid run. "First" is the lowest attempt number, then the earlier line.
A terminal attempt is final: an attempt recorded after it is a re-roll (by hand, or by re-running a run
whose evidence was lost). It never replaces the decisive attempt, analysis lists it as superseded, and
publication refuses the run (`attempt_after_valid`): with a sampled model, a re-roll would let anyone
redraw a run they dislike.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentrel.harness.results.status import TERMINAL

__all__ = ["decisive_index", "is_reroll", "rank"]


def rank(status: str, attempt: int, position: int) -> tuple[bool, int, int]:
    """The decisive attempt of a run is the one of highest rank. `position` breaks ties between equal
    attempt numbers: the line number, or any number that orders the attempts without their lines (a
    publication uses the record's leaf hash, so the order of the lines never changes the decision).
    A terminal attempt outranks every other; among terminal ones the first wins, among the rest the
    latest."""
    if status in TERMINAL:
        return (True, -attempt, -position)
    return (False, attempt, position)


def decisive_index(statuses: Sequence[str], numbers: Sequence[int] | None = None) -> int:
    """The index of a run's decisive attempt, given its attempts' statuses (and attempt numbers) in line
    order: the first terminal attempt, else the latest attempt."""
    if not statuses:
        raise ValueError("a run has at least one attempt")
    nums = numbers if numbers is not None else range(1, len(statuses) + 1)
    return max(range(len(statuses)), key=lambda i: rank(statuses[i], nums[i], i))


def is_reroll(decisive_status: str, decisive_attempt: int, attempt: int) -> bool:
    """An attempt numbered after its run's decisive attempt, when that one is terminal: a re-roll."""
    return decisive_status in TERMINAL and attempt > decisive_attempt
