"""Preregistered claims (issue 34, item 1): the frozen criterion's known answers, the file's own rules,
and seed 002's findings on arb_outcomes.csv, made on the development pool and judged on the held-out one."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from agentrel.analysis.claims import ClaimsFile, verdict
from agentrel.analysis.claims_judge import csv_row_pools, judge_claims, summarize
from agentrel.analysis.inputs import load_input
from agentrel.harness.yamlfile import load_model

ROOT = Path(__file__).resolve().parents[2]
SEED_002 = ROOT / "examples" / "claims" / "arb-seed-002.yaml"


@pytest.mark.parametrize(
    ("op", "low", "high", "status"),
    [
        (">=", 0.5, 0.9, "confirmed"),  # the interval's low end is on the threshold: shown
        (">=", 0.2, 0.49, "demoted"),  # wholly below
        (">=", 0.2, 0.5, "inconclusive"),  # touches it from below: not refuted
        (">=", 0.4, 0.6, "inconclusive"),
        ("<=", 0.1, 0.5, "confirmed"),
        ("<=", 0.51, 0.9, "demoted"),
        ("<=", 0.4, 0.6, "inconclusive"),
        (">=", None, 0.6, "inconclusive"),  # undefined: never confirmed
        ("<=", float("nan"), 0.1, "inconclusive"),
    ],
)
def test_the_frozen_criterion(op, low, high, status):
    assert verdict(op, 0.5, low, high) == status


def claim(**over):
    return {"id": "c", "statement": "s", "metric": "damage_rate", "op": "<=", "threshold": 0.1, **over}


def test_a_claim_judged_on_the_pool_it_was_made_on_is_refused():
    """The attack: confirming a finding on the very data that suggested it."""
    pools = {"dev": {"models": ["a"]}}
    with pytest.raises(ValidationError, match="held-out pool"):
        ClaimsFile(pools=pools, claims=[claim(made_on="dev", judged_on="dev")])
    with pytest.raises(ValidationError, match="judged_on names pool 'heldout'"):
        ClaimsFile(pools=pools, claims=[claim(judged_on="heldout")])
    with pytest.raises(ValidationError, match="unique"):
        ClaimsFile(claims=[claim(), claim()])
    with pytest.raises(ValidationError):
        ClaimsFile(claims=[claim(metric="accuracy")])
    with pytest.raises(ValidationError):
        ClaimsFile(claims=[])


def test_seed_002_s_findings_on_the_held_out_pool(arb_csv):
    """Made on the development models, three of seed 002's four findings are confirmed there; on the
    held-out models only the clustering of damage by task survives: the miss rates' and the damage rate's
    intervals straddle their thresholds (inconclusive, not refuted)."""
    claims = load_model(ClaimsFile, SEED_002)
    loaded = load_input(arb_csv)
    pools = csv_row_pools(arb_csv)
    held = {r.id: r for r in judge_claims(claims, loaded, row_pools=pools, n_boot=2000, seed=0)}
    assert {k: r.status for k, r in held.items()} == {
        "single-run-misses": "inconclusive",
        "single-run-misses-events": "inconclusive",
        "damage-clusters-by-task": "confirmed",
        "damage-is-rare": "inconclusive",
    }
    icc = held["damage-clusters-by-task"]
    assert icc.runs == 656 and icc.tasks == 20 and icc.judged_on == "heldout" and icc.made_on == "development"
    assert icc.ci_low is not None and icc.ci_low >= 0.02 and icc.estimate == pytest.approx(0.425, abs=5e-4)
    rare = held["damage-is-rare"]
    assert rare.estimate == pytest.approx(42 / 656) and rare.ci_low < 0.1 < rare.ci_high  # 42 damaging runs
    # The same claims judged where they were made: the development pool confirms every one of them,
    # which is why a finding is judged on data it was not read from.
    on_dev = claims.model_copy(
        update={
            "claims": tuple(
                c.model_copy(update={"judged_on": "development", "made_on": None}) for c in claims.claims
            )
        }
    )
    dev = judge_claims(on_dev, loaded, row_pools=pools, n_boot=2000, seed=0)
    assert summarize(dev) == {"confirmed": 4, "demoted": 0, "inconclusive": 0}
    assert summarize(list(held.values())) == {"confirmed": 1, "demoted": 0, "inconclusive": 3}


def test_a_claim_is_demoted_when_its_pool_refutes_it(arb_csv):
    """The frontier models damage rarely: a claim that they damage at least 10% of runs is demoted, and a
    claim on an agent the pool does not hold is inconclusive, with the reason."""
    cf = ClaimsFile(
        pools={"frontier": {"csv_pool": "frontier"}, "opus": {"models": ["opus-4.6"]}},
        claims=[
            claim(id="frontier-damages", op=">=", threshold=0.10, judged_on="frontier"),
            claim(id="nobody", model="gpt-2", judged_on="opus"),
        ],
    )
    out = judge_claims(cf, load_input(arb_csv), row_pools=csv_row_pools(arb_csv), n_boot=500)
    assert [r.status for r in out] == ["demoted", "inconclusive"]
    assert out[0].ci_high is not None and out[0].ci_high < 0.10 and out[0].runs == 432
    assert out[1].note is not None and "no valid run of gpt-2" in out[1].note
