"""The freeze: a results directory's protocol, bound before its measured runs (`freeze.json`).

`agentrel audit ... --plan` writes the manifest without running; `agentrel protocol freeze` then writes
the freeze record (the identity hashes, who, when). Runs recorded afterwards carry the freeze's digest in
`frozen_by`; a run without it, or with another digest, or started before the freeze, is evidence only.
A freeze is never rewritten: freezing the same protocol again returns the one on disk, and a different
protocol is an amendment, which belongs in a new results directory.

freeze.json lives in the directory it binds, so whoever can write the directory can re-make it. Freezing
therefore also anchors the freeze outside the directory: a signed `freeze` entry in the registry (the
freeze digest, protocol and matrix hashes, how many runs the directory already held, the registry's own
time). `publish` requires that entry, that the directory held no run when it was made, and that no run
started before it (anchor.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentrel.analysis.claims import ClaimsFile
from agentrel.harness.durable import read_model, write_durably
from agentrel.harness.errors import CheckFailed, EnvironmentFailure, UsageError
from agentrel.harness.protocol.canonical import canonical_bytes, canonical_hash
from agentrel.harness.protocol.claims import claims_hash, write_claims
from agentrel.harness.protocol.identity import ProtocolIdentity, identity_of
from agentrel.harness.protocol.policy import Policy
from agentrel.harness.protocol.registry import RegistryEntry, anchor_freeze, default_registry_path
from agentrel.harness.protocol.signing import Signer
from agentrel.harness.results import layout
from agentrel.harness.results.manifest import read_manifest
from agentrel.harness.results.record import STAMP

__all__ = [
    "Freeze",
    "anchor",
    "freeze_digest",
    "freeze_json",
    "frozen_refusal",
    "load_freeze",
    "make_freeze",
    "planned_manifest",
    "write_freeze",
]

HEX64 = r"^[0-9a-f]{64}$"


class Freeze(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["agentrel-freeze/1"] = "agentrel-freeze/1"
    protocol_hash: str = Field(pattern=HEX64)
    matrix_hash: str = Field(pattern=HEX64)
    policy_hash: str = Field(pattern=HEX64)
    evaluator_digest: str = Field(pattern=HEX64)
    witness_contracts_hash: str = Field(pattern=HEX64)
    subject_config_hash: str = Field(pattern=HEX64)
    manifest_hash: str = Field(pattern=HEX64)
    # SHA-256 of the preregistered claims (claims.py, `claims.json`); absent when none were frozen, and
    # then left out of the freeze's bytes, so a freeze without claims keeps the digest it always had.
    claims_hash: str | None = Field(default=None, pattern=HEX64)
    by: str = Field(min_length=1, max_length=200, pattern=r"\S")
    at: str = Field(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def freeze_json(freeze: Freeze) -> dict[str, Any]:
    """The freeze as freeze.json holds it (no `claims_hash` key when no claims were frozen)."""
    return freeze.model_dump(mode="json", exclude_none=True)


def freeze_digest(freeze: Freeze) -> str:
    """What a record's `frozen_by` holds: SHA-256 of the freeze's RFC 8785 form."""
    return canonical_hash(freeze_json(freeze))


def make_freeze(identity: ProtocolIdentity, by: str, at: datetime, claims_hash: str | None = None) -> Freeze:
    return Freeze(
        protocol_hash=identity.protocol_hash,
        matrix_hash=identity.matrix_hash,
        policy_hash=identity.policy_hash,
        evaluator_digest=identity.evaluator_digest,
        witness_contracts_hash=identity.witness_contracts_hash,
        subject_config_hash=identity.subject_config_hash,
        manifest_hash=identity.manifest_hash,
        claims_hash=claims_hash,
        by=by.strip(),
        at=at.astimezone(UTC).strftime(STAMP),
    )


def planned_manifest(results: Path) -> dict[str, Any]:
    """The manifest `audit --plan` wrote (the results owner's reader); a directory without one is refused."""
    manifest = read_manifest(results)
    if manifest is None:
        raise UsageError(
            f"{results}: no {layout.MANIFEST}; `agentrel audit ... --results {results} --plan` writes it"
        )
    return manifest


def load_freeze(results: Path) -> Freeze | None:
    """The freeze of a results directory, or None while its protocol is a draft."""
    path = results / layout.FREEZE
    return read_model(path, Freeze, "freeze record") if path.exists() else None


def runs_recorded(results: Path) -> int:
    """How many records runs.jsonl holds (a torn last line counts: it was a run)."""
    try:
        data = (results / layout.RUNS).read_bytes()
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise EnvironmentFailure(f"{results / layout.RUNS}: cannot read ({exc.strerror})") from None
    return sum(1 for line in data.split(b"\n") if line.strip())


def anchor(
    results: Path, freeze: Freeze, *, registry: Path | None = None, signer: Signer | None = None
) -> RegistryEntry:
    """The freeze's signed entry in the registry, appended now unless it is there already; the
    directory remembers the registry, where each audit invocation anchors its run journal."""
    from agentrel.harness.protocol.registry_journal import remember_registry

    registry = registry or default_registry_path()
    remember_registry(results, registry, signer.path if signer is not None else None)
    return anchor_freeze(
        registry,
        freeze_digest(freeze),
        freeze.protocol_hash,
        freeze.matrix_hash,
        runs_recorded(results),
        freeze.by,
        signer=signer,
    )


def write_freeze(
    results: Path,
    by: str,
    *,
    policy: Policy | None = None,
    now: datetime | None = None,
    registry: Path | None = None,
    signer: Signer | None = None,
    claims: ClaimsFile | None = None,
) -> tuple[Freeze, bool]:
    """Freeze the directory's protocol and anchor it in the registry: (the freeze, whether this call
    wrote freeze.json). An existing freeze of this protocol that the registry lacks is anchored now (with
    the runs the directory holds by then, which `publish` refuses). `claims`: the preregistered claims
    (claims.py), written to claims.json and bound by the freeze; refused once the directory holds a run
    or a freeze without these very claims."""
    if not by.strip():
        raise UsageError("--by must name who freezes the protocol")
    manifest = planned_manifest(results)
    identity = identity_of(manifest, policy=policy)
    old = load_freeze(results)
    wanted = claims_hash(claims) if claims is not None else None
    if old is not None:
        why = _refusal(old, identity)
        if why is None and claims is not None and old.claims_hash != wanted:
            why = (
                f"frozen by {old.by} at {old.at} "
                + ("without claims" if old.claims_hash is None else "with other claims")
                + ": claims cannot be added or changed after the freeze"
            )
        if why is None:
            anchor(results, old, registry=registry, signer=signer)
            return old, False
        raise CheckFailed(
            f"{results / layout.FREEZE}: {why}. A changed protocol is an amendment: freeze it in a new "
            "results directory"
        )
    if claims is not None:
        if held := runs_recorded(results):
            raise CheckFailed(
                f"{results}: already holds {held} recorded runs: claims are preregistered before the "
                "measured runs; freeze them in a new results directory"
            )
        write_claims(results, claims)
    freeze = make_freeze(identity, by, now or datetime.now(UTC), wanted)
    path = results / layout.FREEZE
    try:
        if not write_durably(path, canonical_bytes(freeze_json(freeze)), replace=False):
            # another process froze meanwhile
            return write_freeze(
                results, by, policy=policy, now=now, registry=registry, signer=signer, claims=claims
            )
    except OSError as exc:
        raise EnvironmentFailure(f"{path}: cannot write the freeze ({exc.strerror})") from None
    anchor(results, freeze, registry=registry, signer=signer)
    return freeze, True


def _refusal(freeze: Freeze, identity: ProtocolIdentity) -> str | None:
    if freeze.protocol_hash == identity.protocol_hash and freeze.manifest_hash == identity.manifest_hash:
        return None
    names = (*identity.parts(), "subject_config_hash", "manifest_hash")
    parts = [n for n in names if getattr(freeze, n) != getattr(identity, n)]
    return (
        f"frozen by {freeze.by} at {freeze.at} under protocol {freeze.protocol_hash[:12]}, but this "
        f"manifest and code give {identity.protocol_hash[:12]} (differs: {', '.join(parts)})"
    )


def frozen_refusal(
    freeze: Freeze, manifest: Mapping[str, Any], *, policy: Policy | None = None
) -> str | None:
    """Why runs of `manifest` may not be recorded under `freeze` (naming the parts that differ), or
    None. For the runner: a frozen directory runs only the protocol it froze."""
    return _refusal(freeze, identity_of(manifest, policy=policy))
