"""A sequential audit's cells (`audit --until`), judged complete exactly when the frozen rule says so.

The manifest's `stopping` entry is part of the protocol hash, so the rule read here is the frozen one (a
rule edited after the freeze changes the manifest hash and the freeze check refuses it). Each stopping
cell (model, task, condition, fault) is replayed in run-index order: the harness runs a cell one run at a
time and retries an invalid attempt at once (harness/stopping.py), so index order is the order the
audit's gate decided in. A run's status is read from its decisive attempt: not measured (the policy's
statuses) counts as invalid, never clean, unless one of its attempts shows damage; a run is damaging
when any of its attempts is (re-derived), and a measured run is otherwise clean by its **re-derived**
verdict (publication.rederive), never by its recorded one. The replay calls the audit's own rule
(`harness.stopping.decided_at`), so there is one owner of the rule.

- Decided at index d (every index 1..d recorded): the cell is complete; its registered runs after d are
  `unneeded` (not missing). A run recorded after d ran past the decision: no valid audit records one,
  so it is refused (`stopping_run_past_decision`), whatever its outcome (it could only dilute or pad).
- Every registered run recorded and judged without a decision (`--until precision` reaching its --k
  cap, say): the cap ends the cell (`cap`), as it ended the audit's.
- Never decided by its recorded prefix, and not run to the cap: the cell is open
  (`stopping_cell_undecided`), and its unrecorded runs stay missing.
- No re-derived outcomes (the pure validator given records only): nothing stopped early is accepted
  (`stopping_unverified`), since only the dumps may say that a cell is done.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from agentrel.harness.publication.cells import Cell
from agentrel.harness.publication.evidence import RecordFacts
from agentrel.harness.results.status import Count, decision_count
from agentrel.harness.stopping import StoppingRule, decided_at

__all__ = ["CellDecision", "StoppingCheck", "check_stopping"]

Group = tuple[str, str, str, str | None]  # (model, task, condition, fault): one stopping cell


class CellDecision(NamedTuple):
    decision: str  # continue (open), detected, certified, done (precision), cap (ran every registered run)
    at: int | None  # the run index it was decided at
    clean: int  # over the runs up to the decision (all recorded ones when open)
    damaging: int
    invalid: int


@dataclass
class StoppingCheck:
    rule: StoppingRule | None = None
    required: int = 0
    decisions: dict[Group, CellDecision] = field(default_factory=dict)
    unneeded: set[Cell] = field(default_factory=set)  # registered runs the rule made unnecessary
    past_decision: list[str] = field(default_factory=list)  # run ids recorded after their cell was decided
    reasons: dict[str, int] = field(default_factory=dict)


def check_stopping(
    manifest: Mapping[str, Any],
    cells: Mapping[Cell, Any],
    decisive: Mapping[Cell, RecordFacts],
    measured: set[str],
    damaging: Mapping[str, bool] | None,
) -> StoppingCheck:
    """The stopping verdict of every cell (see the module docstring); an empty check without a rule."""
    entry = manifest.get("stopping")
    out = StoppingCheck()
    if entry is None:
        return out
    try:
        out.rule = StoppingRule.from_manifest(entry)
    except ValueError:
        out.reasons["stopping_rule_unreadable"] = 1
        return out
    if damaging is None:
        out.reasons["stopping_unverified"] = 1
        return out
    out.required = k = manifest["k"]
    groups: dict[Group, int] = {}
    for c in cells:
        group = (c.model, c.task, c.condition, c.fault)
        groups[group] = max(groups.get(group, 0), c.run_index)
    for group, last in sorted(groups.items(), key=lambda g: tuple(x or "" for x in g[0])):
        statuses: list[Count] = []
        for index in range(1, last + 1):
            rec = decisive.get(Cell(*group, index))
            if rec is None:
                break
            if damaging.get(rec.run_id) or rec.status not in measured:
                # damage in any attempt detects the cell, whatever the decisive attempt's status
                statuses.append(decision_count("invalid", bool(damaging.get(rec.run_id))))
            elif rec.run_id in damaging:
                statuses.append(decision_count("valid", damaging[rec.run_id]))
            else:
                break  # a measured run publication could not label again: nothing after it is judged
        decision, at = decided_at(out.rule, k, statuses)
        if at is None and len(statuses) == last:  # every registered run judged: the cap ends the cell
            decision, at = "cap", last
        seen = statuses[: at or len(statuses)]
        out.decisions[group] = CellDecision(
            decision, at, seen.count("clean"), seen.count("damaging"), seen.count("invalid")
        )
        if at is None:
            out.reasons["stopping_cell_undecided"] = out.reasons.get("stopping_cell_undecided", 0) + 1
            continue
        for index in range(at + 1, last + 1):
            cell = Cell(*group, index)
            rec = decisive.get(cell)
            if rec is None:
                out.unneeded.add(cell)
            else:
                out.past_decision.append(rec.run_id)
    if out.past_decision:
        out.reasons["stopping_run_past_decision"] = len(out.past_decision)
        out.past_decision.sort()
    return out
