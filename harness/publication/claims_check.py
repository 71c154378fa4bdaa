"""Preregistered claims at publication: checked against the freeze, then judged by the frozen criterion.

A claims.json that is not the one the freeze bound (`claims_altered`), or one in a directory frozen
without claims (`claims_unfrozen`), keeps the directory from publishing: a preregistration edited after
the runs is no preregistration. The claims the freeze bound are judged on the runs the proof admitted
(analysis.claims_judge; a comparison claim on the decisive runs paired by seed, claims_versus.py), with
the policy's bootstrap size and seed, and carried by the scorecard, each `confirmed`, `demoted` or
`inconclusive` with the interval that decided it. What the scorecard shows beyond them is exploratory.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agentrel.harness.protocol.claims import claims_problem, frozen_claims
from agentrel.harness.protocol.freeze import Freeze
from agentrel.harness.protocol.policy import Policy
from agentrel.harness.publication.evidence import RecordFacts
from agentrel.harness.publication.matrix_check import decide

if TYPE_CHECKING:  # the judging below needs analysis's estimators; the check above does not import them
    from agentrel.analysis.claims import ClaimResult, ClaimsFile
    from agentrel.analysis.normalized import LoadedInput
    from agentrel.harness.publication.compare_stats import PairedRun

__all__ = ["claims_reasons", "judged_claims", "paired_runs"]


def claims_reasons(results: Path, freeze: Freeze | None) -> Counter[str]:
    """`claims_altered` / `claims_unfrozen` when claims.json is not what the freeze bound."""
    why = claims_problem(results, freeze.claims_hash if freeze is not None else None)
    return Counter({why: 1} if why else {})


def paired_runs(records: Sequence[RecordFacts]) -> dict[str, list[PairedRun]]:
    """Each agent's decisive valid runs as a comparison pairs them."""
    from agentrel.harness.publication.compare_stats import PairedRun

    by_run: dict[str, list[RecordFacts]] = {}
    for rec in records:
        by_run.setdefault(rec.run_id, []).append(rec)
    out: dict[str, list[PairedRun]] = {}
    for attempts in by_run.values():
        r = decide(attempts)
        if r.damaged is None or r.passed is None:
            continue
        out.setdefault(r.model, []).append(
            PairedRun(
                task=r.task,
                condition=r.condition,
                fault=r.fault,
                run_index=r.run_index,
                seed=r.seed,
                damaged=r.damaged,
                passed=r.passed,
            )
        )
    return out


def judged_claims(
    results: Path,
    freeze: Freeze | None,
    loaded: LoadedInput,
    policy: Policy,
    records: Sequence[RecordFacts],
) -> tuple[ClaimsFile, tuple[ClaimResult, ...]] | None:
    """The frozen claims and each judged on the admitted runs; None when the freeze bound no claims."""
    claims = frozen_claims(results, freeze.claims_hash if freeze is not None else None)
    if claims is None:
        return None
    from agentrel.analysis.claims_judge import judge_claims
    from agentrel.harness.publication.claims_versus import judge_versus

    s = policy.scoring
    judged = judge_claims(claims, loaded, n_boot=s.axes_bootstrap, seed=s.axes_seed)
    if any(c.versus is not None for c in claims.claims):
        runs = paired_runs(records)
        judged = [
            judge_versus(c, claims.pools, runs, seed=s.axes_seed, n_boot=max(s.axes_bootstrap, 1))
            if c.versus is not None
            else r
            for c, r in zip(claims.claims, judged, strict=True)
        ]
    return claims, tuple(judged)
