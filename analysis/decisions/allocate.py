"""Spend a run budget across cells to leave as few damaging cells undetected as possible.

**Model.** Per-cell damage rates are drawn from a Beta(a, b) distribution: the beta-binomial fit of
earlier runs (``analysis.betabinom.fit_beta_binomial``; mean mu, ICC rho, a = mu(1 - rho)/rho,
b = (1 - mu)(1 - rho)/rho) or a declared prior. A cell still open after c clean runs (no damage yet)
has posterior Beta(a, b + c). The probability that m more runs are all clean is

    g_c(m) = B(a, b + c + m) / B(a, b + c) = prod_{j<m} (b + c + j) / (a + b + c + j)

and in the binomial limit (rho = 0, a, b infinite) g_c(m) = (1 - mu)^m.

**Objective.** The expected number of damaging cells left undetected, sum_i g_{c_i}(m_i) over open
cells (a cell with p > 0 is damaging; under a continuous prior that is every cell), minimised over
allocations m_i >= 0 with sum m_i <= budget and m_i <= runs the cell can still need before it is
certified (n(P, C) - c_i: the audit never runs a cell past its certificate).

**Guarantee.** The gain of one more run, g(m) - g(m + 1) = g(m) a / (a + b + c + m), decreases in m,
so each g_c is convex in m and the objective is separable convex; greedy allocation of one run at a
time to the largest gain is then exactly optimal (the classical result for separable convex resource
allocation, Gross 1956 / Fox 1966). The allocation is a cap per cell: runs the audit does not spend
because a cell was detected early are returned in ``expected_runs``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentrel.analysis.decisions.certify import CellCounts, decide

if TYPE_CHECKING:  # the fit is scipy's; a sequential audit's gate needs only the counts
    from agentrel.analysis.betabinom import BetaBinomialFit


@dataclass(frozen=True)
class RatePrior:
    """The distribution of per-cell damage rates: Beta(a, b), or a point mass at mu (a = b = inf)."""

    a: float
    b: float
    mu: float
    source: str  # "beta-binomial fit" or "declared"

    @classmethod
    def declared(cls, a: float, b: float) -> RatePrior:
        if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
            raise ValueError(f"a declared Beta prior needs finite a, b > 0, got a={a}, b={b}")
        return cls(a, b, a / (a + b), "declared")

    @classmethod
    def from_fit(cls, fit: BetaBinomialFit) -> RatePrior:
        """The fitted beta-binomial; refused when the fit is degenerate (no damage, or all damage)."""
        if fit.degenerate:
            raise ValueError(
                "the earlier runs are all clean (or all damaging), so they identify no distribution "
                "of rates; declare a Beta prior instead"
            )
        return cls(fit.a, fit.b, fit.mu, "beta-binomial fit")

    def clean_step(self, clean: int) -> float:
        """P(next run clean | clean runs so far): (b + c) / (a + b + c), or 1 - mu at rho = 0."""
        if math.isinf(self.a):
            return 1.0 - self.mu
        return (self.b + clean) / (self.a + self.b + clean)


@dataclass(frozen=True)
class OpenCell:
    """A cell still undecided: its clean runs so far and the runs it may still need."""

    name: str
    clean: int
    needed: int  # runs until certification (n(P, C) - clean)


@dataclass(frozen=True)
class Allocation:
    runs: dict[str, int]  # the most runs each cell may spend
    budget: int
    allocated: int
    undetected_before: float  # expected damaging cells undetected with no further runs
    undetected_after: float  # ... with the allocation
    expected_detected: float  # expected cells that see damage within their allocation
    expected_certified: float  # expected cells that reach their count clean
    expected_runs: float  # expected runs spent (a detected cell stops early)


def _tail(prior: RatePrior, clean: int, m: int) -> float:
    """g_clean(m) = P(m more runs all clean | clean runs so far), as a product of steps."""
    out = 1.0
    for j in range(m):
        out *= prior.clean_step(clean + j)
    return out


def allocate(cells: Sequence[OpenCell], budget: int, prior: RatePrior) -> Allocation:
    """Greedy (and optimal, see the module doc) allocation of at most `budget` runs."""
    if budget < 0:
        raise ValueError(f"budget must be non-negative, got {budget}")
    runs = {c.name: 0 for c in cells}
    tail = {c.name: 1.0 for c in cells}  # g(m) at the current allocation
    expected_runs = {c.name: 0.0 for c in cells}  # sum_{j<m} g(j): a run j happens iff j clean before
    by_name = {c.name: c for c in cells}
    # Max-heap of marginal gains g(m)(1 - step(c + m)); ties broken by name for determinism.
    heap = [(-(1.0 - prior.clean_step(c.clean)), c.name) for c in cells if c.needed > 0]
    heapq.heapify(heap)
    left = budget
    while left > 0 and heap:
        _, name = heapq.heappop(heap)
        cell, m = by_name[name], runs[name]
        expected_runs[name] += tail[name]
        tail[name] *= prior.clean_step(cell.clean + m)
        runs[name] = m + 1
        left -= 1
        if m + 1 < cell.needed:
            gain = tail[name] * (1.0 - prior.clean_step(cell.clean + m + 1))
            heapq.heappush(heap, (-gain, name))
    before = float(len(cells))
    after = sum(tail.values())
    certified = sum(tail[c.name] for c in cells if runs[c.name] >= c.needed)
    return Allocation(
        runs=runs,
        budget=budget,
        allocated=budget - left,
        undetected_before=before,
        undetected_after=after,
        expected_detected=before - after,
        expected_certified=certified,
        expected_runs=sum(expected_runs.values()),
    )


def undetected(cells: Sequence[OpenCell], runs: dict[str, int], prior: RatePrior) -> float:
    """The objective for any allocation (for comparing against the greedy one)."""
    return sum(_tail(prior, c.clean, runs.get(c.name, 0)) for c in cells)


@dataclass(frozen=True)
class OpenBound:
    name: str
    clean: int
    upper: float  # one-sided Clopper–Pearson upper bound of p at the audit's confidence


@dataclass(frozen=True)
class Bought:
    """What a budget bought once spent: certified and detected cells, open ones with their bounds."""

    certified: list[str]
    detected: list[str]
    open: list[OpenBound]


def bought(counts: dict[str, CellCounts], required: int, confidence: float) -> Bought:
    """Sort cells by the stopping rule; an open cell's bound is 1 - (1 - C)^(1/c) (c clean runs)."""
    certified, detected, still = [], [], []
    for name, cell in sorted(counts.items()):
        decision = decide(cell, required)
        if decision == "certified":
            certified.append(name)
        elif decision == "detected":
            detected.append(name)
        else:
            upper = 1.0 if cell.clean == 0 else 1.0 - (1.0 - confidence) ** (1.0 / cell.clean)
            still.append(OpenBound(name, cell.clean, upper))
    return Bought(certified, detected, still)
