"""Protocol identity: the content-addressed parts a manifest, the policy and the code resolve to.

- `matrix_hash`: the preregistered cells: tasks with their spec, fixture and template digests,
  conditions with their parameters, the fault schedule, the seed digest and seed rule, k, the attempt
  cap, max steps and sampling. Any manifest key this module does not know is counted here too, so a new
  field can never change the protocol unnoticed.
- `policy_hash`: the publication policy (policy.py), environment policy included.
- `evaluator_digest`: the evaluator's source bytes and library versions (evaluator.py).
- `witness_contracts_hash`: the receipt schemas the witnesses are judged by, with their version.
- `protocol_hash`: the root over those four.
Per result: `subject_config_hash` (the agents' configs, which the manifest stores without secrets) and
`manifest_hash` (SHA-256 of the manifest itself, the protocol hash records carried before the root
existed). The server and package versions are the environment's business (environment.py), not the
protocol's.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from agentrel.harness.faults.receipts import ActuatorReceipt, WitnessReceipt
from agentrel.harness.protocol.canonical import canonical_hash
from agentrel.harness.protocol.evaluator import current_evaluator_digest
from agentrel.harness.protocol.policy import Policy, load_policy, policy_hash
from agentrel.harness.results.manifest import manifest_hash

__all__ = [
    "ProtocolIdentity",
    "ProtocolParts",
    "diff_identity",
    "identity_of",
    "manifest_hash",
    "matrix_view",
    "refusal_message",
    "subject_view",
    "witness_contracts_hash",
]

SEED_RULE = "agentrel-run-seed/1: sha256(task|condition|run_index)"
WITNESS_CONTRACTS = "agentrel-witness-contracts/1"
SUBJECT_KEYS = frozenset({"agents"})
ENVIRONMENT_KEYS = frozenset({"server_version", "package_version"})
PARTS = ("matrix_hash", "policy_hash", "evaluator_digest", "witness_contracts_hash")


class ProtocolParts(BaseModel):
    """The protocol hash, its four parts and the subjects': what every identity-bearing object (the
    identity, a proof, a scorecard, an evidence report, a comparison's input) carries under these names."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    protocol_hash: str
    matrix_hash: str
    policy_hash: str
    evaluator_digest: str
    witness_contracts_hash: str
    subject_config_hash: str


# The identity fields every proof, scorecard and evidence report carries: the parts and its evidence.
IDENTITY = (*ProtocolParts.model_fields, "evidence_root_hash")


class ProtocolIdentity(ProtocolParts):
    manifest_hash: str

    @staticmethod
    def parts() -> tuple[str, ...]:
        """The four parts the protocol hash is the root of."""
        return PARTS


def matrix_view(manifest: Mapping[str, Any]) -> dict[str, Any]:
    view = {k: v for k, v in manifest.items() if k not in SUBJECT_KEYS | ENVIRONMENT_KEYS}
    view.setdefault("seed_rule", SEED_RULE)
    return view


def subject_view(manifest: Mapping[str, Any]) -> dict[str, Any]:
    return {"agents": manifest.get("agents", [])}


@functools.cache
def witness_contracts_hash() -> str:
    return canonical_hash(
        {
            "schema": WITNESS_CONTRACTS,
            "actuator": ActuatorReceipt.model_json_schema(),
            "witness": WitnessReceipt.model_json_schema(),
        }
    )


def protocol_root(matrix: str, policy: str, evaluator: str, witness: str) -> str:
    return canonical_hash(
        {
            "format": "agentrel-protocol/1",
            "matrix_hash": matrix,
            "policy_hash": policy,
            "evaluator_digest": evaluator,
            "witness_contracts_hash": witness,
        }
    )


def identity_of(
    manifest: Mapping[str, Any], *, policy: Policy | None = None, evaluator_digest: str | None = None
) -> ProtocolIdentity:
    """The identity of a manifest under a policy (the shipped one by default) and an evaluator digest
    (this process's code by default)."""
    matrix = canonical_hash(matrix_view(manifest))
    pol = policy_hash(policy or load_policy())
    evaluator = evaluator_digest or current_evaluator_digest()
    witness = witness_contracts_hash()
    return ProtocolIdentity(
        protocol_hash=protocol_root(matrix, pol, evaluator, witness),
        matrix_hash=matrix,
        policy_hash=pol,
        evaluator_digest=evaluator,
        witness_contracts_hash=witness,
        subject_config_hash=canonical_hash(subject_view(manifest)),
        manifest_hash=manifest_hash(manifest),
    )


def diff_identity(a: ProtocolIdentity, b: ProtocolIdentity) -> list[str]:
    """Which of the four protocol parts differ, then subject_config_hash if the subjects differ."""
    return [name for name in (*PARTS, "subject_config_hash") if getattr(a, name) != getattr(b, name)]


def _part_of(key: str) -> str:
    if key in SUBJECT_KEYS:
        return "subject_config_hash"
    return "environment" if key in ENVIRONMENT_KEYS else "matrix_hash"


def refusal_message(old_manifest: Mapping[str, Any], new_manifest: Mapping[str, Any]) -> str | None:
    """Why results written under `old_manifest` cannot take runs of `new_manifest`, naming which part of
    the identity differs and the manifest fields behind it; None when the two are the same manifest.
    (Both are judged under this process's policy and code, so only the matrix, the subjects or the
    environment can differ here; a freeze made under other code is `freeze.frozen_refusal`'s to name.)"""
    if manifest_hash(old_manifest) == manifest_hash(new_manifest):
        return None
    changed = sorted(
        k for k in set(old_manifest) | set(new_manifest) if old_manifest.get(k) != new_manifest.get(k)
    )
    by_part: dict[str, list[str]] = {}
    for key in changed:
        by_part.setdefault(_part_of(key), []).append(key)
    old_m, new_m = canonical_hash(matrix_view(old_manifest)), canonical_hash(matrix_view(new_manifest))
    old_s, new_s = canonical_hash(subject_view(old_manifest)), canonical_hash(subject_view(new_manifest))
    shown = {"matrix_hash": (old_m, new_m), "subject_config_hash": (old_s, new_s)}
    clauses = []
    for part in ("matrix_hash", "subject_config_hash", "environment"):
        if part in by_part:
            hashes = f" {shown[part][0][:12]} -> {shown[part][1][:12]}" if part in shown else ""
            clauses.append(f"{part}{hashes} (changed: {', '.join(by_part[part])})")
    return "the protocol differs: " + "; ".join(clauses)
