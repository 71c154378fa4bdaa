"""The frozen error budget at publication: a cell (agent, task, condition, fault) whose share of errored
attempts is over the manifest's `error_budget` is not published (reason `error_budget_exceeded`).

Errored attempts are those the harness or the provider broke: every attempt whose status is neither
measured (policy) nor `not_exposed` (a run that never met its fault is not an error, and has its own
reason). Superseded attempts count: a retry hides an error from every rate, never from the budget. The
test itself is analysis.error_budget.over_budget (exact rationals), shared with the report and `certify`.
A budget the manifest holds in an unreadable form refuses publication (`error_budget_unreadable`).

Only a manifest with a budget pays for this check: one pass over the attempts, O(runs); and only it
imports analysis's test (with the tables it needs), which `analyze`'s status check otherwise never loads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentrel.harness.results.status import NOT_EXPOSED

if TYPE_CHECKING:
    from agentrel.harness.publication.matrix_check import MatrixCheck

BudgetCell = tuple[str, str, str, str | None]  # model, task, condition, fault


def read_budget(manifest: Mapping[str, Any]) -> tuple[float | None, bool]:
    """(the budget or None, whether the manifest's entry is readable)."""
    raw = manifest.get("error_budget")
    if raw is None:
        return None, True
    if isinstance(raw, bool):
        return None, False
    from agentrel.analysis.error_budget import check_budget

    try:
        return check_budget(raw), True
    except ValueError:
        return None, False


def check_error_budget(out: MatrixCheck, manifest: Mapping[str, Any], measured: set[str]) -> None:
    budget, readable = read_budget(manifest)
    if not readable:
        out.reasons["error_budget_unreadable"] += 1
        return
    if budget is None:
        return
    from agentrel.analysis.error_budget import over_budget

    attempted: Counter[BudgetCell] = Counter()
    errored: Counter[BudgetCell] = Counter()
    for attempts in out.attempts.values():
        for rec in attempts:
            cell = (rec.model, rec.task, rec.condition, rec.fault)
            attempted[cell] += 1
            if rec.status not in measured and rec.status != NOT_EXPOSED:
                errored[cell] += 1
    over = sorted(
        (c for c, n in attempted.items() if over_budget(errored[c], n, budget)),
        key=lambda c: (c[0], c[1], c[2], c[3] or ""),
    )
    out.over_budget = [(*cell, errored[cell], attempted[cell]) for cell in over]
    if over:
        out.reasons["error_budget_exceeded"] += len(over)
