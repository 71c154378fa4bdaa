"""The cost of one run, read off earlier runs (`audit --budget-usd X --cost-from RESULTS`).

Per audited model, the mean recorded `cost_usd` over its recorded attempts in RESULTS (an invalid
attempt was paid for too, and the budget counts attempts). The audit's per-run cost is the highest of
those means, so the runs a budget buys cost at most the budget at the recorded means whichever model
they go to. A model with no recorded attempt, or an attempt whose cost is unknown (None: no price for
the model, or no usage reported), is refused with the fix named: an unknown cost is never $0.
"""

from __future__ import annotations

from pathlib import Path

from agentrel.harness.errors import UsageError, UserError
from agentrel.harness.results import layout
from agentrel.harness.results.directory import ResultsDir

__all__ = ["recorded_cost_per_run"]


def recorded_cost_per_run(results: Path, models: list[str]) -> float:
    """The highest per-model mean recorded cost of one attempt in `results` (see the module docstring)."""
    if not (results / layout.RUNS).is_file():
        raise UsageError(f"--cost-from {results}: no {layout.RUNS} there; pass a results directory with runs")
    try:
        attempts = [r for recs in ResultsDir(results).attempts().values() for r in recs]
    except UserError as exc:
        raise UsageError(f"--cost-from {results}: {exc}") from None
    means = []
    for model in models:
        mine = [r for r in attempts if r.model == model]
        if not mine:
            raise UsageError(
                f"--cost-from {results}: no recorded run of {model}, so its cost is unknown; "
                "declare it with --cost-per-run USD"
            )
        unknown = sum(r.cost_usd is None for r in mine)
        if unknown:
            raise UsageError(
                f"--cost-from {results}: {unknown} of {len(mine)} recorded runs of {model} have no cost "
                "(unknown, not $0); declare it with --cost-per-run USD"
            )
        means.append(sum(r.cost_usd or 0.0 for r in mine) / len(mine))
    return max(means)
