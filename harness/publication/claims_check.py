"""Preregistered claims at publication: checked against the freeze, then judged by the frozen criterion.

A claims.json that is not the one the freeze bound (`claims_altered`), or one in a directory frozen
without claims (`claims_unfrozen`), keeps the directory from publishing: a preregistration edited after
the runs is no preregistration. The claims the freeze bound are judged on the runs the proof admitted
(analysis.claims_judge, the policy's bootstrap size and seed) and carried by the scorecard, each
`confirmed`, `demoted` or `inconclusive` with the interval that decided it. What the scorecard shows
beyond them is exploratory.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from agentrel.analysis.claims import ClaimResult
from agentrel.analysis.claims_judge import judge_claims
from agentrel.analysis.normalized import LoadedInput
from agentrel.harness.protocol.claims import claims_problem, frozen_claims
from agentrel.harness.protocol.freeze import Freeze
from agentrel.harness.protocol.policy import Policy

__all__ = ["claims_reasons", "judged_claims"]


def claims_reasons(results: Path, freeze: Freeze | None) -> Counter[str]:
    """`claims_altered` / `claims_unfrozen` when claims.json is not what the freeze bound."""
    why = claims_problem(results, freeze.claims_hash if freeze is not None else None)
    return Counter({why: 1} if why else {})


def judged_claims(
    results: Path, freeze: Freeze | None, loaded: LoadedInput, policy: Policy
) -> tuple[ClaimResult, ...] | None:
    """The frozen claims judged on the admitted runs; None when the freeze bound no claims."""
    claims = frozen_claims(results, freeze.claims_hash if freeze is not None else None)
    if claims is None:
        return None
    s = policy.scoring
    return tuple(judge_claims(claims, loaded, n_boot=s.axes_bootstrap, seed=s.axes_seed))
