"""Every eligibility check over a matrix, with the detail a report lists (pure: data in, data out).

The proof (eligibility.py) keeps the counts and reason codes; the evidence report keeps the lists. Both
come from one `MatrixCheck`, so what a report shows is what the decision was made on.

Each run id's decisive attempt is chosen by the results owner's rule (`harness.results.attempts`: the
first terminal attempt, else the latest), with the record's leaf hash in place of its line, so that the
order of the lines never changes which attempt decides. An attempt after a terminal one is a re-roll and
makes the run ineligible (`attempt_after_valid`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentrel.harness.protocol.freeze import Freeze, freeze_digest
from agentrel.harness.protocol.identity import PARTS, ProtocolIdentity
from agentrel.harness.protocol.policy import Policy
from agentrel.harness.publication.cells import NO_FAULT, Cell, CellInfo, cell_id, registered_cells
from agentrel.harness.publication.coverage_check import check_coverage_floor
from agentrel.harness.publication.error_budget_check import check_error_budget
from agentrel.harness.publication.evidence import Evidence, RecordFacts
from agentrel.harness.publication.stopping_check import StoppingCheck, check_stopping
from agentrel.harness.results.attempts import is_reroll, rank
from agentrel.harness.results.record import run_id
from agentrel.harness.results.status import NOT_EXPOSED
from agentrel.harness.run.matrix import run_seed

__all__ = ["MatrixCheck", "StratumCounts", "check_matrix", "decide"]

SHORT = {
    "matrix_hash": "matrix",
    "policy_hash": "policy",
    "evaluator_digest": "evaluator",
    "witness_contracts_hash": "witness_contracts",
}


@dataclass
class StratumCounts:
    registered: int = 0
    recorded: int = 0
    measured: int = 0
    invalid: int = 0
    missing: int = 0
    witnessed: int = 0


@dataclass
class MatrixCheck:
    identity: ProtocolIdentity
    freeze_digest: str | None
    reasons: Counter[str] = field(default_factory=Counter)
    cells: dict[Cell, CellInfo] = field(default_factory=dict)  # the registered cells
    decisive: dict[Cell, RecordFacts] = field(default_factory=dict)  # registered cells with a run
    attempts: dict[str, list[RecordFacts]] = field(default_factory=dict)  # run id -> attempts
    decided: dict[str, RecordFacts] = field(default_factory=dict)  # run id -> its decisive attempt
    missing: list[Cell] = field(default_factory=list)
    extra: list[RecordFacts] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)  # run ids
    over_cap: list[str] = field(default_factory=list)
    rerolled: list[str] = field(default_factory=list)  # run ids with an attempt after a terminal one
    verdict_mismatches: tuple[str, ...] = ()  # runs whose evidence does not give back their record
    stopping: StoppingCheck = field(default_factory=StoppingCheck)  # a sequential audit's cells (--until)
    gaps: list[str] = field(default_factory=list)
    invalid: list[RecordFacts] = field(default_factory=list)  # decisive attempts not measured
    unwitnessed: list[tuple[Cell, str]] = field(default_factory=list)
    unfrozen: list[RecordFacts] = field(default_factory=list)  # attempts outside the freeze
    mismatched: list[RecordFacts] = field(default_factory=list)  # protocol or identity mismatches
    malformed: list[RecordFacts] = field(default_factory=list)
    matrix_problems: tuple[str, ...] = ()
    artifact_problems: tuple[str, ...] = ()
    strata: dict[tuple[str, str, str], StratumCounts] = field(default_factory=dict)
    # Cells over the frozen error budget: (model, task, condition, fault, errored, attempted).
    over_budget: list[tuple[str, str, str, str | None, int, int]] = field(default_factory=list)
    # The fault-coverage floor (coverage_check.py): fault strata below it, or why the floor is unreadable;
    # and the unwitnessed runs of strata that meet a floor below 1, left out of every rate.
    coverage_problems: list[str] = field(default_factory=list)
    waived: list[Cell] = field(default_factory=list)

    @property
    def eligible(self) -> bool:
        return not self.reasons


def check_matrix(
    manifest: Mapping[str, Any],
    freeze: Freeze | None,
    evidence: Evidence,
    policy: Policy,
    identity: ProtocolIdentity,
    artifact_problems: Sequence[str] = (),
    verdict_mismatches: Sequence[str] = (),
    damaging: Mapping[str, bool] | None = None,
) -> MatrixCheck:
    """`damaging`: run id -> its re-derived damage (publication.rederive), which a sequential audit's
    stopping check reads; None when nothing was labelled again."""
    out = MatrixCheck(identity, freeze_digest(freeze) if freeze else None)
    _check_freeze(out, freeze)
    cells = registered_cells(manifest)
    out.cells, out.matrix_problems = cells.cells, cells.problems
    if cells.problems:
        out.reasons["matrix_unreadable"] += len(cells.problems)
    elif not cells.cells:
        out.reasons["matrix_empty"] += 1
    unsealed = [a for a in manifest.get("agents") or [] if isinstance(a, Mapping) and _unsealed(a)]
    if unsealed:  # an agent program run without a sandbox could reach the instrument: evidence only
        out.reasons["agent_not_sealed"] += len(unsealed)
    cap = manifest.get("max_attempts")
    if not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
        out.reasons["attempt_cap_unregistered"] += 1
        cap = None
    _check_records(out, freeze, evidence.records, policy)
    _check_runs(out, cap, set(policy.eligibility.measured_statuses))
    out.stopping = check_stopping(
        manifest, out.cells, out.decisive, set(policy.eligibility.measured_statuses), damaging
    )
    out.reasons.update(out.stopping.reasons)
    _check_cells(out, policy)
    check_coverage_floor(out, manifest)
    check_error_budget(out, manifest, set(policy.eligibility.measured_statuses))
    out.artifact_problems = tuple(sorted(artifact_problems))
    if artifact_problems:
        out.reasons["evidence_lost"] += len(artifact_problems)
    out.verdict_mismatches = tuple(sorted(verdict_mismatches))
    if verdict_mismatches:
        out.reasons["verdict_mismatch"] += len(verdict_mismatches)
    _sort(out)
    return out


def _unsealed(agent: Mapping[str, Any]) -> bool:
    isolation = agent.get("isolation")
    sealed = isinstance(isolation, Mapping) and isolation.get("mode") == "sealed"
    return agent.get("kind") == "external" and not sealed


def _check_freeze(out: MatrixCheck, freeze: Freeze | None) -> None:
    if freeze is None:
        out.reasons["freeze_missing"] += 1
        return
    ident = out.identity
    if freeze.protocol_hash != ident.protocol_hash:
        out.reasons["freeze_protocol_mismatch"] += 1
    for part in PARTS:
        if getattr(freeze, part) != getattr(ident, part):
            out.reasons[f"freeze_{SHORT[part]}_mismatch"] += 1
    if freeze.subject_config_hash != ident.subject_config_hash:
        out.reasons["freeze_subject_mismatch"] += 1
    if freeze.manifest_hash != ident.manifest_hash:
        out.reasons["freeze_manifest_mismatch"] += 1


def _check_records(
    out: MatrixCheck, freeze: Freeze | None, records: Sequence[RecordFacts], policy: Policy
) -> None:
    accepted = {out.identity.protocol_hash}
    if policy.eligibility.record_binding == "protocol_or_manifest_hash":
        accepted.add(out.identity.manifest_hash)
    digest, at = out.freeze_digest, freeze.at if freeze else None
    for rec in records:
        if rec.problem is not None:
            out.malformed.append(rec)
            out.reasons["record_malformed"] += 1
            continue
        out.attempts.setdefault(rec.run_id, []).append(rec)
        if rec.protocol_hash not in accepted:
            out.mismatched.append(rec)
            out.reasons["record_protocol_mismatch"] += 1
        if rec.frozen_by is None:
            why = "run_not_frozen"
        elif rec.frozen_by != digest:
            why = "run_wrong_freeze"
        elif at is not None and rec.started_at < at:
            why = "run_before_freeze"
        else:
            continue
        out.unfrozen.append(rec)
        out.reasons[why] += 1


def _rank(rec: RecordFacts) -> tuple[bool, int, int]:
    return rank(rec.status, rec.attempt, int(rec.leaf, 16))


def decide(attempts: Sequence[RecordFacts]) -> RecordFacts:
    """A run's decisive attempt (see the module docstring)."""
    return max(attempts, key=_rank)


CellKey = tuple[str, str, str, str | None, int]
# A record's cell is the slice [2:7] of its facts: a plain tuple, equal to and hashed as the Cell it names,
# and several times cheaper to take than naming the five fields.
assert RecordFacts._fields[2:7] == Cell._fields


def _key(rec: RecordFacts) -> CellKey:
    return rec[2:7]


def _check_runs(out: MatrixCheck, cap: int | None, measured: set[str]) -> None:
    by_cell: dict[CellKey, RecordFacts] = {}
    crowded: dict[CellKey, list[RecordFacts]] = {}  # cells more than one run claims
    for rid, attempts in out.attempts.items():
        if len(attempts) == 1:  # nearly every run: its one attempt must be number 1
            best = attempts[0]
            if best.attempt != 1:
                out.gaps.append(rid)
                out.reasons["attempt_gap"] += 1
        else:
            _check_attempts(out, rid, attempts, cap)
            best = decide(attempts)
            if any(is_reroll(best.status, best.attempt, r.attempt) for r in attempts):
                out.rerolled.append(rid)
                out.reasons["attempt_after_valid"] += 1
        out.decided[rid] = best
        key = best[2:7]
        if key in by_cell:
            crowded.setdefault(key, [by_cell[key]]).append(best)
        else:
            by_cell[key] = best
    seeds: dict[tuple[str, str, int], str] = {}  # a seed is shared by every model: hash it once
    # A plain tuple looks up its Cell (a NamedTuple hashes and compares as its fields); mypy cannot know
    # that, and building 100,000 NamedTuples here would cost a third of the check.
    registered: dict[CellKey, CellInfo] = out.cells  # type: ignore[assignment]
    decisive: dict[CellKey, RecordFacts] = out.decisive  # type: ignore[assignment]
    for key, best in by_cell.items():
        model, task, condition, _, index = key
        expected_id = run_id(model, task, condition, index)
        if crowded and key in crowded:
            runs = crowded[key]
            out.duplicates.extend(r.run_id for r in runs)
            out.reasons["cell_duplicate"] += 1
            best = max(runs, key=lambda r: (r.run_id == expected_id, _rank(r)))
        info = registered.get(key)
        if info is None:
            out.extra.append(best)
            out.reasons["cell_extra"] += 1
            continue
        decisive[key] = best
        seed_key = (task, info.seed_condition, index)
        seed = seeds.get(seed_key) or seeds.setdefault(seed_key, run_seed(*seed_key))
        if best.run_id != expected_id or best.seed != seed:
            out.mismatched.append(best)
            out.reasons["record_identity_mismatch"] += 1
        if best.status not in measured:
            out.invalid.append(best)
            out.reasons[
                "run_not_exposed" if best.status == NOT_EXPOSED else f"run_invalid:{best.status}"
            ] += 1


def _check_attempts(out: MatrixCheck, rid: str, attempts: list[RecordFacts], cap: int | None) -> None:
    """A retried run's attempts: one cell, numbered 1..n without a repeat, no more than the cap."""
    numbers = sorted(r.attempt for r in attempts)
    if len({_key(r) for r in attempts}) > 1:
        out.mismatched.append(attempts[0])
        out.reasons["record_identity_mismatch"] += 1
    distinct = sorted(set(numbers))
    if len(distinct) < len(numbers):
        out.duplicates.append(rid)
        out.reasons["cell_duplicate"] += 1
    if distinct != list(range(1, len(distinct) + 1)):
        out.gaps.append(rid)
        out.reasons["attempt_gap"] += 1
    if cap is not None and len(attempts) > cap:
        out.over_cap.append(rid)
        out.reasons["attempt_cap_exceeded"] += 1


def _order(rec: RecordFacts) -> tuple[str, int, str]:
    return (rec.run_id, rec.attempt, rec.leaf)


def _sort(out: MatrixCheck) -> None:
    """Lists in a fixed order, whatever the order of the lines."""
    for name in ("extra", "invalid", "unfrozen", "malformed"):
        getattr(out, name).sort(key=_order)
    out.mismatched = sorted({r.leaf: r for r in out.mismatched}.values(), key=_order)
    out.duplicates = sorted(set(out.duplicates))
    for name in ("over_cap", "gaps", "rerolled"):
        getattr(out, name).sort()
    for attempts in out.attempts.values():
        if len(attempts) > 1:
            attempts.sort(key=lambda r: (r.attempt, r.leaf))


def _check_cells(out: MatrixCheck, policy: Policy) -> None:
    witnessing = set(policy.witness.fault_statuses)
    measured = set(policy.eligibility.measured_statuses)
    unneeded = out.stopping.unneeded  # runs a sequential audit's rule made unnecessary: never missing
    registered = Counter(info.stratum for info in out.cells.values())
    skipped = Counter(out.cells[c].stratum for c in unneeded)
    recorded: Counter[tuple[str, str, str]] = Counter()
    unmeasured: Counter[tuple[str, str, str]] = Counter()
    witnessed: Counter[tuple[str, str, str]] = Counter()
    cells = out.cells
    for cell, rec in out.decisive.items():
        info = cells[cell]
        recorded[info.stratum] += 1
        if rec.status not in measured:
            unmeasured[info.stratum] += 1
        if info.fault_kind == NO_FAULT:
            continue
        why = rec.witness_problem if rec.status in witnessing else f"status {rec.status}"
        if why is None and rec.receipt_kind != info.fault_kind:
            why = f"its receipts are of a {rec.receipt_kind} fault; the cell is scheduled a {info.fault_kind}"
        if why is None:
            witnessed[info.stratum] += 1
        else:
            out.unwitnessed.append((Cell._make(cell), why))
            out.reasons["fault_unwitnessed"] += 1
    for stratum, n in registered.items():
        out.strata[stratum] = StratumCounts(
            registered=n,
            recorded=recorded[stratum],
            measured=recorded[stratum] - unmeasured[stratum],
            invalid=unmeasured[stratum],
            missing=n - recorded[stratum] - skipped[stratum],
            witnessed=witnessed[stratum],
        )
    if len(out.decisive) + len(unneeded) < len(cells):
        out.missing = sorted(
            (c for c in cells if c not in out.decisive and c not in unneeded),
            key=lambda c: (c.model, c.task, c.condition, c.fault or "", c.run_index),
        )
        out.reasons["cell_missing"] += len(out.missing)
    out.unwitnessed.sort(key=lambda u: (cell_id(u[0]), u[1]))
