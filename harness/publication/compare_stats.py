"""The paired statistics of a comparison, pure: runs of two subjects on the same seeds in, tests out.

Two subjects' runs of one cell on one seed met the same faults and payloads (the per-run seed does not
depend on the subject), so they pair. Per cell, an exact McNemar test on the discordant pairs, on damage
and on completion, Holm-adjusted within a (pair, axis) family; overall and per condition, a cluster
bootstrap over tasks (analysis/bootstrap.py) of the difference in rates, and the exact paired interval
for the same counts (analysis/intervals.py). The interval a comparison shows is the hull of the two: a
bootstrap over one or two tasks has almost no distinct resamples and must not read as proof.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from agentrel.analysis.bootstrap import cluster_bootstrap
from agentrel.analysis.intervals import paired_difference_interval
from agentrel.analysis.noise_floor import fitted_icc, min_detectable_difference
from agentrel.analysis.paired import mcnemar_exact
from agentrel.harness.frozen import Frozen

__all__ = [
    "AXES",
    "CellTest",
    "PairedRun",
    "RateDifference",
    "cell_tests",
    "holm",
    "mcnemar_exact",
    "pair_runs",
    "rate_differences",
    "task_features",
]

Axis = Literal["damage", "completion"]
AXES: tuple[Axis, ...] = ("damage", "completion")
Array = NDArray[np.float64]
Pairs = Sequence[tuple["PairedRun", "PairedRun"]]


class PairedRun(Frozen):
    task: str
    condition: str
    fault: str | None
    run_index: int
    seed: str
    damaged: bool
    passed: bool

    @property
    def cell(self) -> tuple[str, str, str]:
        return (self.task, self.condition, self.fault or "")

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (*self.cell, self.run_index)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (statsmodels' `multipletests`, method "holm")."""
    if not p_values:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(list(p_values), method="holm")[1]]


class CellTest(Frozen):
    task: str
    condition: str
    fault: str | None
    axis: Axis
    pairs: int
    rate_a: float
    rate_b: float
    a_only: int  # discordant: the event in A's run, not in B's on the same seed
    b_only: int
    p_value: float
    p_holm: float


class RateDifference(Frozen):
    stratum: str  # a condition, or "all"
    axis: Axis
    tasks: int
    pairs: int
    rate_a: float
    rate_b: float
    difference: float  # rate_a - rate_b
    a_only: int  # pairs with A's event and not B's
    b_only: int
    interval: tuple[float, float]  # the shown one: hull of the percentile and the exact paired interval
    exact: tuple[float, float]  # analysis.intervals.paired_difference_interval of (a_only, b_only, pairs)
    percentile: tuple[float | None, float | None]  # None where undefined (no valid replicate)
    bca: tuple[float | None, float | None]
    n_boot: int
    n_valid: int
    # The noise floor of this comparison (analysis/noise_floor.py): the smallest difference its pairs and
    # tasks detect at 80% power; a difference below it is below the floor. None on older comparisons.
    mde: float | None = None
    below_floor: bool | None = None


def _floor(feats: Array, ca: int, cb: int, rate: float, alpha: float) -> float | None:
    """The mde at the stratum's pairs and tasks, the ICC fitted over both agents' per-task counts."""
    if feats.shape[0] == 0 or feats[:, 4].sum() == 0:
        return None
    counts = np.concatenate([feats[:, ca], feats[:, cb]]).astype(np.int64)
    runs = np.concatenate([feats[:, 4], feats[:, 4]]).astype(np.int64)
    pairs, tasks = int(feats[:, 4].sum()), int(feats.shape[0])
    return min_detectable_difference(rate, pairs, tasks, fitted_icc(counts, runs), alpha)


def _event(run: PairedRun, axis: Axis) -> bool:
    return run.damaged if axis == "damage" else run.passed


def pair_runs(a: Sequence[PairedRun], b: Sequence[PairedRun]) -> list[tuple[PairedRun, PairedRun]]:
    """A's runs, each with B's run on the same (task, condition, fault, run index); the caller has
    checked that both cover the same runs with the same seeds."""
    by_key = {r.key: r for r in b}
    return [(r, by_key[r.key]) for r in sorted(a, key=lambda r: r.key)]


def cell_tests(pairs: Pairs) -> list[CellTest]:
    grouped: dict[tuple[str, str, str], list[tuple[PairedRun, PairedRun]]] = defaultdict(list)
    for x, y in pairs:
        grouped[x.cell].append((x, y))
    out = []
    for axis in AXES:
        rows = []
        for cell in sorted(grouped):
            events = [(_event(x, axis), _event(y, axis)) for x, y in grouped[cell]]
            a_only = sum(ea and not eb for ea, eb in events)
            b_only = sum(eb and not ea for ea, eb in events)
            n = len(events)
            rows.append(
                (cell, n, sum(ea for ea, _ in events) / n, sum(eb for _, eb in events) / n, a_only, b_only)
            )
        p_values = [mcnemar_exact(r[4], r[5]) for r in rows]
        for (cell, n, ra, rb, ao, bo), p, p_holm in zip(rows, p_values, holm(p_values), strict=True):
            out.append(
                CellTest(
                    task=cell[0],
                    condition=cell[1],
                    fault=cell[2] or None,
                    axis=axis,
                    pairs=n,
                    rate_a=ra,
                    rate_b=rb,
                    a_only=ao,
                    b_only=bo,
                    p_value=p,
                    p_holm=p_holm,
                )
            )
    return out


def task_features(pairs: Pairs) -> tuple[list[str], Array]:
    """Per task (sorted): [A damaged, B damaged, A passed, B passed, pairs], summed over its runs."""
    tasks = sorted({x.task for x, _ in pairs})
    index = {t: i for i, t in enumerate(tasks)}
    feats = np.zeros((len(tasks), 5))
    for x, y in pairs:
        feats[index[x.task]] += (x.damaged, y.damaged, x.passed, y.passed, 1)
    return tasks, feats


def _diff(col_a: int, col_b: int) -> Callable[[Array], Array]:
    return lambda s: (s[..., col_a] - s[..., col_b]) / s[..., 4]


def _finite(pair: tuple[float, float]) -> tuple[float | None, float | None]:
    lo, hi = pair
    return (lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None)


def _hull(exact: tuple[float, float], boot: tuple[float | None, float | None]) -> tuple[float, float]:
    lo = exact[0] if boot[0] is None else min(exact[0], boot[0])
    hi = exact[1] if boot[1] is None else max(exact[1], boot[1])
    return lo, hi


def rate_differences(pairs: Pairs, seed: int, n_boot: int, level: float) -> list[RateDifference]:
    """Overall and per condition, on damage and on completion: A's rate minus B's, with a cluster
    bootstrap over tasks (a task's paired runs are resampled together). Each interval draws from its own
    generator seeded with `seed`, so any one of them can be reproduced alone."""
    strata = {"all": list(pairs)}
    for condition in sorted({x.condition for x, _ in pairs}):
        strata[condition] = [p for p in pairs if p[0].condition == condition]
    out = []
    for stratum, rows in strata.items():
        tasks, feats = task_features(rows)
        total = feats.sum(axis=0)
        for axis, (ca, cb) in zip(AXES, ((0, 1), (2, 3)), strict=True):
            (iv,) = cluster_bootstrap(feats, _diff(ca, cb), n_boot, np.random.default_rng(seed), level)
            events = [(_event(x, axis), _event(y, axis)) for x, y in rows]
            a_only = sum(ea and not eb for ea, eb in events)
            b_only = sum(eb and not ea for ea, eb in events)
            exact = paired_difference_interval(a_only, b_only, len(rows), 1.0 - level)
            percentile = _finite(iv.percentile)
            mde = _floor(feats, ca, cb, float((total[ca] + total[cb]) / (2 * total[4])), 1.0 - level)
            out.append(
                RateDifference(
                    stratum=stratum,
                    axis=axis,
                    tasks=len(tasks),
                    pairs=int(total[4]),
                    rate_a=float(total[ca] / total[4]),
                    rate_b=float(total[cb] / total[4]),
                    difference=iv.estimate,
                    a_only=a_only,
                    b_only=b_only,
                    interval=_hull(exact, percentile),
                    exact=exact,
                    percentile=percentile,
                    bca=_finite(iv.bca),
                    n_boot=iv.n_boot,
                    n_valid=iv.n_valid,
                    mde=mde,
                    below_floor=None if mde is None else bool(abs(iv.estimate) < mde),
                )
            )
    return out
