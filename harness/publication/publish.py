"""`publish`: validate a results directory, then write either its scorecard or its evidence report.

The only I/O around the pure validator: read the manifest, freeze, policy, records and artifacts under a
shared lock on the results directory (an audit writing them holds it exclusively, so what is validated
is what is scored), write the files atomically, and register a scorecard in the registry. Files of an
earlier publication of other evidence are moved to `previous/<evidence root>/`, never overwritten.

The registry is verified first (chain, signatures, head) under the publisher's key, and must hold the
signed entry anchoring the directory's freeze before its runs (anchor.py); the scorecard is signed with
that key, which it names, before it is written.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrel.analysis.claims import ClaimResult, ClaimsFile
from agentrel.analysis.decisions.certify import certificate_sentence
from agentrel.analysis.faults import FaultReport
from agentrel.harness.durable import write_durably
from agentrel.harness.errors import CheckFailed, EnvironmentFailure
from agentrel.harness.protocol.canonical import model_bytes
from agentrel.harness.protocol.conformance import read_execution_environment
from agentrel.harness.protocol.environment import ExecutionEnvironment, environment_hash
from agentrel.harness.protocol.freeze import Freeze
from agentrel.harness.protocol.policy import Policy, load_policy
from agentrel.harness.protocol.registry import default_registry_path, register
from agentrel.harness.protocol.signing import Signer, load_signer
from agentrel.harness.publication.claims_check import judged_claims
from agentrel.harness.publication.eligibility import EligibilityProof
from agentrel.harness.publication.evidence import Evidence
from agentrel.harness.publication.evidence_report import IncompleteEvidenceReport, artifact_refs
from agentrel.harness.publication.render import report_markdown, scorecard_html, scorecard_markdown
from agentrel.harness.publication.scorecard import AxisValue, CellCertificate, PublishableScorecard
from agentrel.harness.publication.stopping_check import StoppingCheck
from agentrel.harness.publication.validate import (
    Validated,
    eligibility_of,
    evidence_held,
    shared_lock,
    status_line,
    validate,
)
from agentrel.harness.results import layout

__all__ = [
    "PublishOutcome",
    "eligibility_of",
    "evidence_held",
    "execution_environment",
    "publish",
    "status_line",
]

SCORECARD_FILES = ("scorecard.json", "scorecard.md", "scorecard.html")
REPORT_FILES = ("evidence_report.json", "evidence_report.md")


@dataclass
class PublishOutcome:
    proof: EligibilityProof
    written: list[Path]
    scorecard: PublishableScorecard | None = None
    report: IncompleteEvidenceReport | None = None
    registered: bool = False
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase
    signer: Signer | None = None


def execution_environment(results: Path) -> ExecutionEnvironment | None:
    """The results' execution_environment.json (which the audit writes), or None when it has none."""
    path = results / layout.EXECUTION_ENVIRONMENT
    return read_execution_environment(path) if path.exists() else None


def publish(
    results: Path,
    out: Path | None = None,
    *,
    policy: Policy | None = None,
    registry: Path | None = None,
    derived_from: str | None = None,
    workers: int | None = None,
    signer: Signer | None = None,
) -> PublishOutcome:
    """Validate `results`; write its signed scorecard (and register it) or its evidence report into `out`.
    `signer`: the publisher's key (default: the user's, made on first use)."""
    out = out or results
    policy = policy or load_policy()
    signer = signer or load_signer()
    registry = registry or default_registry_path()
    clock: dict[str, float] = {}
    with shared_lock(results), evidence_held():
        read = validate(results, policy, workers, clock, registry, signer.public)
        t0 = time.perf_counter()
        outcome = _publish_files(results, out, read, policy, signer)
        clock["analysis_and_write"] = time.perf_counter() - t0
    if outcome.scorecard is not None and policy.publication.register_in_registry:
        outcome.registered = _register(outcome.scorecard, registry, derived_from, signer)
    outcome.timings = clock
    outcome.signer = signer
    return outcome


def _publish_files(
    results: Path, out: Path, read: Validated, policy: Policy, signer: Signer
) -> PublishOutcome:
    """The scorecard of an eligible proof, else the evidence report."""
    env = execution_environment(results)
    proof = read.proof
    if proof.eligible:
        axes, note, faults, claims = _analysis(
            results, policy, proof, read.freeze, read.evidence, len(read.check.waived)
        )
        card = PublishableScorecard.from_proof(
            proof,
            read.evidence,
            read.manifest,
            policy,
            execution_environment=env,
            axes=axes,
            axes_note=note,
            faults=faults,
            certificates=certificates_of(read.check.stopping),
            claims_hash=read.freeze.claims_hash if claims and read.freeze else None,
            preregistered=claims[0] if claims else None,
            claims=claims[1] if claims else None,
            unwitnessed=[(c.model, c.task, c.condition, c.fault, c.run_index) for c in read.check.waived],
        ).signed(signer)
        return PublishOutcome(proof, _write_scorecard(out, card), scorecard=card)
    report = IncompleteEvidenceReport.from_check(
        proof, read.check, artifact_refs(results, out), environment_hash(env) if env else None
    )
    return PublishOutcome(proof, _write_report(out, report), report=report)


def _analysis(
    results: Path,
    policy: Policy,
    proof: EligibilityProof,
    freeze: Freeze | None,
    evidence: Evidence,
    waived: int = 0,
) -> tuple[
    list[AxisValue], str | None, FaultReport | None, tuple[ClaimsFile, tuple[ClaimResult, ...]] | None
]:
    """The six operational axes, the fault scores and the frozen claims by analysis itself, over the runs
    the proof admitted."""
    from agentrel.analysis.axes_table import operational_axes
    from agentrel.analysis.load_results import load_results
    from agentrel.analysis.normalized import InputError

    try:
        # Every record's protocol binding was checked by the validator (the root or the manifest's own
        # hash), so analysis may pool the two names of one protocol.
        loaded = load_results(results, allow_mixed_protocols=True)
    except InputError as exc:
        raise CheckFailed(f"analysis cannot read what the validator admitted: {exc}") from None
    valid = proof.decisive_statuses.get("valid", 0)
    # The only unmeasured runs an eligible proof admits: the unwitnessed fault runs a floor waived.
    if len(loaded.runs) != valid or len(loaded.invalid) != waived:
        raise CheckFailed(
            f"{results}: analysis counts {len(loaded.runs)} valid runs, the proof {valid}; not publishing"
        )
    s = policy.scoring
    axes = operational_axes(loaded, alpha=s.alpha, n_boot=s.axes_bootstrap, seed=s.axes_seed)
    rows = [
        AxisValue(
            model=str(r["model"]),
            condition=str(r["condition"]),
            axis=str(r["axis"]),
            axis_group=str(r["axis_group"]),
            estimate=_number(r["estimate"]),
            ci_low=_number(r["ci_low"]),
            ci_high=_number(r["ci_high"]),
            n=_count(r["n"]),
            k=_count(r["k"]),
            ci_method=str(r["ci_method"]),
        )
        for r in axes.table.to_dict("records")
    ]
    claims = judged_claims(results, freeze, loaded, policy, evidence.records)
    return rows, "; ".join(axes.notes) or None, loaded.faults, claims


def certificates_of(stopping: StoppingCheck) -> list[CellCertificate]:
    """A sequential audit's decided cells, from the stopping check (re-derived outcomes), each certified
    one with its certificate at the cell's confidence (the frozen rule's, after its multiplicity)."""
    rule = stopping.rule
    if rule is None:
        return []
    cells = len({(t, c, f) for _, t, c, f in stopping.decisions}) or 1
    level = rule.cell_level(cells)
    out = []
    for (model, task, condition, fault), d in sorted(
        stopping.decisions.items(), key=lambda g: tuple(x or "" for x in g[0])
    ):
        if d.at is None:
            continue
        statement = (
            certificate_sentence(d.clean, rule.target_p, level)
            if d.decision == "certified" and rule.target_p is not None
            else None
        )
        out.append(
            CellCertificate(
                model=model,
                task=task,
                condition=condition,
                fault=fault,
                decision=d.decision,
                decided_at=d.at,
                clean=d.clean,
                damaging=d.damaging,
                invalid=d.invalid,
                statement=statement,
            )
        )
    return out


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _count(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _write_file(path: Path, data: bytes) -> Path:
    """Whole and synced: the registry entry naming a scorecard is synced too, and must never outlive it."""
    try:
        write_durably(path, data)
    except OSError as exc:
        raise EnvironmentFailure(f"{path}: cannot write ({exc.strerror})") from None
    return path


def _set_aside(out: Path, root: str, kind: tuple[str, ...]) -> None:
    """Move an earlier publication into previous/<its evidence root>/: one of the other kind (the
    same evidence judged under other rules), or of the same kind over other evidence."""
    for names in (SCORECARD_FILES, REPORT_FILES):
        try:
            old = json.loads((out / names[0]).read_bytes()).get("evidence_root_hash")
        except (OSError, ValueError, AttributeError):
            continue
        if names == kind and old == root:
            continue
        keep = out / "previous" / str(old)[:16]
        keep.mkdir(parents=True, exist_ok=True)
        for name in names:
            if (out / name).exists():
                (out / name).replace(keep / name)


def _write_scorecard(out: Path, card: PublishableScorecard) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    _set_aside(out, card.evidence_root_hash, SCORECARD_FILES)
    return [
        _write_file(out / "scorecard.json", card.canonical),
        _write_file(out / "scorecard.md", scorecard_markdown(card).encode()),
        _write_file(out / "scorecard.html", scorecard_html(card).encode()),
    ]


def _write_report(out: Path, report: IncompleteEvidenceReport) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    _set_aside(out, report.evidence_root_hash, REPORT_FILES)
    return [
        _write_file(out / "evidence_report.json", model_bytes(report)),
        _write_file(out / "evidence_report.md", report_markdown(report).encode()),
    ]


def _register(card: PublishableScorecard, registry: Path, derived_from: str | None, signer: Signer) -> bool:
    register(
        registry,
        card.digest,
        card.protocol_hash,
        card.subject_config_hash,
        derived_from=derived_from,
        signer=signer,
    )
    return True
