"""The matrix validator: `validate(manifest, freeze, records, policy) -> EligibilityProof`.

Pure: the manifest, the freeze, the records and the policy in, a proof out; the evaluator digest is the
running code's unless given. Same inputs give the same proof byte for byte (`proof.canonical()`), in any
order of the records. The proof carries identities, counts and reason codes only: what is eligible, and
why not, never a rate.

Eligible means all of: a freeze binding this protocol (matrix, policy, evaluator, witness contracts) and
this manifest; every record under the protocol hash and recorded under that freeze, after it; exactly
the registered cells (none missing, none extra, none twice); attempts numbered 1..n within the cap;
every decisive attempt measured (the policy's statuses, `valid` by default); every fault-scheduled
cell witnessed; every dump and transcript a record names present (when the caller checked them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import model_validator

from agentrel.harness.frozen import Frozen
from agentrel.harness.protocol.canonical import canonical_bytes, canonical_hash
from agentrel.harness.protocol.freeze import Freeze
from agentrel.harness.protocol.identity import ProtocolParts, identity_of
from agentrel.harness.protocol.policy import Policy
from agentrel.harness.publication.evidence import Evidence, evidence_from_records
from agentrel.harness.publication.matrix_check import MatrixCheck, check_matrix

__all__ = ["EligibilityProof", "StratumCoverage", "proof_of", "validate"]


class StratumCoverage(Frozen):
    """One (condition, fault kind, task) stratum: its registered cells and what became of them."""

    condition: str
    fault_kind: str
    task: str
    registered: int
    recorded: int  # cells with a run
    measured: int  # cells whose decisive attempt counts as measured
    invalid: int  # cells whose decisive attempt does not
    missing: int  # cells with no run
    witnessed: int  # fault-scheduled cells whose fault was witnessed (0 for unscheduled strata)


class EligibilityProof(ProtocolParts):
    format: Literal["agentrel-eligibility-proof/1"] = "agentrel-eligibility-proof/1"
    manifest_hash: str
    evidence_root_hash: str
    freeze_digest: str | None
    decision: Literal["eligible", "ineligible"]
    reasons: tuple[str, ...]  # sorted, distinct
    reason_counts: dict[str, int]  # how many cells, runs or records each reason concerns
    registered_cells: int
    # Registered runs a sequential audit's frozen rule made unnecessary (their cell was decided first):
    # neither run nor missing (publication.stopping_check).
    unneeded_cells: int = 0
    runs: int  # distinct run ids recorded
    attempts: int  # lines of runs.jsonl
    decisive_statuses: dict[str, int]  # per status, over every recorded run
    attempt_statuses: dict[str, int]  # per status, over every attempt
    strata: tuple[StratumCoverage, ...]

    @model_validator(mode="after")
    def _decided_by_reasons(self) -> EligibilityProof:
        if (self.decision == "eligible") != (not self.reasons):
            raise ValueError("a proof is eligible exactly when it has no reason against")
        if list(self.reasons) != sorted(set(self.reasons)) or set(self.reasons) != set(self.reason_counts):
            raise ValueError("reasons must be sorted, distinct and counted")
        return self

    @property
    def eligible(self) -> bool:
        return self.decision == "eligible"

    def canonical(self) -> bytes:
        """The proof's RFC 8785 bytes: what `proof_hash` hashes and what is written to disk."""
        return canonical_bytes(self.model_dump(mode="json"))

    @property
    def digest(self) -> str:
        return canonical_hash(self.model_dump(mode="json"))


def proof_of(check: MatrixCheck, evidence: Evidence) -> EligibilityProof:
    ident = check.identity
    return EligibilityProof(
        protocol_hash=ident.protocol_hash,
        matrix_hash=ident.matrix_hash,
        policy_hash=ident.policy_hash,
        evaluator_digest=ident.evaluator_digest,
        witness_contracts_hash=ident.witness_contracts_hash,
        subject_config_hash=ident.subject_config_hash,
        manifest_hash=ident.manifest_hash,
        evidence_root_hash=evidence.root,
        freeze_digest=check.freeze_digest,
        decision="eligible" if check.eligible else "ineligible",
        reasons=tuple(sorted(check.reasons)),
        reason_counts=dict(sorted(check.reasons.items())),
        registered_cells=len(check.cells),
        unneeded_cells=len(check.stopping.unneeded),
        runs=len(check.attempts),
        attempts=len(evidence.records),
        decisive_statuses=dict(sorted(Counter(r.status for r in check.decided.values()).items())),
        attempt_statuses=dict(sorted(Counter(r.status for r in evidence.records).items())),
        strata=tuple(
            StratumCoverage(condition=c, fault_kind=k, task=t, **vars(counts))
            for (c, k, t), counts in sorted(check.strata.items())
        ),
    )


def validate(
    manifest: Mapping[str, Any],
    freeze: Freeze | None,
    records: Evidence | Sequence[Mapping[str, Any]],
    policy: Policy,
    *,
    evaluator_digest: str | None = None,
    artifact_problems: Sequence[str] = (),
) -> EligibilityProof:
    """The eligibility proof of `records` (an Evidence, or the raw records) under the frozen protocol."""
    evidence = records if isinstance(records, Evidence) else evidence_from_records(records)
    identity = identity_of(manifest, policy=policy, evaluator_digest=evaluator_digest)
    return proof_of(check_matrix(manifest, freeze, evidence, policy, identity, artifact_problems), evidence)
