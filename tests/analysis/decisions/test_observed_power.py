"""The power a paired comparison had for the difference it observed (`observed_power`): checked against
a simulation of the asymptotic McNemar test as statsmodels computes it, its edges, and the report."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar

from agentrel.analysis.decisions.power import mcnemar_pairs, mcnemar_power, observed_power
from agentrel.analysis.inputs import load_input
from agentrel.analysis.pipeline import analyze
from agentrel.analysis.report_doc import build_document
from agentrel.analysis.report_paired import power_lines
from tests.analysis.conftest import record, write_results


def test_power_by_simulating_the_statsmodels_test() -> None:
    """200 pairs, 30 where only A damaged, 10 where only B: studies drawn at those shares are rejected
    by statsmodels' McNemar chi-square (no continuity correction) at the rate the power states."""
    pairs, a_only, b_only = 200, 30, 10
    power = observed_power(pairs, a_only, b_only)
    assert power is not None and 0.85 < power < 0.93
    rng = np.random.default_rng(7)
    shares = [a_only / pairs, b_only / pairs, 1 - (a_only + b_only) / pairs]
    draws = rng.multinomial(pairs, shares, size=3000)
    rejected = [mcnemar([[0, b], [c, 0]], exact=False, correction=False).pvalue < 0.05 for b, c, _ in draws]
    sim = float(np.mean(rejected))
    assert abs(sim - power) < 3 * np.sqrt(power * (1 - power) / len(draws)) + 0.01


def test_round_trip_with_the_sample_size() -> None:
    n = mcnemar_pairs(0.3, 0.1, power=0.8, discordant=0.3)
    assert mcnemar_power(n, 0.3, 0.1, discordant=0.3) >= 0.8 > mcnemar_power(n - 1, 0.3, 0.1, discordant=0.3)


def test_edges() -> None:
    assert observed_power(0, 0, 0) is None
    assert observed_power(50, 4, 4) is None  # no difference observed: no power to state
    assert observed_power(3, 3, 0) == 0.0  # all discordant one way, too few pairs: cannot reject
    assert observed_power(10, 10, 0) == 1.0  # every pair discordant one way and enough of them
    assert observed_power(1000, 20, 40) == observed_power(1000, 40, 20)  # two-sided


def test_the_report_and_the_cli_line_state_the_power(tmp_path) -> None:
    records = []
    for i in range(1, 21):
        records.append(record("A", "t1", i, "FAIL_DAMAGE" if i <= 8 else "PASS"))
        records.append(record("B", "t1", i, "FAIL_DAMAGE" if i <= 2 else "PASS"))
    result = analyze(load_input(write_results(tmp_path / "r", records)), n_boot=20, seed=0)
    expected = observed_power(20, 6, 0)
    assert expected is not None
    doc = build_document(result, {})
    section = next(s for s in doc.sections if s.title == "Paired differences")
    rows = [r for b in section.blocks if hasattr(b, "rows") for r in b.rows]
    assert any(r[2] == "all" and r[3] == "damage" and r[-1] == f"{expected:.0%}" for r in rows)
    (line,) = power_lines(result)
    assert line.startswith("A − B (clean): damage +30.0 pp over 20 paired runs")
    assert f"had {expected:.0%} power" in line


@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_power_falls_with_alpha(alpha: float) -> None:
    strict, loose = observed_power(100, 12, 4, alpha / 10), observed_power(100, 12, 4, alpha)
    assert strict is not None and loose is not None and strict < loose
