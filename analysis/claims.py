"""Preregistered claims: what a publication says it will show, written down before the measured runs.

A claims file (`agentrel protocol freeze --claims FILE`, bound into the freeze) names its pools and its
claims. A **pool** is a named subset of the runs: the agents it holds (`models`), the tasks (`tasks`),
and, for an outcomes CSV, the value of its `pool` column (`csv_pool`); every key given must match. A
**claim** is one bound on one pooled statistic (`metric`) of one agent or of `all` under one condition,
judged on the pool it names (`judged_on`); the pool it was found on (`made_on`, e.g. the development
pool) may be recorded and must then differ, so a finding is never confirmed on the data that suggested it.

The criterion, frozen with the claim: the two-sided interval at `level` (analysis's own interval for the
statistic: for the damage rate the hull of the cluster bootstrap and the exact Clopper–Pearson interval,
for the rest the cluster-bootstrap percentile interval over tasks). `confirmed` when the interval lies
wholly on the claimed side of `threshold`, `demoted` when it lies wholly on the other side, otherwise
`inconclusive` (the claim is neither shown nor refuted at this n), and `inconclusive` with a note when the
statistic is undefined on the pool (no run, or a miss rate with no damaging cell).

A **comparison claim** names a second agent (`versus`): it bounds the difference `model − versus` in the
damage rate or the completion rate over runs paired on their seeds, judged by the same criterion on the
comparison's interval (publication/compare_stats.py: the hull of the paired exact interval and the
cluster bootstrap over tasks). Only paired runs can judge it: `publish` does when one scorecard holds
both agents, `compare` when two scorecards do; analysis leaves it inconclusive and says so.

Pure: the model and the criterion; `claims_judge.py` applies it to a loaded input.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "CLAIMS_FORMAT",
    "METRICS",
    "VERSUS_METRICS",
    "Claim",
    "ClaimResult",
    "ClaimsFile",
    "PoolDef",
    "claim_fields",
    "undecided",
    "verdict",
]

CLAIMS_FORMAT = "agentrel-claims/1"
# The pooled statistics a claim may bound (analysis.pools: POOL_STATISTICS and expected dollars per run).
VERSUS_METRICS = ("damage_rate", "completion_rate")
METRICS = (
    "completion_rate",
    "damage_rate",
    "miss_rate_pair",
    "miss_rate_event",
    "icc_anova",
    "icc_fleiss_cuzick",
    "icc_kleinman",
    "expected_dollars_per_run",
)
NAME = r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,99}$"
Status = Literal["confirmed", "demoted", "inconclusive"]


class PoolDef(BaseModel):
    """A named subset of the runs: every key given must match (none given: every run)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    models: tuple[str, ...] | None = None
    tasks: tuple[str, ...] | None = None
    csv_pool: str | None = None  # an outcomes CSV's `pool` column


class Claim(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=NAME)
    statement: str = Field(min_length=1, max_length=500)
    metric: Literal[
        "damage_rate",
        "miss_rate_pair",
        "miss_rate_event",
        "icc_anova",
        "icc_fleiss_cuzick",
        "icc_kleinman",
        "expected_dollars_per_run",
        "completion_rate",
    ]
    model: str = "all"  # an agent's name, or "all" (analysis's pool of every model agent)
    condition: str | None = None  # None: the input's only condition
    op: Literal[">=", "<="]
    threshold: float
    level: float = Field(default=0.95, gt=0.5, lt=1.0)
    judged_on: str | None = None  # a pool of the file; None: every run
    made_on: str | None = None  # the pool the finding came from, for the record; never judged_on
    versus: str | None = None  # a comparison claim: the bound is on (model - versus), on paired runs

    @model_validator(mode="after")
    def _held_out(self) -> Claim:
        if not math.isfinite(self.threshold):
            raise ValueError(f"claim {self.id}: threshold must be a finite number")
        if self.versus is not None:
            if self.metric not in VERSUS_METRICS or "all" in (self.model, self.versus):
                raise ValueError(
                    f"claim {self.id}: a comparison claim (versus) bounds damage_rate or completion_rate "
                    "of one named agent minus another"
                )
            if self.versus == self.model:
                raise ValueError(f"claim {self.id}: versus names the claim's own agent")
        elif self.metric == "completion_rate":
            raise ValueError(f"claim {self.id}: completion_rate is bounded only in a comparison (versus)")
        if self.made_on is not None and self.made_on == self.judged_on:
            raise ValueError(
                f"claim {self.id}: judged_on is the pool it was made on ({self.made_on}); judge it on a "
                "held-out pool"
            )
        return self


class ClaimsFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["agentrel-claims/1"] = "agentrel-claims/1"
    pools: dict[str, PoolDef] = Field(default_factory=dict)
    claims: tuple[Claim, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _names(self) -> ClaimsFile:
        ids = [c.id for c in self.claims]
        if dupes := sorted({i for i in ids if ids.count(i) > 1}):
            raise ValueError(f"claim ids must be unique: {', '.join(dupes)}")
        for claim in self.claims:
            for role in ("judged_on", "made_on"):
                name = getattr(claim, role)
                if name is not None and name not in self.pools:
                    raise ValueError(
                        f"claim {claim.id}: {role} names pool {name!r}, which `pools` does not define "
                        f"(defined: {', '.join(sorted(self.pools)) or 'none'})"
                    )
        return self


class ClaimResult(BaseModel):
    """One claim as the frozen criterion judged it, with the interval that decided it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    statement: str
    metric: str
    model: str
    condition: str | None
    op: str
    threshold: float
    level: float
    judged_on: str | None
    made_on: str | None
    versus: str | None = None
    status: Status
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    method: str  # how the interval was made
    runs: int  # valid runs of the pool the claim was judged on
    tasks: int
    note: str | None = None


def verdict(op: str, threshold: float, ci_low: float | None, ci_high: float | None) -> Status:
    """The frozen criterion: confirmed when [ci_low, ci_high] lies wholly on the claimed side of the
    threshold (`>=`: ci_low >= threshold; `<=`: ci_high <= threshold), demoted when it lies wholly on the
    other side (strictly), inconclusive otherwise or when the interval is undefined."""
    if ci_low is None or ci_high is None or not (math.isfinite(ci_low) and math.isfinite(ci_high)):
        return "inconclusive"
    if op == ">=":
        if ci_low >= threshold:
            return "confirmed"
        return "demoted" if ci_high < threshold else "inconclusive"
    if ci_high <= threshold:
        return "confirmed"
    return "demoted" if ci_low > threshold else "inconclusive"


def claim_fields(claim: Claim) -> dict[str, Any]:
    """What a result repeats of its claim (its condition is the result's own: a claim may leave it to the
    pool)."""
    fields = {
        "id",
        "statement",
        "metric",
        "model",
        "op",
        "threshold",
        "level",
        "judged_on",
        "made_on",
        "versus",
    }
    return claim.model_dump(include=fields)


def undecided(claim: Claim, note: str, condition: str | None) -> ClaimResult:
    """`claim` left inconclusive, with why: no interval could judge it."""
    return ClaimResult(
        **claim_fields(claim),
        condition=condition,
        status="inconclusive",
        estimate=None,
        ci_low=None,
        ci_high=None,
        method="none",
        runs=0,
        tasks=0,
        note=note,
    )
