from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from agentrel.analysis.betabinom import fit_beta_binomial
from agentrel.analysis.decisions.allocate import OpenCell, RatePrior, allocate, bought, undetected
from agentrel.analysis.decisions.certify import CellCounts
from agentrel.analysis.required_k import all_clean_probability_beta


def test_tail_is_the_beta_ratio() -> None:
    """g_c(m) = B(a, b + c + m) / B(a, b + c), against the repo's independent beta-function code."""
    prior = RatePrior.declared(0.4, 6.0)
    for c, m in [(0, 1), (0, 7), (5, 3), (12, 20)]:
        got = undetected([OpenCell("x", c, 100)], {"x": m}, prior)
        want = all_clean_probability_beta(0.4, 6.0 + c, m)
        assert got == pytest.approx(want, rel=1e-12)


def test_greedy_is_optimal_by_exhaustive_search() -> None:
    prior = RatePrior.declared(0.3, 4.0)
    cells = [OpenCell("a", 0, 6), OpenCell("b", 3, 4), OpenCell("c", 10, 5), OpenCell("d", 1, 2)]
    for budget in range(0, 12):
        got = allocate(cells, budget, prior)
        best = math.inf
        for combo in itertools.product(*(range(c.needed + 1) for c in cells)):
            if sum(combo) <= budget:
                best = min(best, undetected(cells, dict(zip("abcd", combo, strict=True)), prior))
        assert got.undetected_after == pytest.approx(best, rel=1e-12)
        assert got.allocated <= budget
        assert all(got.runs[c.name] <= c.needed for c in cells)


def test_budget_beyond_need_certifies_everything_possible() -> None:
    prior = RatePrior.declared(0.5, 5.0)
    cells = [OpenCell("a", 0, 3), OpenCell("b", 0, 2)]
    got = allocate(cells, 100, prior)
    assert got.runs == {"a": 3, "b": 2} and got.allocated == 5
    assert got.expected_certified == pytest.approx(undetected(cells, got.runs, prior))
    assert 0 < got.expected_runs < 5


def test_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        allocate([OpenCell("a", 0, 3)], -1, RatePrior.declared(1, 1))


def test_prior_from_fit_and_degenerate_fit_refused() -> None:
    rng = np.random.default_rng(5)
    p = rng.beta(0.5, 8.0, size=300)
    n = np.full(300, 20)
    y = rng.binomial(n, p)
    prior = RatePrior.from_fit(fit_beta_binomial(y, n))
    assert prior.source == "beta-binomial fit" and 0.02 < prior.mu < 0.12
    with pytest.raises(ValueError, match="declare a Beta prior"):
        RatePrior.from_fit(fit_beta_binomial([0, 0, 0], [8, 8, 8]))
    with pytest.raises(ValueError, match="a declared Beta prior"):
        RatePrior.declared(0.0, 1.0)


def test_allocation_beats_equal_split_by_simulation() -> None:
    """Independent check of the objective: simulate cells from the prior, spend the budget both ways."""
    prior = RatePrior.declared(0.3, 10.0)
    cells = [OpenCell(f"c{i}", c, 30 - c) for i, c in enumerate([0, 0, 0, 5, 10, 20, 25, 28])]
    budget = 40
    greedy = allocate(cells, budget, prior)
    equal = {c.name: min(c.needed, budget // len(cells)) for c in cells}
    rng = np.random.default_rng(11)
    sims = 20_000
    missed = {"greedy": 0.0, "equal": 0.0}
    for cell in cells:
        p = rng.beta(prior.a, prior.b + cell.clean, size=sims)  # posterior given its clean runs
        first = rng.geometric(p)
        missed["greedy"] += float(np.mean(first > greedy.runs[cell.name]))
        missed["equal"] += float(np.mean(first > equal[cell.name]))
    assert missed["greedy"] == pytest.approx(greedy.undetected_after, abs=0.05)
    assert missed["greedy"] < missed["equal"]


def test_bought_reports_open_cells_with_bounds() -> None:
    counts = {
        "a": CellCounts(clean=59),
        "b": CellCounts(clean=3, damaging=1),
        "c": CellCounts(clean=10, invalid=4),
    }
    got = bought(counts, 59, 0.95)
    assert got.certified == ["a"] and got.detected == ["b"]
    assert [o.name for o in got.open] == ["c"]
    assert got.open[0].upper == pytest.approx(1 - 0.05 ** (1 / 10))
