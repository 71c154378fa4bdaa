"""Environment conformance: two observed execution environments judged under the policy, and the
results directory's `execution_environment.json`, which a resume keeps only while it conforms.

`conform()` is pure: two environments and a policy in, a proof out. Two readings of "the same" factor
through different contracts (the server's `SHOW server_version` and the client's `psql --version`) are
not comparable, however close their values: the source check comes before any match rule, so a
tolerance can never paper over a change of instrument.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from agentrel.harness.durable import read_model, write_durably
from agentrel.harness.errors import EnvironmentFailure, UsageError
from agentrel.harness.frozen import Frozen
from agentrel.harness.protocol.canonical import canonical_bytes
from agentrel.harness.protocol.environment import (
    CLASSIFIERS,
    DEFAULT_POLICY,
    EnvironmentPolicy,
    Exact,
    ExecutionEnvironment,
    Factor,
    Observation,
    SameClass,
    Tolerance,
    Value,
    environment_hash,
    environment_policy_hash,
)
from agentrel.harness.results import layout

__all__ = [
    "EnvironmentConformanceProof",
    "FactorVerdict",
    "conform",
    "failing_summary",
    "read_execution_environment",
    "write_execution_environment",
]


VerdictCode = Literal[
    "match",  # equal, in the same class, or within tolerance
    "missing",  # a required factor was not observed (or could not be read) on one side
    "missing_noted",  # an optional factor was not observed: recorded, not decisive
    "source_mismatch",  # read by another contract than the policy's: not comparable at all
    "not_reproducible",  # the recorded value does not follow from the recorded raw text
    "drift",  # observed on both sides by the policy's contract, and the match rule fails
    "drift_noted",  # as drift, on a factor whose policy only notes drift
]
FAILING: frozenset[str] = frozenset({"missing", "source_mismatch", "not_reproducible", "drift"})


class FactorVerdict(Frozen):
    factor: str
    passed: bool
    code: VerdictCode
    reason: str
    reference: Value | None
    candidate: Value | None


class EnvironmentConformanceProof(Frozen):
    format: Literal["agentrel-environment-conformance/1"] = "agentrel-environment-conformance/1"
    policy_hash: str
    reference_hash: str
    candidate_hash: str
    decision: Literal["conforming", "non_conforming"]
    reason_codes: tuple[str, ...]  # sorted, distinct; empty when conforming
    factors: tuple[FactorVerdict, ...]


def _usable(obs: Observation | None) -> bool:
    return obs is not None and obs.error is None and obs.raw is not None and obs.value is not None


def _matches(rule: Exact | SameClass | Tolerance, ref: Value, cand: Value) -> tuple[bool, str]:
    if isinstance(rule, Exact):
        return ref == cand, "exact"
    if isinstance(rule, SameClass):
        classify = CLASSIFIERS[rule.classifier]
        a, b = classify(ref), classify(cand)
        return a == b, f"{rule.classifier} {a!r} vs {b!r}"
    bound = max(rule.absolute, rule.relative * abs(float(ref)))
    return abs(float(cand) - float(ref)) <= bound, f"|difference| <= {bound:g}"


def _judge(factor: Factor, ref: Observation | None, cand: Observation | None) -> FactorVerdict:
    def verdict(code: VerdictCode, reason: str) -> FactorVerdict:
        return FactorVerdict(
            factor=factor.name,
            passed=code not in FAILING,
            code=code,
            reason=reason,
            reference=ref.value if ref else None,
            candidate=cand.value if cand else None,
        )

    absent = [side for side, o in (("reference", ref), ("candidate", cand)) if not _usable(o)]
    if absent:
        why = "; ".join(
            f"{side}: {(o.error if o else None) or 'not observed'}"
            for side, o in (("reference", ref), ("candidate", cand))
            if side in absent
        )
        return verdict("missing" if factor.on_missing == "fail" else "missing_noted", why)
    assert ref is not None and cand is not None
    # The instrument first: no match rule applies to values read by different contracts.
    for side, obs in (("reference", ref), ("candidate", cand)):
        if obs.source != factor.source:
            return verdict(
                "source_mismatch", f"{side} read by {obs.source}, the policy reads {factor.source}"
            )
    for side, obs in (("reference", ref), ("candidate", cand)):
        try:
            again: Value | None = factor.normalize(obs.raw or "")
        except ValueError:
            again = None
        if again != obs.value:
            return verdict("not_reproducible", f"{side} raw {obs.raw!r} gives {again!r}, not {obs.value!r}")
    assert ref.value is not None and cand.value is not None
    ok, how = _matches(factor.match, ref.value, cand.value)
    if ok:
        return verdict("match", how)
    return verdict("drift" if factor.on_drift == "fail" else "drift_noted", f"{how}: fails")


def conform(
    reference: ExecutionEnvironment,
    candidate: ExecutionEnvironment,
    policy: EnvironmentPolicy = DEFAULT_POLICY,
) -> EnvironmentConformanceProof:
    """Every factor of `policy`, judged on both environments; conforming only if none fails.

    An environment observed under another policy fails as a whole (`policy_mismatch`): its readings
    were taken to other rules, whatever the individual factors say."""
    digest = environment_policy_hash(policy)
    factors = tuple(_judge(f, reference.get(f.name), candidate.get(f.name)) for f in policy.factors)
    codes: set[str] = {v.code for v in factors if not v.passed}
    if reference.policy_hash != digest or candidate.policy_hash != digest:
        codes.add("policy_mismatch")
    return EnvironmentConformanceProof(
        policy_hash=digest,
        reference_hash=environment_hash(reference),
        candidate_hash=environment_hash(candidate),
        decision="non_conforming" if codes else "conforming",
        reason_codes=tuple(sorted(codes)),
        factors=factors,
    )


def failing_summary(proof: EnvironmentConformanceProof) -> str:
    """One clause naming the first failing factor, for one-line refusals."""
    bad = [v for v in proof.factors if not v.passed]
    if not bad:
        return "observed under another environment policy" if proof.reason_codes else "conforming"
    first = bad[0]
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    return f"{first.factor}: {first.code}: {first.reason}{more}"


def read_execution_environment(path: Path) -> ExecutionEnvironment:
    return read_model(path, ExecutionEnvironment, "execution environment")


def write_execution_environment(
    results_dir: Path, env: ExecutionEnvironment, policy: EnvironmentPolicy = DEFAULT_POLICY
) -> Path:
    """Write `results_dir/execution_environment.json` atomically, or keep the one already there.

    A results directory describes one environment: a resume whose observation conforms to the recorded
    one under `policy` keeps the recorded file (first observation stands); one that does not conform is
    refused, since its runs would be pooled with runs made elsewhere."""
    path = results_dir / layout.EXECUTION_ENVIRONMENT
    if path.exists():
        old = read_execution_environment(path)
        if old == env:
            return path
        proof = conform(old, env, policy)
        if proof.decision != "conforming":
            raise UsageError(
                f"{path}: this host's environment does not conform to the one the recorded runs were made "
                f"in ({failing_summary(proof)}); use another --results directory"
            )
        return path
    results_dir.mkdir(parents=True, exist_ok=True)
    try:
        write_durably(path, canonical_bytes(env.model_dump(mode="json")))
    except OSError as exc:
        raise EnvironmentFailure(f"{path}: cannot write the execution environment ({exc.strerror})") from None
    return path
