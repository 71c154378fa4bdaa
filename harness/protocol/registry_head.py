"""The signed registry head: `<registry>.head` beside the registry, re-signed with every append.

The hash chain and the entries' signatures catch an edited, inserted or re-chained line, but not a cut:
deleting the last lines (a withdrawal, say) leaves a shorter registry whose every line still verifies.
The head is the key holder's signed statement "this registry holds N entries, the last hashing to H";
a registry shorter than its head, or with another last hash, has been cut or swapped. A head that lags
the file by whole, validly signed entries is an append interrupted between its line and its head, which
`agentrel registry repair` re-signs; a missing head is never re-made (that would bless a cut).

What the head cannot catch is a rollback to an older registry together with that older head, both kept
by whoever rolls back: a head someone kept elsewhere (`registry verify --head`) catches that.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentrel.harness.durable import write_durably
from agentrel.harness.errors import EnvironmentFailure, IntegrityFailure
from agentrel.harness.protocol.canonical import canonical_bytes
from agentrel.harness.protocol.signing import PUBLIC_PATTERN, SIG_PATTERN, Signer, signature_valid

__all__ = ["RegistryHead", "head_path", "head_problem", "read_head", "sign_head", "write_head"]

HEX64 = r"^[0-9a-f]{64}$"


class RegistryHead(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["agentrel-registry-head/1"] = "agentrel-registry-head/1"
    entries: int = Field(ge=0)  # how many entries the registry holds
    head: str = Field(pattern=HEX64)  # SHA-256 of the last entry's line
    at: str
    key: str = Field(pattern=PUBLIC_PATTERN)
    sig: str = Field(pattern=SIG_PATTERN)

    def body(self) -> bytes:
        return canonical_bytes(self.model_dump(mode="json", exclude={"sig"}))

    def line(self) -> bytes:
        return canonical_bytes(self.model_dump(mode="json"))


def head_path(registry: Path) -> Path:
    return registry.with_name(f"{registry.name}.head")


def sign_head(signer: Signer, entries: int, head: str) -> RegistryHead:
    fields = {"entries": entries, "head": head, "at": datetime.now(UTC).isoformat(), "key": signer.public}
    unsigned = canonical_bytes({"format": "agentrel-registry-head/1", **fields})
    return RegistryHead(**fields, sig=signer.sign("registry-head", unsigned))  # type: ignore[arg-type]


def write_head(registry: Path, head: RegistryHead) -> None:
    path = head_path(registry)
    try:
        write_durably(path, head.line() + b"\n")
    except OSError as exc:
        raise EnvironmentFailure(f"{path}: cannot write the registry head: {exc.strerror}") from None


def read_head(registry: Path) -> RegistryHead | None:
    path = head_path(registry)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise EnvironmentFailure(f"{path}: cannot read the registry head: {exc.strerror}") from None
    try:
        return RegistryHead.model_validate_json(data)
    except ValidationError:
        raise IntegrityFailure(f"{path}: not a signed registry head: it was edited; restore it") from None


def head_problem(
    registry: Path, head: RegistryHead | None, entries: int, last: str, key: str | None
) -> str | None:
    """Why the file's `entries` lines ending in hash `last` (signed by `key`) are not what `head`
    vouches for, naming the first line concerned; None when they are."""
    where = head_path(registry).name
    if head is None:
        if entries == 0:
            return None
        return (
            f"{registry}: no signed head ({where}), so nothing shows the registry was not cut; restore "
            "the head from where it was kept"
        )
    if not signature_valid(head.key, "registry-head", head.body(), head.sig):
        return f"{registry.with_name(where)}: the head's signature does not verify: it was edited"
    if key is not None and head.key != key:
        signed = f"signed by key {head.key[:16]}, the entries by {key[:16]}"
        return f"{registry.with_name(where)}: the head is {signed}"
    if head.entries > entries:
        return (
            f"{registry}:{entries + 1}: missing: the signed head vouches for {head.entries} entries and the "
            f"file holds {entries}: the registry was cut (its last lines removed)"
        )
    if head.entries < entries:
        return (
            f"{registry}:{head.entries + 1}: not covered by the signed head (an append interrupted before "
            "its head was signed): `agentrel registry repair` re-signs the head"
        )
    if head.head != last:
        return (
            f"{registry}:{entries}: the signed head vouches for another last entry: the registry was swapped"
        )
    return None
