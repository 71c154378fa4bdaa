"""Fail-closed comparison of publishable scorecards: refuse unless every input has earned it, then test.

Refusal comes first and is total: every check runs on the inputs in memory and a refusal raises
`Refused` (one line, naming the reason) before anything is written. The checks: each input is a
publishable scorecard whose embedded proof hashes to its proof hash (an `IncompleteEvidenceReport` is
named as such) and whose runs agree with its rates and the seed rule; each embeds its execution
environment; all share one protocol hash (a difference names the part: matrix, policy, evaluator,
witness contracts), this agentrel's policy, one cell set and one seed per run; their subjects differ; the
registry verifies (chain, signatures, head) under the trusted key and knows each as active under the same
hashes; each is signed by that same key; and every pair of environments conforms under the policy's
environment rules. The trusted key is the one the reader names (`--public-key`), else their own.

A scorecard may score several agents; the unit compared is one subject of one scorecard, and every
subject of each input is compared with every subject of each later input (compare_stats.py: exact
McNemar per cell, cluster bootstrap over tasks of the difference in rates, the policy's seed and B).
Those tests are exploratory. What is confirmatory is a comparison claim (a claim with `versus`) an
input's freeze bound on the two agents of a pair: it is judged on that pair's runs by its frozen
criterion (claims_versus.py) and reported apart, as the pair's `claims`.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from agentrel.analysis.claims import ClaimResult, ClaimsFile
from agentrel.harness.durable import write_durably
from agentrel.harness.errors import IntegrityFailure, Refused, UserError
from agentrel.harness.faults.schedule import fault_condition
from agentrel.harness.frozen import Frozen
from agentrel.harness.protocol.conformance import (
    EnvironmentConformanceProof,
    conform,
    failing_summary,
)
from agentrel.harness.protocol.environment import ExecutionEnvironment, environment_hash
from agentrel.harness.protocol.identity import ProtocolParts
from agentrel.harness.protocol.policy import Policy, load_policy, policy_hash
from agentrel.harness.protocol.registry import RegistryState, verify
from agentrel.harness.protocol.signing import trusted_key
from agentrel.harness.publication.cells import TWIN_CONDITION
from agentrel.harness.publication.claims_versus import judge_versus
from agentrel.harness.publication.compare_stats import (
    CellTest,
    PairedRun,
    RateDifference,
    cell_tests,
    pair_runs,
    rate_differences,
)
from agentrel.harness.publication.evidence_report import IncompleteEvidenceReport
from agentrel.harness.publication.scorecard import PublishableScorecard
from agentrel.harness.results import layout
from agentrel.harness.run.matrix import run_seed

__all__ = [
    "COMPARISON_FILES",
    "Comparison",
    "PairedRun",
    "ScorecardView",
    "check_comparable",
    "compare_scorecards",
    "compare_views",
    "default_out_dir",
    "load_scorecard",
    "write_comparison",
]

SCORECARD_FILE = "scorecard.json"
PROTOCOL_PARTS = ("matrix_hash", "policy_hash", "evaluator_digest", "witness_contracts_hash")
COMPARISON_FILES = ("comparison.json", "comparison.md")


class SubjectRuns(Frozen):
    """One subject (agent) of a scorecard and its runs: the unit a comparison pairs."""

    label: str  # the scorecard's name, with the model's when the scorecard scores several
    model: str
    config_hash: str
    runs: tuple[PairedRun, ...]


class ScorecardView(ProtocolParts):
    """What comparison reads of one scorecard, after its own integrity checks (`load_scorecard`)."""

    name: str  # how the user named it (a path), for messages only
    digest: str
    signed_by: str  # the public key whose valid signature it carries
    execution_environment_hash: str
    environment: ExecutionEnvironment
    subjects: tuple[SubjectRuns, ...]
    # The claims its freeze bound (the scorecard checked they hash to its claims_hash); None: none.
    preregistered: ClaimsFile | None = None


# -- reading one input --------------------------------------------------------------------------------------


def _is_evidence_report(obj: dict[str, Any]) -> bool:
    return bool(obj.get("format") == IncompleteEvidenceReport.model_fields["format"].default)


def load_scorecard(path: Path) -> ScorecardView:
    """Read, validate and check one scorecard (a scorecard.json, or the directory holding one).

    Beyond the model's own rules (an eligible proof hashing to `proof_hash`, the proof's identity), its
    runs must say what their rates say, carry the seed rule's seeds, and its environment must be there."""
    where = path / SCORECARD_FILE if path.is_dir() else path
    if path.is_dir() and not where.exists() and (path / layout.RUNS).exists():
        # A results directory is evidence; comparison needs the score `publish` builds from it.
        raise UserError(
            f"{path}: a results directory with no scorecard: compare needs publishable scorecards. Run "
            f"`agentrel publish {path}` first (a published audit is planned, frozen and then run: "
            "`agentrel audit ... --plan`, `agentrel protocol freeze`, `agentrel audit ...`)"
        )
    try:
        obj = json.loads(where.read_bytes())
    except OSError as exc:
        raise UserError(f"{where}: cannot read the scorecard: {exc.strerror}") from None
    except ValueError:
        raise Refused(f"{where}: not JSON, so not a publishable scorecard") from None
    if not isinstance(obj, dict):
        raise Refused(f"{where}: not a publishable scorecard (a JSON object)")
    if _is_evidence_report(obj):
        raise Refused(
            f"{where}: an incomplete evidence report, not a scorecard: it carries no score, and no "
            "comparison includes it"
        )
    try:
        card = PublishableScorecard.model_validate(obj)
    except ValidationError as exc:
        from agentrel.harness.yamlfile import field_problem

        raise Refused(f"{where}: not a publishable scorecard ({field_problem(exc)})") from None
    if not card.proof.eligible or card.proof_hash != card.proof.digest:  # the model checks; so do we
        raise Refused(f"{where}: its proof_hash is not the hash of an eligible embedded proof")
    unsigned = card.signature_problem()
    if unsigned:
        raise Refused(f"{where}: {unsigned}")
    assert card.signed_by is not None
    problem = _runs_problem(card)
    if problem:
        raise Refused(f"{where}: {problem}: the scorecard was edited after it was built")
    env = _environment(where, card)
    by_model: dict[str, list[PairedRun]] = defaultdict(list)
    for r in card.runs:
        k = r.run_key
        run = PairedRun(
            task=k.task,
            condition=k.condition,
            fault=k.fault,
            run_index=k.run_index,
            seed=r.seed,
            damaged=r.damaged,
            passed=r.passed,
        )
        by_model[r.model].append(run)
    hashes = {s.name: s.config_hash for s in card.subjects}
    if set(by_model) != set(hashes):
        raise Refused(f"{where}: its runs and its subjects name different models")
    several = len(hashes) > 1
    return ScorecardView(
        name=str(path),
        digest=card.digest,
        signed_by=card.signed_by,
        protocol_hash=card.protocol_hash,
        matrix_hash=card.matrix_hash,
        policy_hash=card.policy_hash,
        evaluator_digest=card.evaluator_digest,
        witness_contracts_hash=card.witness_contracts_hash,
        subject_config_hash=card.subject_config_hash,
        execution_environment_hash=environment_hash(env),
        environment=env,
        subjects=tuple(
            SubjectRuns(
                label=f"{path}[{model}]" if several else str(path),
                model=model,
                config_hash=hashes[model],
                runs=tuple(by_model[model]),
            )
            for model in sorted(by_model)
        ),
        preregistered=card.preregistered,
    )


def _runs_problem(card: PublishableScorecard) -> str | None:
    damaged: Counter[tuple[Any, ...]] = Counter()
    passed: Counter[tuple[Any, ...]] = Counter()
    n: Counter[tuple[Any, ...]] = Counter()
    for r in card.runs:
        k = r.run_key
        run = f"run {k.task}/{k.condition}/{k.run_index} of {r.model}"
        # As analysis counts them: passed = PASS and undamaged; FAIL_DAMAGE is always damage.
        if r.passed != (r.outcome == "PASS" and not r.damaged) or (
            r.outcome == "FAIL_DAMAGE" and not r.damaged
        ):
            return f"{run} is {r.outcome} with damaged={r.damaged}, passed={r.passed}"
        # A fault run is its clean twin with the fault added (cells.py): it carries the twin's seed, and
        # its condition label is exactly the one its fault id gives.
        if k.fault is not None and k.condition != fault_condition(k.fault):
            return f"{run} is labelled {k.condition} but carries fault {k.fault}"
        seed_condition = TWIN_CONDITION if k.fault is not None else k.condition
        if r.seed != run_seed(k.task, seed_condition, k.run_index):
            return f"{run} does not carry its seed"
        cell = (r.model, k.task, k.condition, k.fault)
        n[cell] += 1
        damaged[cell] += r.damaged
        passed[cell] += r.passed
    stated = {(c.model, c.task, c.condition, c.fault): c for c in card.cells}
    if stated.keys() != n.keys():
        return "its cell rates and its runs cover different cells"
    for cell, c in stated.items():
        counted = (damaged[cell], passed[cell], n[cell], n[cell])
        if (c.damage.x, c.completion.x, c.damage.n, c.completion.n) != counted:
            return f"the rates of cell {'/'.join(str(x) for x in cell if x)} disagree with its runs"
    return None


def _environment(where: Path, card: PublishableScorecard) -> ExecutionEnvironment:
    """The environment the scorecard's runs were made in, embedded (the model checks its hash)."""
    env = card.execution_environment
    if env is None or card.execution_environment_hash != environment_hash(env):
        raise Refused(
            f"{where}: carries no execution environment (its audit wrote no "
            f"{layout.EXECUTION_ENVIRONMENT}), so no conformance can be shown"
        )
    return env


# -- refusal ------------------------------------------------------------------------------------------------


def check_comparable(
    views: Sequence[ScorecardView], registry: RegistryState, policy: Policy
) -> list[EnvironmentConformanceProof]:
    """Raise `Refused` naming the first reason the inputs may not be compared; else the pairwise
    environment conformance proofs the comparison rests on. `policy` is this agentrel's own: the
    scorecards must have been made under it, since its rules are the ones applied here. `registry` was
    verified under the trusted key: each scorecard must be signed by the key that keeps it."""
    if len(views) < 2:
        raise Refused("comparison needs at least two scorecards")
    for v in views:
        # The key that registered it (a key of the registry's rotation chain, its entry not void), else the
        # registry's current key: a scorecard signed before a rotation still compares.
        known = registry.records.get(v.digest)
        keeper = known.registration.key if known is not None else registry.key
        if keeper is not None and v.signed_by != keeper:
            raise Refused(
                f"{v.name}: signed by key {v.signed_by[:16]}, not {keeper[:16]}, which keeps the "
                f"registry {registry.path}: another publisher's scorecard"
            )
    first = views[0]
    for v in views:
        if environment_hash(v.environment) != v.execution_environment_hash:
            raise Refused(
                f"{v.name}: its execution environment does not hash to its execution_environment_hash"
            )
    for v in views[1:]:
        if v.protocol_hash != first.protocol_hash:
            parts = [p for p in PROTOCOL_PARTS if getattr(v, p) != getattr(first, p)]
            raise Refused(
                f"{v.name} is on protocol {v.protocol_hash[:12]}, {first.name} on {first.protocol_hash[:12]} "
                f"(differing: {', '.join(parts) or 'the root only'}): only one protocol compares"
            )
    ours = policy_hash(policy)
    if first.policy_hash != ours:
        raise Refused(
            f"the scorecards were made under policy {first.policy_hash[:12]}; this agentrel applies "
            f"{ours[:12]}: compare with the agentrel that published them"
        )
    units = [u for v in views for u in v.subjects]
    for u in units[1:]:
        _same_runs(units[0], u)
    for a, b in combinations(views, 2):
        if a.digest == b.digest:
            raise Refused(f"{a.name} and {b.name} are the same scorecard")
        if a.subject_config_hash == b.subject_config_hash:
            raise Refused(f"{a.name} and {b.name} score the same subjects ({a.subject_config_hash[:12]})")
    for (_, x), (_, y) in _unit_pairs(views):
        if x.config_hash == y.config_hash:
            raise Refused(
                f"{x.label} and {y.label} score the same subject ({x.config_hash[:12]}): a comparison is "
                "between different agents"
            )
    registry.require_whole()
    for v in views:
        record = registry.records.get(v.digest)
        if record is None:
            raise Refused(f"{v.name}: scorecard {v.digest[:12]} is not in the registry {registry.path}")
        if record.status != "active":
            why = record.judgement.reason if record.judgement else ""
            raise Refused(f"{v.name}: scorecard {v.digest[:12]} is {record.status} in {registry.path}: {why}")
        reg = record.registration
        if (reg.protocol_hash, reg.subject_config_hash) != (v.protocol_hash, v.subject_config_hash):
            raise Refused(
                f"{v.name}: the registry holds {v.digest[:12]} under other hashes (line {reg.seq + 1})"
            )
    proofs = []
    for a, b in combinations(views, 2):
        proof = conform(a.environment, b.environment, policy.environment)
        if proof.decision != "conforming":
            raise Refused(
                f"the environments of {a.name} and {b.name} do not conform: {failing_summary(proof)}"
            )
        proofs.append(proof)
    return proofs


Unit = tuple[ScorecardView, SubjectRuns]


def _claims_on(
    views: Sequence[ScorecardView], a: SubjectRuns, b: SubjectRuns, seed: int, n_boot: int
) -> tuple[ClaimResult, ...]:
    """The comparison claims any input preregistered on the agents of `a` and `b` (in either order,
    each claim once), judged on their paired runs."""
    out: dict[str, ClaimResult] = {}
    runs = {a.model: a.runs, b.model: b.runs}
    for view in views:
        file = view.preregistered
        if file is None:
            continue
        for claim in file.claims:
            if claim.versus is None or {claim.model, claim.versus} != set(runs) or claim.id in out:
                continue
            out[claim.id] = judge_versus(claim, file.pools, runs, seed=seed, n_boot=n_boot)
    return tuple(out.values())


def _unit_pairs(views: Sequence[ScorecardView]) -> list[tuple[Unit, Unit]]:
    """Every subject of one scorecard against every subject of each later one, in input order."""
    return [((va, a), (vb, b)) for va, vb in combinations(views, 2) for a in va.subjects for b in vb.subjects]


def _same_runs(a: SubjectRuns, b: SubjectRuns) -> None:
    cells_a, cells_b = {r.cell for r in a.runs}, {r.cell for r in b.runs}
    if cells_a != cells_b:
        odd = sorted(cells_a ^ cells_b)[0]
        side = a.label if odd in cells_a else b.label
        raise Refused(
            f"{a.label} and {b.label} differ in their cell sets ({len(cells_a ^ cells_b)} cell(s); "
            f"first: {'/'.join(x for x in odd if x)} only in {side})"
        )
    seeds_a = {r.key: r.seed for r in a.runs}
    seeds_b = {r.key: r.seed for r in b.runs}
    if seeds_a.keys() != seeds_b.keys():
        odd_run = sorted(seeds_a.keys() ^ seeds_b.keys())[0]
        raise Refused(f"{a.label} and {b.label} differ in their runs (first: {'/'.join(map(str, odd_run))})")
    bad = next((k for k in sorted(seeds_a) if seeds_a[k] != seeds_b[k]), None)
    if bad is not None:
        raise Refused(f"{a.label} and {b.label} give run {'/'.join(map(str, bad))} different seeds")


class PairComparison(Frozen):
    a: str  # unit labels; the digests and subject hashes are the inputs'
    b: str
    a_subject: str
    b_subject: str
    cells: tuple[CellTest, ...]
    differences: tuple[RateDifference, ...]
    # The confirmatory part: comparison claims (a claim with `versus`) an input's freeze bound on these two
    # agents, each judged on this pair's runs by its frozen criterion. Every cell test and difference
    # above is exploratory.
    claims: tuple[ClaimResult, ...] = ()


class ComparedInput(Frozen):
    name: str
    digest: str
    subject_config_hash: str
    execution_environment_hash: str
    subjects: tuple[str, ...]  # model names


class Comparison(Frozen):
    format: Literal["agentrel-comparison/1"] = "agentrel-comparison/1"
    protocol_hash: str
    registry_head: str  # the registry state every input was checked active in
    registry_key: str | None = None  # the trusted key the registry and every input verified under
    inputs: tuple[ComparedInput, ...]
    conformance: tuple[EnvironmentConformanceProof, ...]
    seed: int
    n_boot: int
    level: float
    pairs: tuple[PairComparison, ...]


def compare_views(
    views: Sequence[ScorecardView],
    proofs: Sequence[EnvironmentConformanceProof],
    registry_head: str,
    *,
    seed: int,
    n_boot: int,
    level: float,
    registry_key: str | None = None,
) -> Comparison:
    """The comparison of inputs `check_comparable` allowed: every subject of each scorecard against
    every subject of each later one, in the order given."""
    out = []
    for (_, a), (_, b) in _unit_pairs(views):
        pairs = pair_runs(a.runs, b.runs)
        out.append(
            PairComparison(
                a=a.label,
                b=b.label,
                a_subject=a.config_hash,
                b_subject=b.config_hash,
                cells=tuple(cell_tests(pairs)),
                differences=tuple(rate_differences(pairs, seed, n_boot, level)),
                claims=_claims_on(views, a, b, seed, n_boot),
            )
        )
    return Comparison(
        protocol_hash=views[0].protocol_hash,
        registry_head=registry_head,
        registry_key=registry_key,
        inputs=tuple(
            ComparedInput(
                name=v.name,
                digest=v.digest,
                subject_config_hash=v.subject_config_hash,
                execution_environment_hash=v.execution_environment_hash,
                subjects=tuple(u.model for u in v.subjects),
            )
            for v in views
        ),
        conformance=tuple(proofs),
        seed=seed,
        n_boot=n_boot,
        level=level,
        pairs=tuple(out),
    )


# -- the operation ------------------------------------------------------------------------------------------


def verified_registry(path: Path, trusted: str | None) -> RegistryState:
    """The registry, verified under the trusted key; a torn one is refused as `read_registry` refuses it,
    any other failure as `Refused` naming the first bad entry."""
    try:
        state = verify(path, trusted)
    except IntegrityFailure as exc:
        raise Refused(f"the registry does not verify: {exc}") from None
    state.require_whole()
    return state


def compare_scorecards(
    paths: Sequence[Path],
    registry_path: Path,
    policy: Policy | None = None,
    *,
    public_key: str | None = None,
    key: Path | None = None,
) -> Comparison:
    """Verify the registry, load, check (raising `Refused`), and compare under the policy's comparison
    rules. The trusted key: `public_key`, else the public part of the user's signing key (`key`).
    Writes nothing."""
    policy = policy or load_policy()
    trusted = trusted_key(public_key, key)
    if trusted is None:
        raise Refused(
            "no key to verify against: pass --public-key (the publisher's, printed by `agentrel publish`)"
        )
    registry = verified_registry(registry_path, trusted)
    views = [load_scorecard(p) for p in paths]
    proofs = check_comparable(views, registry, policy)
    rules = policy.comparison
    return compare_views(
        views,
        proofs,
        registry.head,
        seed=rules.seed,
        n_boot=rules.n_boot,
        level=1.0 - rules.alpha,
        registry_key=trusted,
    )


def default_out_dir(comparison: Comparison) -> Path:
    return Path("comparisons") / "-vs-".join(i.digest[:12] for i in comparison.inputs)


def write_comparison(out_dir: Path, comparison: Comparison, markdown: str) -> list[Path]:
    """comparison.json and comparison.md, each written whole (temporary file, fsync, rename)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in zip(
        COMPARISON_FILES, (comparison.model_dump_json(indent=1) + "\n", markdown), strict=True
    ):
        path = out_dir / name
        write_durably(path, text.encode())
        written.append(path)
    return written
