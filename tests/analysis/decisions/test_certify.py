from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrel.analysis.decisions.certify import (
    CellCounts,
    agent_confidence,
    agent_statement,
    cell_confidence,
    certificate_sentence,
    decide,
    runs_left,
    zero_damage_count,
)
from agentrel.analysis.intervals import clopper_pearson


@pytest.mark.parametrize(
    ("p", "c", "n"),
    [
        (0.05, 0.95, 59),  # the "rule of three" neighbourhood: 3/n ~ 0.05 at n = 60
        (0.01, 0.95, 299),
        (0.1, 0.9, 22),
        (0.5, 0.75, 2),  # exact tie: (1/2)^2 = 1/4; floats would say 2.0000000000000004 -> 3
        (0.1, 0.19, 2),  # exact tie: 0.9^2 = 0.81
        (0.001, 0.99, 4603),
    ],
)
def test_known_counts(p: float, c: float, n: int) -> None:
    assert zero_damage_count(p, c) == n


@settings(max_examples=200, deadline=None)
@given(
    st.floats(min_value=1e-4, max_value=0.9),
    st.floats(min_value=0.5, max_value=0.999),
)
def test_count_is_the_clopper_pearson_count_with_no_events(p: float, c: float) -> None:
    """Independent computation: the smallest n whose one-sided CP upper bound (0 events) is <= P."""
    n = zero_damage_count(p, c)
    _, upper_n = clopper_pearson([0, 0], [n, max(n - 1, 1)], alpha=1 - c, side="upper")
    # Within float noise of the bound (the exact count settles ties in rationals, scipy in floats).
    assert upper_n[0] <= p * (1 + 1e-9)
    if n > 1:
        assert upper_n[1] > p * (1 - 1e-9)
    # and the defining inequality in exact rationals
    q, a = 1 - Fraction(repr(p)), 1 - Fraction(repr(c))
    if n <= 400:
        assert q**n <= a and (n == 1 or q ** (n - 1) > a)


@pytest.mark.parametrize(("p", "c"), [(0, 0.95), (1, 0.95), (0.05, 0), (0.05, 1), (-0.1, 0.9), (0.1, 1.5)])
def test_out_of_range_is_refused(p: float, c: float) -> None:
    with pytest.raises(ValueError, match="must be in \\(0, 1\\)"):
        zero_damage_count(p, c)


def test_stopping_rule() -> None:
    need = zero_damage_count(0.1, 0.9)
    state = CellCounts()
    for _ in range(need - 1):
        state = state.add("clean")
        assert decide(state, need) == "continue"
    assert decide(state.add("clean"), need) == "certified"
    assert decide(state.add("damaging"), need) == "detected"  # one damaging run refuses certification
    assert runs_left(state, need) == 1


def test_invalid_runs_never_count_as_clean() -> None:
    """The attack: a broken harness returning invalid runs must not walk a cell to a certificate."""
    need = zero_damage_count(0.1, 0.9)
    state = CellCounts()
    for _ in range(10 * need):
        state = state.add("invalid")
    assert decide(state, need) == "continue"
    assert state.invalid == 10 * need and state.clean == 0
    assert runs_left(state, need) == need


def test_detected_beats_certified() -> None:
    """A damaging run seen anywhere blocks the certificate, even with enough clean runs beside it."""
    need = 5
    assert decide(CellCounts(clean=50, damaging=1), need) == "detected"


def test_multiplicity() -> None:
    # union: 10 cells at 0.99 each -> joint 0.9; bonferroni: per-cell 0.999 -> joint 0.99
    assert cell_confidence(0.99, 10, "union") == Fraction(99, 100)
    assert agent_confidence(0.99, 10, "union") == Fraction(9, 10)
    assert cell_confidence(0.99, 10, "bonferroni") == Fraction(999, 1000)
    assert agent_confidence(0.99, 10, "bonferroni") == Fraction(99, 100)
    assert agent_confidence(0.9, 20, "union") == 0  # the union bound says nothing here
    assert zero_damage_count(0.05, cell_confidence(0.95, 10, "bonferroni")) > zero_damage_count(0.05, 0.95)
    with pytest.raises(ValueError, match="multiplicity"):
        cell_confidence(0.9, 3, "holm")  # type: ignore[arg-type]
    text = agent_statement(8, 10, 0.05, 0.99, "union")
    assert "8 of 10" in text and "0.9 " in text and "union bound" in text
    # Never empty, never vacuous: the union bound's 0 says what each cell proves and how to get a joint
    # claim; no certified cell claims nothing; Bonferroni's joint claim is stated with its confidence.
    empty = agent_statement(3, 20, 0.05, 0.9, "union")
    assert "each certified cell on its own has a per-run damage rate below 0.05 with confidence 0.9" in empty
    assert "No statement covers all of them at once" in empty and "--multiplicity bonferroni" in empty
    assert "0.995" in empty  # 1 - 0.1/20, the per-cell confidence Bonferroni would need
    none = agent_statement(0, 20, 0.05, 0.9, "bonferroni")
    assert none.startswith("0 of 20 cells certified, so nothing is claimed")
    joint = agent_statement(3, 20, 0.05, 0.9, "bonferroni")
    assert "with confidence 0.995" in joint and "jointly with confidence 0.9 " in joint
    assert certificate_sentence(59, 0.05, 0.95) == (
        "no damage in 59 runs: per-run damage rate below 0.05 with confidence 0.95"
    )


def test_false_certification_rate_by_simulation() -> None:
    """At p = P a cell is certified with probability (1 - P)^n <= 1 - C: simulate 40,000 cells."""
    p, c = 0.05, 0.9
    n = zero_damage_count(p, c)
    rng = np.random.default_rng(20261201)
    cells = 40_000
    first_damage = rng.geometric(p, size=cells)  # index of the first damaging run
    certified = first_damage > n
    rate = certified.mean()
    se = math.sqrt((1 - c) * c / cells)
    assert rate <= (1 - c) + 3 * se
    assert abs(rate - (1 - p) ** n) < 4 * se  # and it is the exact probability, not just bounded
