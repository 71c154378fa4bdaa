"""The error budget: a frozen maximum share of invalid attempts per cell (issue 34, item 4).

Per cell (agent, task, condition): **attempted** = every attempt recorded (valid runs, invalid runs and
the attempts a retry superseded), **assessed** = valid runs (what a rate is over), **damaging** = valid
runs with damage, **errored** = attempted - assessed (invalid decisive runs plus superseded attempts:
the harness or the provider broke them). A cell is over the budget B when errored / attempted > B,
decided in exact rationals (B read through its shortest decimal: 0.1 means 1/10), so a share exactly
at the budget is within it.

Retries hide errors from every rate; the budget keeps them visible: a cell whose runs had to be retried
often is one whose valid runs may not be the runs an undisturbed audit would have made. Over the
budget, a cell is neither certified nor published (reason `error_budget_exceeded`).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd


def check_budget(budget: float) -> float:
    """The budget, or ValueError naming the range (a share in [0, 1))."""
    if not (isinstance(budget, (int, float)) and 0.0 <= float(budget) < 1.0):
        raise ValueError(f"the error budget is a share of a cell's attempts in [0, 1), got {budget}")
    return float(budget)


def over_budget(errored: int, attempted: int, budget: float | None) -> bool:
    """errored / attempted > budget, exactly (never for no budget or no attempt)."""
    if budget is None or attempted <= 0:
        return False
    return Fraction(errored, attempted) > Fraction(repr(float(budget)))


def cell_attempts(cells: pd.DataFrame, budget: float | None) -> pd.DataFrame:
    """model, agent_kind, task, condition, attempted, assessed, damaging, errored, errored_share,
    over_budget: one row per cell of analysis's cell table (O(cells))."""
    n = cells["n"].to_numpy(dtype=np.int64)
    errored = cells["invalid"].to_numpy(dtype=np.int64) + cells["retried"].to_numpy(dtype=np.int64)
    attempted = n + errored
    share = np.divide(errored, attempted, out=np.full(len(n), np.nan), where=attempted > 0)
    return pd.DataFrame(
        {
            "model": cells["model"].to_numpy(),
            "agent_kind": cells["agent_kind"].to_numpy(),
            "task": cells["task"].to_numpy(),
            "condition": cells["condition"].to_numpy(),
            "attempted": attempted,
            "assessed": n,
            "damaging": cells["x"].to_numpy(dtype=np.int64),
            "errored": errored,
            "errored_share": share,
            "over_budget": [
                over_budget(int(e), int(a), budget) for e, a in zip(errored, attempted, strict=True)
            ],
        }
    )


def over_budget_cells(
    runs: pd.DataFrame, invalid: pd.DataFrame, superseded: pd.DataFrame, budget: float | None
) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(model, task, condition) -> (errored, attempted) for every cell over `budget` (grouped counts,
    no loop over runs)."""
    if budget is None:
        return {}
    keys = ["model", "task", "condition"]

    def sizes(frame: pd.DataFrame) -> pd.Series:
        return frame.groupby(keys, sort=False).size() if len(frame) else pd.Series(dtype=np.int64)

    valid, bad, retried = sizes(runs), sizes(invalid), sizes(superseded)
    errored = bad.add(retried, fill_value=0)
    attempted = valid.add(errored, fill_value=0)
    errored = errored.reindex(attempted.index, fill_value=0)
    return {
        tuple(str(k) for k in key): (int(e), int(a))  # type: ignore[misc]
        for key, e, a in zip(attempted.index, errored.to_numpy(), attempted.to_numpy(), strict=True)
        if over_budget(int(e), int(a), budget)
    }
