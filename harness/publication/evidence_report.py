"""The incomplete-evidence report: what an ineligible matrix holds, and why it cannot be scored.

Coverage and status counts, the cells that are missing (with their strata), the runs that are extra,
invalid, unfrozen or duplicated, every retried run's attempt history, the reason codes and where the
artifacts are. By construction it has no rate, score, rank, percentile or bound, and no floating-point
field at all (tests walk its JSON schema): an incomplete matrix gets no number that could be quoted as
one. Bounds over the missing runs belong to `agentrel analyze`, which is the researcher's evidence view.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import model_validator

from agentrel.harness.frozen import Frozen
from agentrel.harness.protocol.identity import IDENTITY, ProtocolParts
from agentrel.harness.publication.cells import Cell, cell_id
from agentrel.harness.publication.eligibility import EligibilityProof, StratumCoverage
from agentrel.harness.publication.evidence import RecordFacts
from agentrel.harness.publication.matrix_check import MatrixCheck
from agentrel.harness.publication.reasons import meaning
from agentrel.harness.results import layout

__all__ = ["ArtifactRefs", "IncompleteEvidenceReport"]


class CellRef(Frozen):
    cell_id: str
    model: str
    task: str
    condition: str
    fault: str | None
    fault_kind: str
    run_index: int


class RunRef(Frozen):
    run_id: str
    attempt: int
    status: str
    model: str
    task: str
    condition: str
    fault: str | None
    run_index: int
    note: str | None = None


class AttemptRef(Frozen):
    attempt: int
    status: str


class AttemptHistory(Frozen):
    run_id: str
    decisive_attempt: int
    attempts: tuple[AttemptRef, ...]


class UnwitnessedFault(Frozen):
    cell: CellRef
    why: str


class ReasonEntry(Frozen):
    code: str
    meaning: str
    count: int


class ArtifactRefs(Frozen):
    """Paths relative to the folder the report is in (absolute outside it); None: no such file."""

    results: str
    manifest: str
    runs: str
    freeze: str | None
    dumps: str
    transcripts: str
    execution_environment: str | None


class IncompleteEvidenceReport(ProtocolParts):
    format: Literal["agentrel-evidence-report/1"] = "agentrel-evidence-report/1"
    execution_environment_hash: str | None
    evidence_root_hash: str
    proof_hash: str
    proof: EligibilityProof
    decision: Literal["ineligible"] = "ineligible"
    reasons: tuple[ReasonEntry, ...]
    coverage: tuple[StratumCoverage, ...]
    decisive_statuses: dict[str, int]
    attempt_statuses: dict[str, int]
    missing_cells: tuple[CellRef, ...]
    extra_runs: tuple[RunRef, ...]
    invalid_runs: tuple[RunRef, ...]
    unwitnessed_faults: tuple[UnwitnessedFault, ...]
    unfrozen_attempts: tuple[RunRef, ...]
    mismatched_records: tuple[RunRef, ...]
    malformed_records: tuple[RunRef, ...]
    duplicate_runs: tuple[str, ...]
    over_cap_runs: tuple[str, ...]
    rerolled_runs: tuple[str, ...]  # an attempt recorded after the run's terminal one
    verdict_mismatches: tuple[str, ...]  # runs whose dumps and receipts do not give back their record
    attempt_gaps: tuple[str, ...]
    attempt_history: tuple[AttemptHistory, ...]
    matrix_problems: tuple[str, ...]
    artifact_problems: tuple[str, ...]
    artifacts: ArtifactRefs
    # Fault strata below the frozen coverage floor, each with its witnessed and scheduled counts and the
    # floor (or why the floor is unreadable): reported, not published.
    below_coverage_floor: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _only_for_an_ineligible_proof(self) -> IncompleteEvidenceReport:
        if self.proof.eligible:
            raise ValueError("an eligible matrix is published as a scorecard, not as an evidence report")
        if self.proof_hash != self.proof.digest:
            raise ValueError("proof_hash is not the hash of the embedded proof")
        for name in IDENTITY:
            if getattr(self, name) != getattr(self.proof, name):
                raise ValueError(f"{name} is not the proof's")
        return self

    @classmethod
    def from_check(
        cls,
        proof: EligibilityProof,
        check: MatrixCheck,
        artifacts: ArtifactRefs,
        execution_environment_hash: str | None = None,
    ) -> IncompleteEvidenceReport:
        def cell_ref(cell: Cell) -> CellRef:
            return CellRef(
                cell_id=cell_id(cell),
                model=cell.model,
                task=cell.task,
                condition=cell.condition,
                fault=cell.fault,
                fault_kind=info.fault_kind if (info := check.cells.get(cell)) else "unregistered",
                run_index=cell.run_index,
            )

        return cls(
            **{name: getattr(proof, name) for name in IDENTITY},
            execution_environment_hash=execution_environment_hash,
            proof_hash=proof.digest,
            proof=proof,
            reasons=tuple(
                ReasonEntry(code=c, meaning=meaning(c), count=n) for c, n in proof.reason_counts.items()
            ),
            coverage=proof.strata,
            decisive_statuses=proof.decisive_statuses,
            attempt_statuses=proof.attempt_statuses,
            missing_cells=tuple(cell_ref(c) for c in check.missing),
            extra_runs=tuple(_run(r) for r in check.extra),
            invalid_runs=tuple(_run(r) for r in check.invalid),
            unwitnessed_faults=tuple(
                UnwitnessedFault(cell=cell_ref(c), why=why) for c, why in check.unwitnessed
            ),
            below_coverage_floor=tuple(check.coverage_problems),
            unfrozen_attempts=tuple(_run(r, _freeze_note(r)) for r in check.unfrozen),
            mismatched_records=tuple(_run(r) for r in check.mismatched),
            malformed_records=tuple(_run(r, r.problem) for r in check.malformed),
            duplicate_runs=tuple(check.duplicates),
            over_cap_runs=tuple(check.over_cap),
            rerolled_runs=tuple(check.rerolled),
            verdict_mismatches=check.verdict_mismatches,
            attempt_gaps=tuple(check.gaps),
            attempt_history=tuple(
                AttemptHistory(
                    run_id=rid,
                    decisive_attempt=check.decided[rid].attempt,
                    attempts=tuple(AttemptRef(attempt=a.attempt, status=a.status) for a in attempts),
                )
                for rid, attempts in sorted(check.attempts.items())
                if len(attempts) > 1 or attempts[0].status != "valid"
            ),
            matrix_problems=check.matrix_problems,
            artifact_problems=check.artifact_problems,
            artifacts=artifacts,
        )


def _run(r: RecordFacts, note: str | None = None) -> RunRef:
    return RunRef(
        run_id=r.run_id,
        attempt=r.attempt,
        status=r.status,
        model=r.model,
        task=r.task,
        condition=r.condition,
        fault=r.fault,
        run_index=r.run_index,
        note=note,
    )


def _freeze_note(r: RecordFacts) -> str:
    return "recorded without a freeze" if r.frozen_by is None else f"frozen_by {r.frozen_by[:12]}"


def artifact_refs(results: Path, out: Path) -> ArtifactRefs:
    """Where a report written to `out` finds the results' files."""

    def rel(p: Path) -> str:
        try:
            return str(p.resolve().relative_to(out.resolve()))
        except ValueError:
            return str(p.resolve())

    def present(name: str) -> str | None:
        return rel(results / name) if (results / name).exists() else None

    return ArtifactRefs(
        results=rel(results),
        manifest=rel(results / layout.MANIFEST),
        runs=rel(results / layout.RUNS),
        freeze=present(layout.FREEZE),
        dumps=rel(results / layout.DUMPS),
        transcripts=rel(results / layout.TRANSCRIPTS),
        execution_environment=present(layout.EXECUTION_ENVIRONMENT),
    )
