"""The publication policy: the rules that turn evidence into permission, as data with schema versions.

Shipped as `policy.json` beside this module. Its RFC 8785 hash is the `policy_hash` of the protocol
identity, so changing any rule (a status that counts as measured, the interval's alpha, a comparison
requirement, an environment factor) is a new protocol, never an in-place edit. The environment policy is
`harness.protocol.environment`'s `DEFAULT_POLICY` unless policy.json gives its own.

What the rules cannot loosen is fixed in code, not here: a freeze must exist and bind the protocol, every
record must have run under it, the cell set must be exact. Policy chooses parameters, never whether to
check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from agentrel.harness.durable import read_model
from agentrel.harness.frozen import Frozen
from agentrel.harness.protocol.canonical import canonical_hash
from agentrel.harness.protocol.environment import DEFAULT_POLICY, EnvironmentPolicy

__all__ = ["POLICY_FILE", "Policy", "load_policy", "policy_hash"]

POLICY_FILE = Path(__file__).with_name("policy.json")
VALID = "valid"


class EligibilityRules(Frozen):
    schema_version: Literal["agentrel-eligibility-rules/1"] = "agentrel-eligibility-rules/1"
    # Decisive statuses a registered cell may end in and still count as measured.
    measured_statuses: tuple[str, ...] = (VALID,)
    # What a record's protocol_hash may be: the identity's root, which the runner stamps (protocol.json);
    # a policy may also admit the manifest's own hash, which records carried before the root existed
    # and which the freeze binds beside the root.
    record_binding: Literal["protocol_hash", "protocol_or_manifest_hash"] = "protocol_hash"
    strata: tuple[Literal["condition", "fault_kind", "task"], ...] = ("condition", "fault_kind", "task")

    @field_validator("measured_statuses")
    @classmethod
    def _valid_only_widens(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if VALID not in value:
            raise ValueError("measured_statuses must include 'valid'")
        return tuple(sorted(set(value)))


class WitnessRules(Frozen):
    schema_version: Literal["agentrel-witness-rules/1"] = "agentrel-witness-rules/1"
    # A fault-scheduled cell is witnessed when its decisive status is one of these, its record carries an
    # actuator and a witness receipt for the cell's fault id, and the verdict recomputed from the two
    # (harness.faults.receipts.verdict) is `witnessed`, agreeing with the stored one.
    fault_statuses: tuple[str, ...] = (VALID,)
    receipts: Literal["actuator_and_witness"] = "actuator_and_witness"
    verdict: Literal["recomputed"] = "recomputed"


class ScoringRules(Frozen):
    schema_version: Literal["agentrel-scoring-rules/1"] = "agentrel-scoring-rules/1"
    alpha: float = Field(default=0.05, gt=0, lt=1)
    interval: Literal["clopper-pearson"] = "clopper-pearson"
    # As analysis.load_results: FAIL_DAMAGE, or an agent error after a mutation; passed = PASS, undamaged.
    damage: Literal["fail_damage_or_mutation_then_agent_error"] = "fail_damage_or_mutation_then_agent_error"
    aggregation: Literal["runs_per_model_condition_cell_and_fault_kind"] = (
        "runs_per_model_condition_cell_and_fault_kind"
    )
    axes_bootstrap: int = Field(default=2000, ge=0)
    axes_seed: int = 0


class ComparisonRules(Frozen):
    schema_version: Literal["agentrel-comparison-rules/1"] = "agentrel-comparison-rules/1"
    requires: tuple[str, ...] = (
        "publishable_scorecards",
        "equal_protocol_hash",
        "equal_cell_set",
        "conforming_environments",
        "distinct_subject_config_hashes",
        "active_in_registry",
    )
    paired_test: Literal["mcnemar_exact"] = "mcnemar_exact"
    bootstrap: Literal["cluster_by_task"] = "cluster_by_task"
    n_boot: int = Field(default=2000, ge=1)
    alpha: float = Field(default=0.05, gt=0, lt=1)
    seed: int = 0


class PublicationRules(Frozen):
    schema_version: Literal["agentrel-publication-rules/1"] = "agentrel-publication-rules/1"
    scorecard_files: tuple[str, ...] = ("scorecard.json", "scorecard.md", "scorecard.html")
    evidence_files: tuple[str, ...] = ("evidence_report.json", "evidence_report.md")
    register_in_registry: bool = True


class Policy(Frozen):
    format: Literal["agentrel-policy/1"] = "agentrel-policy/1"
    eligibility: EligibilityRules = EligibilityRules()
    witness: WitnessRules = WitnessRules()
    scoring: ScoringRules = ScoringRules()
    comparison: ComparisonRules = ComparisonRules()
    publication: PublicationRules = PublicationRules()
    environment: EnvironmentPolicy = DEFAULT_POLICY


def policy_hash(policy: Policy) -> str:
    return canonical_hash(policy.model_dump(mode="json"))


def load_policy(path: Path | None = None) -> Policy:
    """The shipped policy.json, or the file given; one line naming the field when it is not a policy."""
    return read_model(path or POLICY_FILE, Policy, "publication policy", "fix the field named")
