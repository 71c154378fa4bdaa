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

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations
from math import comb
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

AXES = ("damage", "completion")
EXACT_UP_TO = 1000


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


@functools.lru_cache(maxsize=65536)  # pure; the same small (b, c) recur across thousands of strata
def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: 2 * P(Binomial(b + c, 1/2) <= min(b, c)), capped at 1.

    In exact integer arithmetic up to 1,000 discordant pairs; beyond, the same binomial tail from
    scipy's regularized incomplete beta (summing thousands of thousand-digit binomials is slow)."""
    n = b + c
    if n == 0:
        return 1.0
    if n <= EXACT_UP_TO:
        tail = sum(comb(n, i) for i in range(min(b, c) + 1)) / (1 << n)
    else:
        tail = float(stats.binom.cdf(min(b, c), n, 0.5))
    return min(1.0, 2.0 * tail)


def _flags(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "task": frame["task"].astype(str),
            "run": frame["run"].astype(str),
            "damage": frame["damaged"].astype(bool),
            "completion": frame["passed"].astype("boolean").fillna(False).astype(bool),
        }
    )


def _difference(
    a: str,
    b: str,
    condition: str,
    task: str,
    axis: str,
    counts: tuple[int, int, int, int, int],
    unpaired: int,
) -> PairedDifference:
    n, sa, sb, a_only, b_only = counts
    return PairedDifference(
        a=a,
        b=b,
        condition=condition,
        task=task,
        axis=axis,
        pairs=n,
        a_rate=sa / n if n else float("nan"),
        b_rate=sb / n if n else float("nan"),
        a_only=a_only,
        b_only=b_only,
        p_value=mcnemar_exact(a_only, b_only),
        unpaired=unpaired,
    )


def _five(values: Iterable[Any]) -> tuple[int, int, int, int, int]:
    n, sa, sb, ao, bo = (int(v) for v in values)
    return n, sa, sb, ao, bo


def paired_differences(runs: pd.DataFrame) -> list[PairedDifference]:
    """Every (condition, A, B, task or all, axis) comparison over paired valid runs (see module doc).

    Per condition, each agent's runs are laid on one index of (task, run index) keys, so a pair of agents
    is a few array operations and per-task counts (100,000 runs, ten agents, 200 tasks: 45 pairs in well
    under a second). An agent with two runs on one key in a condition (a table not one row per run)
    pairs by the row-by-row join instead, which counts every combination."""
    out: list[PairedDifference] = []
    if runs.empty:
        return out
    axes = AXES if runs["passed"].notna().any() else ("damage",)
    for condition, group in runs.groupby("condition", sort=True):
        flags = _flags(group).assign(model=group["model"].astype(str).to_numpy())
        if flags.duplicated(["model", "task", "run"]).any():
            out += _joined(str(condition), flags, axes)
        else:
            out += _laid_out(str(condition), flags, axes)
    return out


def _laid_out(condition: str, flags: pd.DataFrame, axes: tuple[str, ...]) -> list[PairedDifference]:
    """The comparisons of one condition whose agents each have at most one run per (task, run index)."""
    out: list[PairedDifference] = []
    task_code, tasks = pd.factorize(flags["task"], sort=True)  # codes in sorted task order
    key_code, keys = pd.factorize(pd.MultiIndex.from_arrays([flags["task"], flags["run"]]))
    key_task = np.zeros(len(keys), dtype=np.int64)
    key_task[key_code] = task_code
    n_tasks, names = len(tasks), [str(t) for t in tasks]
    agents: dict[str, dict[str, npt.NDArray[np.bool_]]] = {}
    for model in sorted(flags["model"].unique()):
        mine = (flags["model"] == model).to_numpy()
        codes = key_code[mine]
        laid = {"present": np.zeros(len(keys), dtype=bool)}
        laid["present"][codes] = True
        for axis in axes:
            laid[axis] = np.zeros(len(keys), dtype=bool)
            laid[axis][codes] = flags[axis].to_numpy(dtype=bool)[mine]
        agents[model] = laid

    def per_task(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
        return np.bincount(key_task[mask], minlength=n_tasks).astype(np.int64)

    for a, b in combinations(agents, 2):
        left, right = agents[a], agents[b]
        both = left["present"] & right["present"]
        n_a, n_b, n = per_task(left["present"]), per_task(right["present"]), per_task(both)
        seen = [int(t) for t in np.flatnonzero(n_a + n_b)]
        unpaired = n_a + n_b - 2 * n
        unpaired_all = int(unpaired[seen].sum())
        for axis in axes:
            xa, xb = left[axis] & both, right[axis] & both
            counts = np.stack([n, per_task(xa), per_task(xb), per_task(xa & ~xb), per_task(~xa & xb & both)])
            total = _five(counts.sum(axis=1).tolist())
            out.append(_difference(a, b, condition, "all", axis, total, unpaired_all))
            by_task, left_out = counts.T.tolist(), unpaired.tolist()  # plain ints, read once per task
            for t in seen:
                out.append(_difference(a, b, condition, names[t], axis, _five(by_task[t]), left_out[t]))
    return out


def _joined(condition: str, flags: pd.DataFrame, axes: tuple[str, ...]) -> list[PairedDifference]:
    """The comparisons of one condition by joining each pair of agents' runs on (task, run index)."""
    out: list[PairedDifference] = []
    by_agent = {str(m): g.drop(columns="model") for m, g in flags.groupby("model", sort=True)}
    for a, b in combinations(sorted(by_agent), 2):
        left, right = by_agent[a], by_agent[b]
        pairs = left.merge(right, on=["task", "run"], suffixes=("_a", "_b"))
        # Plain dicts, read once per task below: a pandas lookup per (task, axis) was most of the
        # time at 200 tasks x 45 pairs of agents.
        per_task_a = left.groupby("task").size().to_dict()
        per_task_b = right.groupby("task").size().to_dict()
        per_task_pairs = pairs.groupby("task").size().to_dict()
        tasks = sorted(set(per_task_a) | set(per_task_b))
        unpaired = {
            t: int(per_task_a.get(t, 0) + per_task_b.get(t, 0) - 2 * per_task_pairs.get(t, 0)) for t in tasks
        }
        for axis in axes:
            xa, xb = pairs[f"{axis}_a"], pairs[f"{axis}_b"]
            table = (
                pd.DataFrame(
                    {"task": pairs["task"], "n": 1, "sa": xa, "sb": xb, "ao": xa & ~xb, "bo": ~xa & xb}
                )
                .groupby("task")[["n", "sa", "sb", "ao", "bo"]]
                .sum()
            )
            total = _five(table.sum()) if len(table) else (0, 0, 0, 0, 0)
            out.append(_difference(a, b, condition, "all", axis, total, sum(unpaired.values())))
            by_task = dict(zip(table.index, map(_five, table.to_numpy().tolist()), strict=True))
            for task in tasks:
                counts = by_task.get(task, (0, 0, 0, 0, 0))
                out.append(_difference(a, b, condition, task, axis, counts, unpaired[task]))
    return out
