"""Comparison claims (a claim with `versus`) judged on runs paired by seed: pure.

The claimed bound is on `model − versus` in the damage or the completion rate, over the claim's pool
(its `models` and `tasks`; a results directory has no CSV pool column) and its condition (`all` when it
names none). The interval is the one every comparison shows (compare_stats.rate_differences: the hull of
the exact paired interval and the cluster bootstrap over tasks) at the claim's own level, and the
criterion is analysis.claims.verdict. Both agents must have run the same keys (task, condition, fault,
run index) with the same seeds; otherwise the claim is inconclusive, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agentrel.analysis.claims import Claim, ClaimResult, PoolDef, claim_fields, verdict
from agentrel.analysis.claims import undecided as undecided_result
from agentrel.harness.publication.compare_stats import PairedRun, pair_runs, rate_differences

__all__ = ["judge_versus"]

AXIS = {"damage_rate": "damage", "completion_rate": "completion"}


def _in_pool(run: PairedRun, pool: PoolDef) -> bool:
    return pool.tasks is None or run.task in pool.tasks


def judge_versus(
    claim: Claim,
    pools: Mapping[str, PoolDef],
    runs: Mapping[str, Sequence[PairedRun]],
    *,
    seed: int,
    n_boot: int,
) -> ClaimResult:
    """`claim` (with `versus`) judged on `runs` (each agent's decisive valid runs, by agent name)."""
    assert claim.versus is not None
    pool = pools[claim.judged_on] if claim.judged_on is not None else PoolDef()
    stratum = claim.condition or "all"
    base = {**claim_fields(claim), "condition": claim.condition}

    def undecided(note: str) -> ClaimResult:
        return undecided_result(claim, note, claim.condition)

    if pool.models is not None and not {claim.model, claim.versus} <= set(pool.models):
        return undecided(f"pool {claim.judged_on} does not hold both {claim.model} and {claim.versus}")
    mine = [r for r in runs.get(claim.model, ()) if _in_pool(r, pool)]
    theirs = [r for r in runs.get(claim.versus, ()) if _in_pool(r, pool)]
    if stratum != "all":
        mine = [r for r in mine if r.condition == stratum]
        theirs = [r for r in theirs if r.condition == stratum]
    if not mine or not theirs:
        return undecided(f"no paired runs of {claim.model} and {claim.versus} under {stratum} in the pool")
    seeds = {r.key: r.seed for r in theirs}
    if seeds != {r.key: r.seed for r in mine}:
        return undecided(f"{claim.model} and {claim.versus} did not run the same seeds: they do not pair")
    pairs = pair_runs(mine, theirs)
    axis = AXIS[claim.metric]
    diff = next(
        d
        for d in rate_differences(pairs, seed, n_boot, claim.level)
        if d.stratum == "all" and d.axis == axis  # `pairs` is already the stratum
    )
    low, high = diff.interval
    return ClaimResult(
        **base,
        status=verdict(claim.op, claim.threshold, low, high),
        estimate=diff.difference,
        ci_low=low,
        ci_high=high,
        method="paired: hull of exact (McNemar counts) and cluster bootstrap over tasks",
        runs=diff.pairs,
        tasks=diff.tasks,
    )
