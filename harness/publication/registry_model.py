"""The registry's entries and their pure reading: the signed entry model, the parse of a registry file's
bytes (each line an entry, in order, chained, canonical, signed by one key) and the fold of the entries
into each scorecard's status and each freeze's anchor. No I/O: registry.py reads, locks and appends.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentrel.harness.errors import IntegrityFailure
from agentrel.harness.publication.canonical import canonical_bytes, sha256_hex
from agentrel.harness.publication.signing import PUBLIC_PATTERN, SIG_PATTERN, signature_valid

__all__ = [
    "GENESIS",
    "DigestRecord",
    "RegistryEntry",
    "RegistryState",
    "Status",
    "TornTail",
    "judgement_problem",
    "parse_registry",
]

GENESIS = "0" * 64
HEX64 = r"^[0-9a-f]{64}$"
Status = Literal["active", "superseded", "withdrawn"]


class RegistryEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["agentrel-registry-entry/2"] = "agentrel-registry-entry/2"
    seq: int = Field(ge=0)
    prev: str = Field(pattern=HEX64)  # SHA-256 of the previous line's bytes; GENESIS for the first
    action: Literal["freeze", "register", "supersede", "withdraw"]
    digest: str = Field(pattern=HEX64)  # the scorecard's digest; a freeze's: the freeze digest
    at: str  # ISO-8601 UTC, when it was appended
    by: str | None = None
    protocol_hash: str | None = Field(default=None, pattern=HEX64)
    subject_config_hash: str | None = Field(default=None, pattern=HEX64)
    derived_from: str | None = Field(default=None, pattern=HEX64)  # the scorecard this re-evaluates
    reason: str | None = None
    replacement: str | None = Field(default=None, pattern=HEX64)  # the amended protocol's hash
    matrix_hash: str | None = Field(default=None, pattern=HEX64)  # a freeze's
    runs_before: int | None = Field(default=None, ge=0)  # a freeze's: records already in runs.jsonl
    key: str = Field(pattern=PUBLIC_PATTERN)  # the Ed25519 public key that signed it
    sig: str = Field(pattern=SIG_PATTERN)

    @model_validator(mode="after")
    def _fields_of_action(self) -> RegistryEntry:
        try:
            stamped = datetime.fromisoformat(self.at)
        except ValueError:
            raise ValueError(f"at is not an ISO-8601 time: {self.at[:40]!r}") from None
        if stamped.tzinfo is None:
            raise ValueError("at names no time zone")  # a freeze's time is compared with the runs' (UTC)
        freeze_fields = (self.matrix_hash, self.runs_before)
        if self.action == "freeze":
            if self.protocol_hash is None or None in freeze_fields:
                raise ValueError("a freeze names its protocol_hash, matrix_hash and runs_before")
            if self.subject_config_hash or self.derived_from or self.reason or self.replacement:
                raise ValueError("a freeze names only its freeze digest, hashes and runs_before")
            return self
        if freeze_fields != (None, None):
            raise ValueError(f"a {self.action} has no matrix_hash or runs_before")
        if self.action == "register":
            if self.protocol_hash is None or self.subject_config_hash is None:
                raise ValueError("a registration names its protocol_hash and subject_config_hash")
            if self.reason is not None or self.replacement is not None:
                raise ValueError("a registration has no reason or replacement")
        else:
            if not (self.reason or "").strip():
                raise ValueError(f"a {self.action} gives a reason")
            if self.protocol_hash or self.subject_config_hash or self.derived_from:
                raise ValueError(f"a {self.action} names only the digest it judges")
            if self.action == "withdraw" and self.replacement is not None:
                raise ValueError("a withdrawal has no replacement")
        return self

    def line(self) -> bytes:
        return canonical_bytes(self.model_dump(mode="json", exclude_none=True))

    def body(self) -> bytes:
        """What the signature covers: the line without `sig` (so also `seq` and `prev`)."""
        return canonical_bytes(self.model_dump(mode="json", exclude_none=True, exclude={"sig"}))


@dataclass(frozen=True)
class TornTail:
    offset: int  # where the torn bytes start
    size: int


@dataclass(frozen=True)
class DigestRecord:
    """What the registry says about one scorecard digest: its registration and latest judgement."""

    registration: RegistryEntry
    status: Status
    judgement: RegistryEntry | None  # the entry that set a non-active status


@dataclass(frozen=True)
class RegistryState:
    path: Path
    entries: tuple[RegistryEntry, ...]
    head: str  # SHA-256 of the last entry's line; GENESIS when empty
    torn: TornTail | None
    records: dict[str, DigestRecord]
    freezes: dict[str, RegistryEntry]  # freeze digest -> its (first) freeze entry
    key: str | None  # the public key that signed every entry; None when empty

    def require_whole(self) -> None:
        if self.torn is not None:
            raise IntegrityFailure(
                f"{self.path}: the last line is torn ({self.torn.size} bytes at offset {self.torn.offset}, "
                "an interrupted append that may have been a withdrawal): inspect it, then "
                "`agentrel registry repair` sets it aside"
            )


# -- reading (the parse and the fold are pure) ------------------------------------------------------------


def _fold(
    path: Path, entries: list[RegistryEntry]
) -> tuple[dict[str, DigestRecord], dict[str, RegistryEntry]]:
    """Replay the entries; one a writer could not have appended (a judgement before the registration,
    a second withdrawal) means the file was written by something else, and is refused."""
    records: dict[str, DigestRecord] = {}
    freezes: dict[str, RegistryEntry] = {}
    for entry in entries:
        where = f"{path}:{entry.seq + 1}"
        if entry.action == "freeze":
            if entry.digest in freezes:
                raise IntegrityFailure(f"{where}: freeze {entry.digest[:12]} is anchored twice")
            freezes[entry.digest] = entry
            continue
        known = records.get(entry.digest)
        if entry.action == "register":
            if known is not None:
                raise IntegrityFailure(f"{where}: {entry.digest[:12]} is registered twice")
            records[entry.digest] = DigestRecord(entry, "active", None)
            continue
        if known is None:
            raise IntegrityFailure(f"{where}: {entry.action} of the unregistered {entry.digest[:12]}")
        problem = judgement_problem(known, entry.action)
        if problem:
            raise IntegrityFailure(f"{where}: {problem}")
        status: Status = "superseded" if entry.action == "supersede" else "withdrawn"
        records[entry.digest] = DigestRecord(known.registration, status, entry)
    return records, freezes


def judgement_problem(known: DigestRecord, action: str) -> str | None:
    judged = known.judgement
    if judged is None:
        return None
    if known.status == "withdrawn" or action == "supersede":
        return f"{judged.digest[:12]} is {known.status} already (line {judged.seq + 1}: {judged.reason})"
    return None  # a superseded scorecard may still be withdrawn


def parse_registry(path: Path, data: bytes) -> RegistryState:
    """Every whole line checked in order (the first bad one is named): an entry, its seq, the chain, its
    canonical form, its signature, and one key for the whole registry. Not the head (read_registry)."""
    cut = data.rfind(b"\n") + 1
    torn = TornTail(cut, len(data) - cut) if cut != len(data) else None
    entries: list[RegistryEntry] = []
    prev, key = GENESIS, None
    for lineno, line in enumerate(data[:cut].split(b"\n")[:-1], start=1):
        where = f"{path}:{lineno}"
        try:
            entry = RegistryEntry.model_validate_json(line)
        except ValidationError as exc:
            from agentrel.harness.yamlfile import field_problem

            unsigned = b'"agentrel-registry-entry/1"' in line
            why = "an unsigned entry of an older agentrel" if unsigned else field_problem(exc)
            raise IntegrityFailure(f"{where}: not a signed registry entry ({why})") from None
        if entry.seq != lineno - 1:
            raise IntegrityFailure(
                f"{where}: its seq is broken ({entry.seq}): a line was removed or reordered"
            )
        if entry.prev != prev:
            raise IntegrityFailure(
                f"{where}: the hash chain is broken: line {lineno - 1} was edited (this line vouches for "
                f"{entry.prev[:12]}, the file has {prev[:12]})"
            )
        if entry.line() != line:
            raise IntegrityFailure(f"{where}: not the canonical form of its entry: the line was edited")
        entries.append(entry)
        prev = sha256_hex(line)
    # Signatures after the chain, so an edited line is named by the chain where a successor vouches for
    # it, and by its own signature where none does (the last line).
    for entry in entries:
        where = f"{path}:{entry.seq + 1}"
        if not signature_valid(entry.key, "registry-entry", entry.body(), entry.sig):
            raise IntegrityFailure(
                f"{where}: its signature does not verify: the entry was written or re-chained without "
                f"the key it names ({entry.key[:16]})"
            )
        if key is not None and entry.key != key:
            raise IntegrityFailure(f"{where}: signed by key {entry.key[:16]}, the registry by {key[:16]}")
        key = entry.key
    records, freezes = _fold(path, entries)
    return RegistryState(path, tuple(entries), prev, torn, records, freezes, key)
