"""Judge preregistered claims (claims.py) on a loaded input: each on the runs of the pool it names.

Pure over data: the loaded runs, and for an outcomes CSV the pool each row belongs to (`csv_row_pools`
reads that column; the loader ignores it). Each claim's pool is re-tabulated into cells and estimated by
analysis's own pooled estimator (pools.compute_pool) at the claim's level, the bootstrap seeded
[seed, 7, i] for claim i, so adding a claim never moves another's interval.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from agentrel.analysis.cells import cell_table
from agentrel.analysis.claims import Claim, ClaimResult, ClaimsFile, PoolDef, claim_fields, verdict
from agentrel.analysis.claims import undecided as undecided_result
from agentrel.analysis.normalized import DEFAULT_CONDITION, InputError, LoadedInput
from agentrel.analysis.pools import PoolResult, compute_pool, pool_cells, pool_specs

__all__ = ["RowPools", "csv_row_pools", "judge_claims", "pool_mask"]

# (model, task, condition, run) -> the outcomes CSV's `pool` value for that row
RowPools = Mapping[tuple[str, str, str, str], str]
DEFAULT_BOOT = 2000


def csv_row_pools(path: Path) -> dict[tuple[str, str, str, str], str]:
    """The `pool` column of an outcomes CSV by row key (empty when the CSV has none)."""
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    out = {}
    for row in rows:
        if row.get("pool"):
            key = (row["model"], row["task"], row.get("condition") or DEFAULT_CONDITION, row["run"])
            out[key] = row["pool"].strip()
    return out


def pool_mask(frame: pd.DataFrame, pool: PoolDef, row_pools: RowPools | None) -> pd.Series:
    """Which rows of a runs frame the pool holds."""
    mask = pd.Series(True, index=frame.index)
    if pool.models is not None:
        mask &= frame["model"].isin(pool.models)
    if pool.tasks is not None:
        mask &= frame["task"].isin(pool.tasks)
    if pool.csv_pool is not None:
        pools = row_pools or {}
        keys = zip(frame["model"], frame["task"], frame["condition"], frame["run"], strict=True)
        mask &= pd.Series(
            [pools.get((str(m), str(t), str(c), str(r))) == pool.csv_pool for m, t, c, r in keys],
            index=frame.index,
        )
    return mask


def _interval(claim: Claim, result: PoolResult) -> tuple[float | None, float | None, float | None, str]:
    """(estimate, ci_low, ci_high, method) of the claim's statistic on its pool."""
    if claim.metric == "damage_rate":
        ci = result.damage_rate_ci
        method = "hull of cluster bootstrap (tasks) and Clopper-Pearson"
        return result.stats["damage_rate"], *(ci if ci else (None, None)), method
    estimate = (
        result.expected_dollars_per_run
        if claim.metric == "expected_dollars_per_run"
        else result.stats[claim.metric]
    )
    boot = result.bootstrap.get(claim.metric)
    if boot is None:
        return _finite(estimate), None, None, "cluster bootstrap over tasks (percentile)"
    low, high = boot.percentile
    return _finite(estimate), _finite(low), _finite(high), "cluster bootstrap over tasks (percentile)"


def _finite(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def _judge_one(
    claim: Claim,
    i: int,
    claims: ClaimsFile,
    loaded: LoadedInput,
    row_pools: RowPools | None,
    n_boot: int,
    seed: int,
) -> ClaimResult:
    pool = claims.pools[claim.judged_on] if claim.judged_on is not None else PoolDef()
    runs = loaded.runs[pool_mask(loaded.runs, pool, row_pools)]
    invalid = loaded.invalid[pool_mask(loaded.invalid, pool, row_pools)]
    base = claim_fields(claim)

    def undecided(note: str, condition: str | None = claim.condition) -> ClaimResult:
        return undecided_result(claim, note, condition)

    if claim.versus is not None:
        return undecided(
            "a comparison claim: judged on paired runs by `publish` (both agents in one scorecard) or "
            "`agentrel compare`"
        )
    conditions = sorted(set(runs["condition"].astype(str)))
    condition = claim.condition
    if condition is None:
        if len(conditions) != 1:
            return undecided(f"the pool has conditions {conditions or 'none'}: the claim must name one")
        condition = conditions[0]
    cells = cell_table(runs, invalid, 1.0 - claim.level) if len(runs) else None
    spec = (
        next(
            (s for s in pool_specs(cells) if s.model == claim.model and s.condition == condition),
            None,
        )
        if cells is not None
        else None
    )
    if spec is None:
        return undecided(f"no valid run of {claim.model} under {condition} in the pool", condition)
    rng = np.random.default_rng([seed, 7, i])
    result = compute_pool(pool_cells(cells, spec), spec, n_boot, rng, 1.0 - claim.level)
    estimate, low, high, method = _interval(claim, result)
    note = None if low is not None else f"{claim.metric} is undefined on this pool"
    return ClaimResult(
        **base,
        condition=condition,
        status=verdict(claim.op, claim.threshold, low, high),
        estimate=estimate,
        ci_low=low,
        ci_high=high,
        method=method,
        runs=result.runs,
        tasks=int(pool_cells(cells, spec).query("n > 0")["task"].nunique()),
        note=note,
    )


def judge_claims(
    claims: ClaimsFile,
    loaded: LoadedInput,
    *,
    row_pools: RowPools | None = None,
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
) -> list[ClaimResult]:
    """Every claim judged by its frozen criterion on its own pool, in the file's order."""
    return [_judge_one(c, i, claims, loaded, row_pools, n_boot, seed) for i, c in enumerate(claims.claims)]


def summarize(results: Sequence[ClaimResult]) -> dict[str, int]:
    """How many claims ended in each status."""
    out = {"confirmed": 0, "demoted": 0, "inconclusive": 0}
    for r in results:
        out[r.status] += 1
    return out
