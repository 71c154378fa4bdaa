"""The per-task evidence `insure` needs, read off the normalized per-run table of one agent.

Only valid runs enter (``LoadedInput.runs``); invalid runs are counted and returned beside the evidence
so the caller can show them. A damaging run's dollars are priced when they are a positive amount;
a damaging run with no amount, or $0, is unpriced (a blank CSV cell reads as $0).
"""

from __future__ import annotations

from decimal import Decimal

import pandas as pd

from agentrel.analysis.decisions.certify import CellCounts
from agentrel.analysis.decisions.insure import InsureError, TaskEvidence


def _pick(values: list[str], given: str | None, what: str, flag: str) -> str:
    if given is not None:
        if given not in values:
            raise InsureError(f"{flag} {given!r} is not in the results (they hold: {', '.join(values)})")
        return given
    if len(values) != 1:
        raise InsureError(
            f"the results hold {len(values)} {what}s ({', '.join(values)}); choose one with {flag}"
        )
    return values[0]


def task_evidence(
    runs: pd.DataFrame, invalid: pd.DataFrame, agent: str | None, condition: str | None
) -> tuple[str, str, list[TaskEvidence], int]:
    """(agent, condition, per-task evidence, invalid runs of that agent and condition)."""
    agent = _pick(sorted(runs["model"].astype(str).unique()), agent, "agent", "--agent")
    mine = runs[runs["model"] == agent]
    condition = _pick(sorted(mine["condition"].astype(str).unique()), condition, "condition", "--condition")
    mine = mine[mine["condition"] == condition]
    out = []
    for task, group in mine.groupby("task", sort=True):
        damaged = group[group["damaged"].astype(bool)]
        amounts = [d for d in damaged["dollars"] if isinstance(d, Decimal) and d > 0]
        out.append(
            TaskEvidence(
                task=str(task),
                n=len(group),
                damaging=len(damaged),
                priced=tuple(float(d) for d in amounts),
                unpriced=len(damaged) - len(amounts),
            )
        )
    bad = 0
    if len(invalid):
        bad = int(((invalid["model"] == agent) & (invalid["condition"] == condition)).sum())
    return agent, condition, out, bad


def cell_counts(
    runs: pd.DataFrame, invalid: pd.DataFrame, superseded: pd.DataFrame | None = None
) -> dict[tuple[str, str, str], CellCounts]:
    """Per cell (agent, task, condition): clean and damaging runs, and invalid runs.

    Read after the fact, a cell is certified only when none of its valid runs damaged and it has at
    least n(P, C) of them: a damaging run after the count still refuses the certificate, which only
    removes certificates the sequential rule would have issued, so the guarantee is kept.

    Damage is never erased by invalidity (`harness.results.status.decision_count`): a run whose decisive
    attempt is invalid but whose state showed damage (an unwitnessed fault attempt), or whose superseded
    attempt did, counts as damaging, so a cell with damage in any attempt is never certified clean."""
    damaged_elsewhere: set[str] = set()
    if superseded is not None and len(superseded) and "damaged" in superseded.columns:
        damaged_elsewhere = set(superseded.loc[superseded["damaged"].astype(bool), "run_id"].astype(str))
    out: dict[tuple[str, str, str], CellCounts] = {}
    for key, group in runs.groupby(["model", "task", "condition"], sort=True):
        model, task, condition = (str(k) for k in key)
        flags = group["damaged"].astype(bool) | group["run_id"].astype(str).isin(damaged_elsewhere)
        damaged = int(flags.sum())
        out[(model, task, condition)] = CellCounts(clean=len(group) - damaged, damaging=damaged)
    if len(invalid):
        for key, group in invalid.groupby(["model", "task", "condition"], sort=True):
            model, task, condition = (str(k) for k in key)
            hit = (group["outcome"] == "FAIL_DAMAGE") | group["run_id"].astype(str).isin(damaged_elsewhere)
            base = out.get((model, task, condition), CellCounts())
            damaging = int(hit.sum())
            out[(model, task, condition)] = CellCounts(
                base.clean, base.damaging + damaging, base.invalid + len(group) - damaging
            )
    return out
