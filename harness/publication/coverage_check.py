"""The frozen fault-coverage floor at publication (analysis.fault_coverage): a fault stratum (condition,
fault kind, task: the proof's strata) whose witnessed share of its scheduled runs is below the manifest's
`fault_coverage_floor` is reported and not published (`fault_coverage_below_floor`, one per stratum); an
unreadable floor refuses publication (`fault_coverage_floor_unreadable`).

A stratum at or above a floor below 1 may hold unwitnessed runs: a run that ended before its trigger
(`not_exposed`) or whose fault did not land as claimed (`invalid_injection`). They are not measurements of
the fault, so they are never counted safe: the check names them (`MatrixCheck.waived`), the scorecard
leaves them out of every rate and lists them beside (`unwitnessed_runs`), and their own reasons
(`fault_unwitnessed`, `run_not_exposed`, `run_invalid:invalid_injection`) no longer hold the whole matrix
back. A damaging one is never waived (its verdict, which publication re-derived from the dumps, is
FAIL_DAMAGE): leaving it out of the rate would hide damage, so it still holds the matrix back, as does any
other failure (the harness, the provider, a missing run).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentrel.analysis.fault_coverage import below_floor, floor_for, read_floor
from agentrel.harness.publication.cells import NO_FAULT, Cell
from agentrel.harness.results.status import NOT_EXPOSED

if TYPE_CHECKING:
    from agentrel.harness.publication.matrix_check import MatrixCheck

__all__ = ["WAIVABLE", "check_coverage_floor"]

WAIVABLE = frozenset({NOT_EXPOSED, "invalid_injection"})  # the fault's own failures, not the run's


def check_coverage_floor(out: MatrixCheck, manifest: Mapping[str, Any]) -> None:
    """Gate each fault stratum on the floor; waive the unwitnessed runs of the strata that meet it.
    Without a frozen floor nothing changes: every fault run must be witnessed (`fault_unwitnessed`)."""
    if manifest.get("fault_coverage_floor") is None:
        return
    try:
        floor = read_floor(manifest.get("fault_coverage_floor"))
    except ValueError as exc:
        out.reasons["fault_coverage_floor_unreadable"] += 1
        out.coverage_problems.append(f"fault_coverage_floor: {exc}")
        return
    skipped = Counter(out.cells[c].stratum for c in out.stopping.unneeded)
    meeting: set[tuple[str, str, str]] = set()
    for stratum, counts in sorted(out.strata.items()):
        _, kind, _ = stratum
        if kind == NO_FAULT:
            continue
        share = floor_for(floor, kind)
        scheduled = counts.registered - skipped[stratum]
        if below_floor(counts.witnessed, scheduled, share):
            out.reasons["fault_coverage_below_floor"] += 1
            out.coverage_problems.append(
                f"{'/'.join(stratum)}: {counts.witnessed} of {scheduled} scheduled fault runs witnessed, "
                f"below the floor {share:g}"
            )
        elif share < 1.0:
            meeting.add(stratum)
    if not meeting:
        return
    waived: list[Cell] = []
    still: list[tuple[Cell, str]] = []
    for cell, why in out.unwitnessed:
        rec = out.decisive.get(cell)
        if (
            out.cells[cell].stratum in meeting
            and rec is not None
            and rec.status in WAIVABLE
            and rec.outcome != "FAIL_DAMAGE"
        ):
            waived.append(cell)
            _drop(out.reasons, "fault_unwitnessed")
            _drop(
                out.reasons, "run_not_exposed" if rec.status == NOT_EXPOSED else f"run_invalid:{rec.status}"
            )
        else:
            still.append((cell, why))
    out.unwitnessed = still
    out.waived = sorted(waived, key=lambda c: (c.model, c.task, c.condition, c.fault or "", c.run_index))
    out.invalid = [r for r in out.invalid if r.run_id not in {out.decisive[c].run_id for c in waived}]


def _drop(reasons: Counter[str], code: str) -> None:
    reasons[code] -= 1
    if reasons[code] <= 0:
        del reasons[code]
