"""Paired differences between agents: the same task, condition and run index is the same seed, so the
same faults and payloads; runs pair up across agents and a paired test sees differences that two
separate rates hide.

For every condition and every pair of agents (A, B), on the runs both have valid (task, run index),
per axis (damage: the run damaged; completion: it passed), overall and per task:

    rate_A - rate_B in percentage points, over the n pairs;
    exact McNemar test: under H0 the discordant pairs split as Binomial(b + c, 1/2), where b pairs
    have the event for A only and c for B only; two-sided p = min(1, 2 * P(X <= min(b, c))).

A run valid for one agent and invalid (or missing) for the other has no pair: it is counted in
`unpaired`, never silently dropped. Pure: data in, data out.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from math import comb

import pandas as pd

AXES = ("damage", "completion")


@dataclass(frozen=True)
class PairedDifference:
    a: str
    b: str
    condition: str
    task: str  # "all" for every task together
    axis: str
    pairs: int
    a_rate: float
    b_rate: float
    a_only: int
    b_only: int
    p_value: float
    unpaired: int  # runs of A or B in this stratum with no valid partner

    @property
    def difference_pp(self) -> float:
        return (self.a_rate - self.b_rate) * 100.0


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: 2 * P(Binomial(b + c, 1/2) <= min(b, c)), capped at 1."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2.0 * tail)


def _axis(frame: pd.DataFrame, axis: str) -> pd.Series:
    if axis == "damage":
        return frame["damaged"].astype(bool)
    return frame["passed"].fillna(False).astype(bool)


def _count(frame: pd.DataFrame, task: str) -> int:
    return len(frame) if task == "all" else int((frame.index.get_level_values(0) == task).sum())


def paired_differences(runs: pd.DataFrame) -> list[PairedDifference]:
    """Every (condition, A, B, task or all, axis) comparison over paired valid runs (see module doc)."""
    out: list[PairedDifference] = []
    has_completion = runs["passed"].notna().any() if len(runs) else False
    axes = AXES if has_completion else ("damage",)
    for condition, group in runs.groupby("condition", sort=True):
        agents = sorted(group["model"].unique())
        for a, b in combinations(agents, 2):
            left = group[group["model"] == a].set_index(["task", "run"])
            right = group[group["model"] == b].set_index(["task", "run"])
            both = left.index.intersection(right.index)
            tasks = sorted(set(both.get_level_values(0)))
            strata = [("all", both), *((t, both[both.get_level_values(0) == t]) for t in tasks)]
            for task, index in strata:
                unpaired = _count(left, task) + _count(right, task) - 2 * len(index)
                for axis in axes:
                    xa = _axis(left.loc[index], axis).to_numpy()
                    xb = _axis(right.loc[index], axis).to_numpy()
                    n = len(index)
                    a_only, b_only = int((xa & ~xb).sum()), int((~xa & xb).sum())
                    out.append(
                        PairedDifference(
                            a=str(a),
                            b=str(b),
                            condition=str(condition),
                            task=str(task),
                            axis=axis,
                            pairs=n,
                            a_rate=float(xa.mean()) if n else float("nan"),
                            b_rate=float(xb.mean()) if n else float("nan"),
                            a_only=a_only,
                            b_only=b_only,
                            p_value=mcnemar_exact(a_only, b_only),
                            unpaired=unpaired,
                        )
                    )
    return out
