"""The smaller sibling of bench/adaptive_audit.py: the guarantees checked by simulation on the shipped
rule, and the savings on per-cell rates shaped like the published cells (tests/data/arb_outcomes.csv)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from agentrel.analysis.decisions.audit_sim import fast_audit, published_mixture, runs_saved, sequential_audit
from agentrel.analysis.decisions.certify import CellCounts, decide, zero_damage_count


@pytest.fixture(scope="module")
def published(arb_csv) -> pd.DataFrame:
    data = pd.read_csv(arb_csv)
    return data.groupby(["model", "task"]).agg(n=("damaged", "size"), x=("damaged", "sum")).reset_index()


def test_false_certification_at_the_target_with_invalid_runs() -> None:
    p, c = 0.1, 0.9
    n = zero_damage_count(p, c)
    out = sequential_audit(np.full(6000, p), n, np.random.default_rng(1), invalid_rate=0.2)
    rate = out.certified.mean()
    assert rate <= (1 - c) + 3 * math.sqrt((1 - c) * c / 6000)
    assert out.invalid_runs.sum() > 0
    # every certified cell spent exactly n valid runs; every detected one at most n
    assert np.all(out.valid_runs[out.certified] == n) and np.all(out.valid_runs[out.detected] <= n)


def test_counting_invalid_runs_as_clean_would_break_the_guarantee() -> None:
    """The attack the rule stops, made concrete: a rule that counts an invalid run as a clean one
    certifies far more cells at p = P than 1 - C once runs break often."""
    p, c = 0.1, 0.9
    n = zero_damage_count(p, c)
    rng = np.random.default_rng(2)
    naive = 0
    for _ in range(3000):
        counts = CellCounts()
        while decide(counts, n) == "continue":
            if rng.random() < 0.5:
                counts = counts.add("clean")  # a broken run taken as safe
            else:
                counts = counts.add("damaging" if rng.random() < p else "clean")
        naive += decide(counts, n) == "certified"
    assert naive / 3000 > 2 * (1 - c)
    honest = sequential_audit(np.full(3000, p), n, rng, invalid_rate=0.5).certified.mean()
    assert honest <= (1 - c) + 3 * math.sqrt((1 - c) * c / 3000)


def test_fast_audit_is_the_shipped_rule() -> None:
    rates = np.random.default_rng(3).beta(0.3, 3.0, size=3000)
    n = zero_damage_count(0.05, 0.9)
    slow = sequential_audit(rates, n, np.random.default_rng(4))
    fast = fast_audit(rates, n, np.random.default_rng(5))
    assert slow.certified.mean() == pytest.approx(fast.certified.mean(), abs=0.035)
    assert slow.valid_runs.mean() == pytest.approx(fast.valid_runs.mean(), rel=0.05)


def test_runs_saved_on_the_published_mixture(published: pd.DataFrame) -> None:
    """Expected saving E[min(G, K)] / K in closed form (-expm1(K log1p(-p)) / p) against the simulation,
    and the issue's 30% target: reached at P = 0.002 (C = 0.95) on the fitted mixture, not at 0.01."""
    rng = np.random.default_rng(6)
    rates = published_mixture(published["x"].to_numpy(), published["n"].to_numpy(), 40_000, rng, "fitted")
    for p, lo, hi in ((0.01, 0.2, 0.3), (0.002, 0.3, 0.4)):
        k = zero_damage_count(p, 0.95)
        saved = runs_saved(fast_audit(rates, k, rng), k)
        exact = 1 - float(np.mean(-np.expm1(k * np.log1p(-rates)) / rates)) / k
        assert saved == pytest.approx(exact, abs=0.01)
        assert lo < saved < hi
    plug = published_mixture(published["x"].to_numpy(), published["n"].to_numpy(), 40_000, rng, "plug-in")
    # 160 of the 180 published cells saw no damage: at p = 0 nothing is saved, so ~11% at most
    assert runs_saved(fast_audit(plug, 299, rng), 299) < 0.15


def test_the_bound_no_rule_beats_in_closed_form_and_by_simulation(published: pd.DataFrame) -> None:
    """E[min(G, n)] for p ~ Beta(a, b) (sum of Beta-function ratios) against a simulation, and the shipped
    rule's spend against it: detect-or-certify attains the bound, so on the published mixture no rule
    deciding every cell with the same guarantee saves 30% at P = 0.01."""
    from agentrel.analysis.betabinom import fit_beta_binomial
    from agentrel.analysis.decisions.audit_sim import best_saving, beta_fewest_runs, fewest_runs

    rng = np.random.default_rng(8)
    a, b, n = 0.4, 3.0, 50
    p = rng.beta(a, b, size=200_000)
    sim = np.minimum(rng.geometric(p), n).mean()
    assert beta_fewest_runs(a, b, n) == pytest.approx(sim, rel=0.01)
    assert fewest_runs(np.array([0.0, 0.5, 1.0]), 4).tolist() == [4.0, 1.875, 1.0]  # 1+.5+.25+.125
    fit = fit_beta_binomial(published["x"].to_numpy(), published["n"].to_numpy())
    k = zero_damage_count(0.01, 0.95)
    rates = rng.beta(fit.a, fit.b, size=40_000)
    out = fast_audit(rates, k, rng)
    assert (out.valid_runs == np.minimum(out.valid_runs, k)).all()
    se = out.valid_runs.std() / math.sqrt(rates.size) / k
    bound = best_saving(fit.a, fit.b, k)
    assert abs(runs_saved(out, k) - bound) < 4 * se  # the rule attains the bound
    assert 0.2 < bound < 0.3  # so 30% at P = 0.01 is out of reach for any valid rule on this mixture
    # One clean run fewer than n(P, C) would certify p = P too often: the certified count cannot shrink.
    assert (1 - 0.01) ** (k - 1) > 1 - 0.95 >= (1 - 0.01) ** k
