"""The publishable scorecard: the only object in AgentRel that carries a score.

It exists only on top of an `EligibilityProof` whose decision is eligible: `from_proof` builds it from the
proof and the very evidence, manifest and policy the proof was made on (it checks the evidence root and
the identity again), and the model's own validator refuses any scorecard whose embedded proof is not
eligible, does not hash to `proof_hash`, or names other identity hashes. So a scorecard read back from
JSON is held to the same rule as one just built.

Rates are over the decisive attempts of the registered cells, which an eligible proof guarantees are all
measured: damage (as analysis counts it) and completion (PASS), each with its exact Clopper–Pearson
interval, per (model, condition) and per cell; fault scores and the six operational axes are analysis's
own, computed over the same runs. `runs` lists every run's outcome
by (task, condition, fault, run index) and seed, the same for every subject of the protocol, so two
scorecards pair run by run.

`publish` signs it (`signed`): `signed_by` names the publisher's Ed25519 public key and `signature` is
that key's signature over the scorecard's RFC 8785 form with `signature` null, so the digest the registry
records covers the signature too. `signature_problem` is what a reader checks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from agentrel.analysis.claims import ClaimResult, ClaimsFile
from agentrel.analysis.faults import FaultReport
from agentrel.analysis.intervals import clopper_pearson
from agentrel.analysis.noise_floor import NoiseFloor, combine, pool_floor
from agentrel.harness.frozen import Frozen
from agentrel.harness.protocol.canonical import canonical_bytes, canonical_hash, model_bytes, sha256_hex
from agentrel.harness.protocol.environment import ExecutionEnvironment, environment_hash
from agentrel.harness.protocol.identity import IDENTITY, ProtocolParts, identity_of
from agentrel.harness.protocol.policy import Policy
from agentrel.harness.protocol.signing import PUBLIC_PATTERN, SIG_PATTERN, Signer, signature_valid
from agentrel.harness.publication.cells import NO_FAULT, fault_kinds
from agentrel.harness.publication.eligibility import EligibilityProof
from agentrel.harness.publication.evidence import Evidence, RecordFacts
from agentrel.harness.publication.matrix_check import decide

__all__ = [
    "AxisValue",
    "CellCertificate",
    "PairedOutcome",
    "PairedOutcomeKey",
    "Proportion",
    "PublishableScorecard",
    "RunKey",
    "Subject",
]


class Proportion(Frozen):
    x: int
    n: int
    estimate: float
    ci_low: float
    ci_high: float


class GroupRates(Frozen):
    model: str
    condition: str
    damage: Proportion
    completion: Proportion


class CellRates(Frozen):
    model: str
    task: str
    condition: str
    fault_kind: str
    fault: str | None
    damage: Proportion
    completion: Proportion


class CellCertificate(Frozen):
    """A sequential audit's cell as its frozen rule decided it, from the re-derived outcomes."""

    model: str
    task: str
    condition: str
    fault: str | None
    decision: str  # detected, certified, done (precision), cap (every registered run, undecided)
    decided_at: int  # the run index the rule decided the cell at
    clean: int
    damaging: int
    invalid: int
    statement: str | None  # a certified cell's certificate


class RunKey(Frozen):
    task: str
    condition: str
    fault: str | None
    run_index: int


class PairedOutcomeKey(Frozen):
    model: str
    run_key: RunKey


class PairedOutcome(Frozen):
    model: str
    run_key: RunKey
    seed: str
    outcome: Literal["PASS", "FAIL_SAFE", "FAIL_DAMAGE"]
    damaged: bool
    passed: bool


class AxisValue(Frozen):
    """One row of analysis.axes_table.operational_axes (NaN and NA as None)."""

    model: str
    condition: str
    axis: str
    axis_group: str
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    n: int | None
    k: int | None
    ci_method: str


class Subject(Frozen):
    name: str
    kind: str | None
    config_hash: str  # RFC 8785 SHA-256 of this agent's config from the manifest
    # The model ids the provider said served this subject's decisive runs: part of what the subject is
    # (`gpt-4o` served as two different snapshots is two subjects); empty where none was said.
    served_models: tuple[str, ...] = ()
    # An agent program's isolation, as its config records it: "sealed, network loopback" (or "host").
    isolation: str | None = None


class PublishableScorecard(ProtocolParts):
    format: Literal["agentrel-scorecard/1"] = "agentrel-scorecard/1"
    execution_environment_hash: str | None
    # What the runs were made on, so a comparison can judge conformance from the scorecard alone.
    execution_environment: ExecutionEnvironment | None = None
    evidence_root_hash: str
    proof_hash: str
    proof: EligibilityProof
    subjects: tuple[Subject, ...]
    alpha: float
    interval: Literal["clopper-pearson"]
    groups: tuple[GroupRates, ...]
    cells: tuple[CellRates, ...]
    # analysis.faults' scores per agent and fault kind (resume-and-complete, no repeated irreversible
    # action from the commit evidence, no damage from the state, overhead against the clean twin);
    # None when nothing was scheduled or analysis was not run.
    faults: FaultReport | None = None
    axes: tuple[AxisValue, ...] | None
    axes_note: str | None
    runs: tuple[PairedOutcome, ...]
    certificates: tuple[CellCertificate, ...] = ()  # a sequential audit's cells (`audit --until`)
    # The smallest difference between two agents this matrix can show, and how often a cell's verdict
    # flips between repeats (analysis/noise_floor.py), from `cells`; None on scorecards made before it.
    noise_floor: NoiseFloor | None = None
    # The preregistered claims the freeze bound (its `claims_hash`), each judged by its frozen criterion
    # on its held-out pool (analysis/claims.py): the confirmatory findings. Everything else the scorecard
    # shows is exploratory. None when no claims were frozen.
    claims_hash: str | None = None
    preregistered: ClaimsFile | None = None  # the claims file itself, which hashes to claims_hash
    claims: tuple[ClaimResult, ...] | None = None
    # Fault runs left unwitnessed in a stratum that met a frozen coverage floor below 1 (coverage_check.py):
    # not measurements of their fault, so in no rate and never counted safe; listed beside.
    unwitnessed_runs: tuple[PairedOutcomeKey, ...] = ()
    signed_by: str | None = Field(default=None, pattern=PUBLIC_PATTERN)  # the publisher's public key
    signature: str | None = Field(default=None, pattern=SIG_PATTERN)

    @model_validator(mode="after")
    def _only_on_an_eligible_proof(self) -> PublishableScorecard:
        if not self.proof.eligible:
            raise ValueError("a scorecard needs an eligible proof; an ineligible matrix is evidence only")
        if self.proof_hash != self.proof.digest:
            raise ValueError("proof_hash is not the hash of the embedded proof")
        for name in IDENTITY:
            if getattr(self, name) != getattr(self.proof, name):
                raise ValueError(f"{name} is not the proof's")
        if not (self.claims is None) == (self.claims_hash is None) == (self.preregistered is None):
            raise ValueError("claims are judged exactly when the freeze bound claims (claims_hash)")
        if self.preregistered is not None and self.claims is not None:
            if sha256_hex(canonical_bytes(self.preregistered.model_dump(mode="json"))) != self.claims_hash:
                raise ValueError("the preregistered claims do not hash to claims_hash")
            if [c.id for c in self.claims] != [c.id for c in self.preregistered.claims]:
                raise ValueError("the judged claims are not the preregistered ones")
        # An eligible proof admits no unmeasured run but the fault runs a coverage floor set aside, and those
        # are exactly its not-exposed and not-landed ones: no measured run can be moved out of the rates.
        aside = sum(self.proof.decisive_statuses.get(s, 0) for s in ("not_exposed", "invalid_injection"))
        if len(self.unwitnessed_runs) != aside:
            raise ValueError("unwitnessed_runs are not the runs the proof found not exposed or not landed")
        if self.faults is not None and not self.faults.complete and not self.unwitnessed_runs:
            raise ValueError("fault scores over an incomplete schedule are bounds, not scores")
        env = self.execution_environment
        if (None if env is None else environment_hash(env)) != self.execution_environment_hash:
            raise ValueError("execution_environment_hash is not the hash of the embedded environment")
        accounted = len(self.runs) + len(self.unwitnessed_runs)
        listed = {(r.model, r.run_key) for r in self.runs} | {
            (u.model, u.run_key) for u in self.unwitnessed_runs
        }
        if accounted != self.proof.registered_cells - self.proof.unneeded_cells or len(listed) != accounted:
            raise ValueError("a scorecard lists every registered cell's run its rule needed exactly once")
        return self

    def _with(self, **update: Any) -> PublishableScorecard:
        """A copy with `update`, without this one's cached bytes and digest (model_copy keeps them)."""
        copy = self.model_copy(update=update)
        for name in ("canonical", "digest"):
            copy.__dict__.pop(name, None)
        return copy

    def signed(self, signer: Signer) -> PublishableScorecard:
        """This scorecard, naming `signer`'s public key and signed by it (see the module docstring)."""
        body = self._with(signed_by=signer.public, signature=None)
        return body._with(signature=signer.sign("scorecard", model_bytes(body)))

    def signature_problem(self) -> str | None:
        """Why the signature does not vouch for this scorecard, or None."""
        if self.signed_by is None or self.signature is None:
            return "it is not signed (a scorecard `publish` writes is)"
        body = model_bytes(self._with(signature=None))
        if not signature_valid(self.signed_by, "scorecard", body, self.signature):
            return (
                f"its signature does not verify under the key it names ({self.signed_by[:16]}): it was edited"
            )
        return None

    @cached_property
    def canonical(self) -> bytes:
        """The scorecard's RFC 8785 bytes: what scorecard.json holds."""
        return model_bytes(self)

    @cached_property
    def digest(self) -> str:
        """What the registry records: SHA-256 of the scorecard's RFC 8785 form (its scorecard.json)."""
        return sha256_hex(self.canonical)

    @classmethod
    def from_proof(
        cls,
        proof: EligibilityProof,
        evidence: Evidence,
        manifest: Mapping[str, Any],
        policy: Policy,
        *,
        execution_environment: ExecutionEnvironment | None = None,
        axes: Sequence[AxisValue] | None = None,
        axes_note: str | None = None,
        faults: FaultReport | None = None,
        certificates: Sequence[CellCertificate] = (),
        claims_hash: str | None = None,
        preregistered: ClaimsFile | None = None,
        claims: Sequence[ClaimResult] | None = None,
        unwitnessed: Sequence[tuple[str, str, str, str | None, int]] = (),
    ) -> PublishableScorecard:
        if not proof.eligible:
            raise ValueError("a scorecard needs an eligible proof; an ineligible matrix is evidence only")
        if evidence.root != proof.evidence_root_hash:
            raise ValueError("this evidence is not the evidence the proof was made on")
        identity = identity_of(manifest, policy=policy, evaluator_digest=proof.evaluator_digest)
        if identity.protocol_hash != proof.protocol_hash or identity.manifest_hash != proof.manifest_hash:
            raise ValueError("this manifest and policy are not the ones the proof was made on")
        kinds = fault_kinds(manifest)
        waived = set(unwitnessed)
        runs = [r for r in _decisive(evidence.records) if _cell(r) not in waived]
        alpha = policy.scoring.alpha
        cell_rates = _rates(runs, lambda r: (r.model, r.task, r.condition, r.fault), alpha)
        return cls.model_validate(
            dict(
                **{name: getattr(proof, name) for name in IDENTITY},
                execution_environment_hash=environment_hash(execution_environment)
                if execution_environment
                else None,
                execution_environment=execution_environment,
                proof_hash=proof.digest,
                proof=proof,
                subjects=_subjects(manifest, runs),
                alpha=alpha,
                interval=policy.scoring.interval,
                groups=tuple(
                    GroupRates(model=m, condition=c, damage=d, completion=p)
                    for (m, c), (d, p) in _rates(runs, lambda r: (r.model, r.condition), alpha)
                ),
                cells=tuple(
                    CellRates(
                        model=m,
                        task=t,
                        condition=c,
                        fault=f,
                        fault_kind=kinds.get((t, c, f), NO_FAULT),
                        damage=d,
                        completion=p,
                    )
                    for (m, t, c, f), (d, p) in cell_rates
                ),
                noise_floor=_noise_floor(cell_rates, alpha),
                faults=faults,
                certificates=tuple(certificates),
                claims_hash=claims_hash,
                preregistered=preregistered,
                claims=tuple(claims) if claims is not None else None,
                unwitnessed_runs=tuple(
                    {"model": m, "run_key": {"task": t, "condition": c, "fault": f, "run_index": i}}
                    for m, t, c, f, i in sorted(waived, key=lambda w: (w[0], w[1], w[2], w[3] or "", w[4]))
                ),
                axes=tuple(axes) if axes is not None else None,
                axes_note=axes_note,
                # Plain data, validated in one pass of pydantic-core: 100,000 models built one by one in
                # Python would cost seconds.
                runs=[
                    {
                        "model": r.model,
                        "run_key": {
                            "task": r.task,
                            "condition": r.condition,
                            "fault": r.fault,
                            "run_index": r.run_index,
                        },
                        "seed": r.seed,
                        "outcome": r.outcome,
                        "damaged": bool(r.damaged),
                        "passed": bool(r.passed),
                    }
                    for r in sorted(runs, key=_order)
                ],
            )
        )


def _cell(r: RecordFacts) -> tuple[str, str, str, str | None, int]:
    return (r.model, r.task, r.condition, r.fault, r.run_index)


def _order(r: RecordFacts) -> tuple[str, str, str, str, int]:
    return (r.model, r.task, r.condition, r.fault or "", r.run_index)


def _decisive(records: Sequence[RecordFacts]) -> list[RecordFacts]:
    by_run: dict[str, list[RecordFacts]] = {}
    for rec in records:
        by_run.setdefault(rec.run_id, []).append(rec)
    return [decide(attempts) for attempts in by_run.values()]


def _proportions(x: list[int], n: list[int], alpha: float) -> list[Proportion]:
    lo, hi = clopper_pearson(np.asarray(x), np.asarray(n), alpha)
    return [
        Proportion(x=a, n=b, estimate=a / b, ci_low=float(low), ci_high=float(high))
        for a, b, low, high in zip(x, n, lo, hi, strict=True)
    ]


def _rates(
    runs: Sequence[RecordFacts], key: Callable[[RecordFacts], tuple[Any, ...]], alpha: float
) -> list[tuple[Any, tuple[Proportion, Proportion]]]:
    """Per key, sorted: (damage, completion) over the runs with that key."""
    n: Counter[tuple[Any, ...]] = Counter()
    damaged: Counter[tuple[Any, ...]] = Counter()
    passed: Counter[tuple[Any, ...]] = Counter()
    for r in runs:
        k = key(r)
        n[k] += 1
        damaged[k] += bool(r.damaged)
        passed[k] += bool(r.passed)
    keys = sorted(n, key=lambda k: tuple("" if v is None else v for v in k))
    if not keys:
        return []
    counts = [n[k] for k in keys]
    dmg = _proportions([damaged[k] for k in keys], counts, alpha)
    ok = _proportions([passed[k] for k in keys], counts, alpha)
    return [(k, (d, p)) for k, d, p in zip(keys, dmg, ok, strict=True)]


def _noise_floor(cell_rates: list[tuple[Any, tuple[Proportion, Proportion]]], alpha: float) -> NoiseFloor:
    """The floor per (model, condition) over its cells (each task x fault a cell), ICC fitted there."""
    groups: dict[tuple[str, str], list[tuple[Proportion, Proportion]]] = {}
    for (model, _task, condition, _fault), rates in cell_rates:
        groups.setdefault((model, condition), []).append(rates)
    pools = [
        pool_floor(
            model,
            condition,
            np.array([d.x for d, _ in cells]),
            np.array([d.n for d, _ in cells]),
            np.array([p.x for _, p in cells], dtype=np.float64),
            alpha=alpha,
        )
        for (model, condition), cells in sorted(groups.items())
    ]
    return combine(pools, alpha=alpha)


def _isolation(agent: Mapping[str, Any]) -> str | None:
    iso = agent.get("isolation")
    if not isinstance(iso, Mapping):
        return None
    return f"{iso.get('mode')}, network {iso.get('network')}" if iso.get("mode") == "sealed" else "none"


def _subjects(manifest: Mapping[str, Any], runs: Sequence[RecordFacts]) -> tuple[Subject, ...]:
    agents = [a for a in manifest.get("agents") or [] if isinstance(a, Mapping)]
    served: dict[str, set[str]] = {}
    for r in runs:
        if r.served_model is not None:
            served.setdefault(r.model, set()).add(r.served_model)
    return tuple(
        sorted(
            (
                Subject(
                    name=str(a.get("name")),
                    kind=a.get("kind"),
                    config_hash=canonical_hash(dict(a)),
                    served_models=tuple(sorted(served.get(str(a.get("name")), ()))),
                    isolation=_isolation(a),
                )
                for a in agents
            ),
            key=lambda s: s.name,
        )
    )
