"""The validation `publish` acts on, and `analyze`'s status line: read a results directory under a shared
lock and return its `EligibilityProof`, writing nothing.

Apart from publish.py so that the status check, which `analyze` runs in a second process beside its own
work, imports only what deciding needs: not the scorecard, its rendering, or analysis's estimators (the
claims are judged, and the axes computed, only when an eligible proof is published).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrel.harness.errors import EnvironmentFailure, UserError
from agentrel.harness.gc_paused import collector_paused
from agentrel.harness.protocol.freeze import Freeze, load_freeze, planned_manifest
from agentrel.harness.protocol.identity import identity_of
from agentrel.harness.protocol.policy import Policy, load_policy
from agentrel.harness.protocol.registry import default_registry_path, verify
from agentrel.harness.protocol.registry_journal import journal_reasons
from agentrel.harness.protocol.signing import trusted_key
from agentrel.harness.publication.anchor import anchor_reasons
from agentrel.harness.publication.artifacts import artifact_problems, orphan_problems
from agentrel.harness.publication.claims_check import claims_reasons
from agentrel.harness.publication.eligibility import EligibilityProof, proof_of
from agentrel.harness.publication.evidence import Evidence, read_evidence
from agentrel.harness.publication.matrix_check import MatrixCheck, check_matrix
from agentrel.harness.publication.rederive import rederive_outcomes
from agentrel.harness.results import layout

__all__ = ["Validated", "eligibility_of", "evidence_held", "shared_lock", "status_line", "validate"]


def evidence_held() -> contextlib.AbstractContextManager[None]:
    """While the evidence is validated and scored: reading builds a few hundred thousand acyclic objects
    per 100,000 records (facts, records, their verdicts) that all survive it, and each collection in
    between would only re-scan them (more than half of the check's time at 100,000 runs,
    bench/analysis_scale.py), so the cyclic collector pauses (`collector_paused`); it resumes after."""
    return collector_paused()


@contextlib.contextmanager
def shared_lock(results: Path) -> Iterator[None]:
    """Hold off an audit of these results while they are read (it takes the same lock exclusively)."""
    if not results.is_dir():
        raise UserError(f"{results}: not a results directory")
    path = results / layout.LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise EnvironmentFailure(f"{path}: cannot open the results' lock ({exc.strerror})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise EnvironmentFailure(
                f"{results}: an audit is writing these results; publish when it has finished"
            ) from None
        yield
    finally:
        os.close(fd)


@dataclass
class Validated:
    """What one read of a results directory gives the validator, and the check it made."""

    manifest: dict[str, Any]
    evidence: Evidence
    check: MatrixCheck
    proof: EligibilityProof
    freeze: Freeze | None


def validate(
    results: Path,
    policy: Policy,
    workers: int | None,
    clock: dict[str, float],
    registry: Path,
    trusted: str | None,
) -> Validated:
    """Read and validate; the caller holds the lock (`shared_lock`) and the evidence (`evidence_held`)."""
    manifest = planned_manifest(results)
    freeze = load_freeze(results)
    state = verify(registry, trusted)  # a registry that does not verify is refused here
    anchors = state.freezes
    t0 = time.perf_counter()
    evidence = read_evidence(results / layout.RUNS, workers)
    clock["evidence_root"] = time.perf_counter() - t0
    problems = artifact_problems(results, evidence)
    t0 = time.perf_counter()
    mismatches, damaging = rederive_outcomes(results, manifest, workers)
    clock["relabel"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    identity = identity_of(manifest, policy=policy)
    check = check_matrix(manifest, freeze, evidence, policy, identity, problems, mismatches, damaging)
    check.reasons.update(anchor_reasons(freeze, anchors, evidence.records))
    check.reasons.update(journal_reasons(results, freeze, state.journals))
    check.reasons.update(claims_reasons(results, freeze))
    if orphans := orphan_problems(results, evidence):
        check.reasons["orphan_evidence"] += len(orphans)
        check.artifact_problems = (*check.artifact_problems, *orphans)
    proof = proof_of(check, evidence)
    clock["validate"] = time.perf_counter() - t0
    return Validated(manifest, evidence, check, proof, freeze)


def eligibility_of(
    results: Path, *, policy: Policy | None = None, registry: Path | None = None, workers: int | None = None
) -> EligibilityProof:
    """The proof `publish` would act on, without writing anything (for `analyze`'s status line); the
    registry is verified under the user's key, and no key is made. `workers`: processes reading and
    labelling the records (default: one per CPU)."""
    with shared_lock(results), evidence_held():
        registry = registry or default_registry_path()
        return validate(results, policy or load_policy(), workers, {}, registry, trusted_key()).proof


def status_line(proof: EligibilityProof) -> str:
    """One line saying whether what a results directory shows may be published, and why not."""
    if proof.eligible:
        return f"publishable: frozen protocol {proof.protocol_hash[:12]}, every registered cell measured"
    return f"evidence only, not publishable ({', '.join(proof.reasons)})"
