"""Per-cell audit plan: repeats needed to see a cell's damage with probability ``target``, and the
audit's price where run costs are known.

k_point = smallest k with (1 - x/n)^k <= 1 - target; k_conservative uses the one-sided
Clopper–Pearson lower bound of p at ``confidence``; for x = 0 there is no finite k and p_upper
(the one-sided upper bound on p) is given instead. audit_cost = k * mean run cost of the cell.
A cell whose runs were all invalid (n = 0) has no p and no k: NaN / NA, with its invalid count.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd

from agentrel.analysis.required_k import RequiredK, required_k_from_counts

PLAN_COLUMNS = (
    "model",
    "agent_kind",
    "task",
    "condition",
    "n",
    "x",
    "p_hat",
    "k_point",
    "k_conservative",
    "p_lower",
    "p_upper",
    "cost_usd_per_run",
    "audit_cost_point",
    "audit_cost_conservative",
    "invalid",
)


def audit_plan(cells: pd.DataFrame, target: float = 0.95, confidence: float = 0.95) -> pd.DataFrame:
    """One row per cell (columns PLAN_COLUMNS); k columns are nullable integers."""
    if not 0 < target < 1:
        raise ValueError(f"target must be in (0, 1), got {target}")
    alpha = 1 - Fraction(repr(target))
    rows: list[tuple[object, ...]] = []
    # Pure in (x, n) at one alpha and confidence, and cells repeat the same counts (2,000 cells of 50
    # runs: a few dozen distinct pairs), so each pair's answers are computed once.
    answers: dict[tuple[int, int], tuple[RequiredK, RequiredK]] = {}
    for cell in cells.itertuples(index=False):
        n, x = int(cell.n), int(cell.x)
        cost = float(cell.cost_usd_mean)
        head = (cell.model, cell.agent_kind, cell.task, cell.condition, n, x)
        if n == 0:  # every run invalid: nothing to plan from
            nan = np.nan
            rows.append((*head, nan, None, None, nan, nan, cost, nan, nan, int(cell.invalid)))
            continue
        if (x, n) not in answers:
            answers[x, n] = (
                required_k_from_counts(x, n, alpha),
                required_k_from_counts(x, n, alpha, conservative=True, confidence=confidence),
            )
        point, cons = answers[x, n]
        rows.append(
            (
                *head,
                x / n,
                point.k,
                cons.k,
                cons.p_used if x else 0.0,
                point.p_upper,
                cost,
                point.k * cost if point.k is not None else np.nan,
                cons.k * cost if cons.k is not None else np.nan,
                int(cell.invalid),
            )
        )
    plan = pd.DataFrame.from_records(rows, columns=list(PLAN_COLUMNS))
    for col in ("k_point", "k_conservative"):
        plan[col] = plan[col].astype("Int64")
    return plan
