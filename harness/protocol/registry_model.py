"""The registry's entries and their pure reading: the signed entry model, the parse of a registry file's
bytes (each line an entry, in order, chained, canonical, signed by one key) and the fold of the entries
into each scorecard's status and each freeze's anchor. No I/O: registry.py reads, locks and appends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentrel.harness.errors import IntegrityFailure
from agentrel.harness.protocol.canonical import canonical_bytes, sha256_hex
from agentrel.harness.protocol.signing import PUBLIC_PATTERN, SIG_PATTERN, signature_valid

__all__ = [
    "GENESIS",
    "DigestRecord",
    "EntryStatus",
    "RegistryEntry",
    "RegistryState",
    "TornTail",
    "judgement_problem",
    "parse_registry",
]

GENESIS = "0" * 64
HEX64 = r"^[0-9a-f]{64}$"
EntryStatus = Literal["active", "superseded", "withdrawn"]


class RegistryEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["agentrel-registry-entry/2"] = "agentrel-registry-entry/2"
    seq: int = Field(ge=0)
    prev: str = Field(pattern=HEX64)  # SHA-256 of the previous line's bytes; GENESIS for the first
    action: Literal["freeze", "register", "supersede", "withdraw", "journal", "rotate", "revoke"]
    # the scorecard's digest; a freeze's: the freeze digest; a journal's: the runs.jsonl chain head it
    # anchors; a rotation's: the new public key; a revocation's: the revoked public key
    digest: str = Field(pattern=HEX64)
    at: str  # ISO-8601 UTC, when it was appended
    by: str | None = None
    protocol_hash: str | None = Field(default=None, pattern=HEX64)
    subject_config_hash: str | None = Field(default=None, pattern=HEX64)
    derived_from: str | None = Field(default=None, pattern=HEX64)  # the scorecard this re-evaluates
    reason: str | None = None
    replacement: str | None = Field(default=None, pattern=HEX64)  # the amended protocol's hash
    matrix_hash: str | None = Field(default=None, pattern=HEX64)  # a freeze's
    runs_before: int | None = Field(default=None, ge=0)  # a freeze's: records already in runs.jsonl
    # A journal's: the freeze its results directory runs under, and how many lines of runs.jsonl the
    # head covers (registry_journal.py).
    journal_of: str | None = Field(default=None, pattern=HEX64)
    lines: int | None = Field(default=None, ge=0)
    # A revocation's: from when the revoked key's signatures are void (ISO-8601 with a time zone).
    revoked_from: str | None = None
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
        special = (self.journal_of, self.lines, self.revoked_from)
        if self.action in ("journal", "rotate", "revoke"):
            return self._key_or_journal()
        if special != (None, None, None):
            raise ValueError(f"a {self.action} has no journal_of, lines or revoked_from")
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

    def _key_or_journal(self) -> RegistryEntry:
        others = (self.protocol_hash, self.subject_config_hash, self.derived_from, self.replacement)
        if others != (None,) * 4 or (self.matrix_hash, self.runs_before) != (None, None):
            raise ValueError(f"a {self.action} names no protocol, subject, matrix or replacement")
        if self.action == "journal":
            if self.journal_of is None or self.lines is None or self.revoked_from is not None:
                raise ValueError("a journal names its freeze (journal_of) and lines, nothing else")
            return self
        if self.journal_of is not None or self.lines is not None:
            raise ValueError(f"a {self.action} has no journal_of or lines")
        if self.action == "rotate":
            if self.revoked_from is not None:
                raise ValueError("a rotation has no revoked_from")
            return self
        if not (self.reason or "").strip() or self.revoked_from is None:
            raise ValueError("a revocation gives a reason and revoked_from")
        try:
            when = datetime.fromisoformat(self.revoked_from)
        except ValueError:
            raise ValueError(f"revoked_from is not an ISO-8601 time: {self.revoked_from[:40]!r}") from None
        if when.tzinfo is None:
            raise ValueError("revoked_from names no time zone")
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
    status: EntryStatus
    judgement: RegistryEntry | None  # the entry that set a non-active status


@dataclass(frozen=True)
class RegistryState:
    path: Path
    entries: tuple[RegistryEntry, ...]
    head: str  # SHA-256 of the last entry's line; GENESIS when empty
    torn: TornTail | None
    records: dict[str, DigestRecord]
    freezes: dict[str, RegistryEntry]  # freeze digest -> its (first) freeze entry
    key: str | None  # the current key (the last of the rotation chain); None when empty
    # freeze digest -> its journal entries, in order (each anchors a prefix of that runs.jsonl)
    journals: dict[str, tuple[RegistryEntry, ...]] = field(default_factory=dict)
    keys: tuple[str, ...] = ()  # the rotation chain, first key first
    # Entries a revoked key signed from its revocation on: void, they vouch for nothing
    void: tuple[RegistryEntry, ...] = ()

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
) -> tuple[dict[str, DigestRecord], dict[str, RegistryEntry], dict[str, tuple[RegistryEntry, ...]]]:
    """Replay the entries; one a writer could not have appended (a judgement before the registration,
    a second withdrawal) means the file was written by something else, and is refused."""
    records: dict[str, DigestRecord] = {}
    freezes: dict[str, RegistryEntry] = {}
    journals: dict[str, tuple[RegistryEntry, ...]] = {}
    for entry in entries:
        where = f"{path}:{entry.seq + 1}"
        if entry.action in ("rotate", "revoke"):
            continue
        if entry.action == "journal":
            assert entry.journal_of is not None
            journals[entry.journal_of] = (*journals.get(entry.journal_of, ()), entry)
            continue
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
        status: EntryStatus = "superseded" if entry.action == "supersede" else "withdrawn"
        records[entry.digest] = DigestRecord(known.registration, status, entry)
    return records, freezes, journals


def _keys(path: Path, entries: list[RegistryEntry]) -> tuple[tuple[str, ...], list[RegistryEntry]]:
    """The rotation chain and the entries void under a revocation. Each entry is signed by the current
    key: the first entry's, then the key each rotation (signed by the key before it) names. A revocation,
    signed by the current key, voids what the revoked key signed from its `revoked_from` on, except the
    rotations of the chain itself (the way the current key was reached)."""
    chain: list[str] = []
    revoked: dict[str, datetime] = {}
    for entry in entries:
        where = f"{path}:{entry.seq + 1}"
        if not chain:
            chain.append(entry.key)
        if entry.key != chain[-1]:
            raise IntegrityFailure(
                f"{where}: signed by key {entry.key[:16]}, the registry's key is {chain[-1][:16]} "
                "(a key the registry never rotated to)"
            )
        if entry.action == "rotate":
            if entry.digest in chain:
                raise IntegrityFailure(f"{where}: rotates back to the earlier key {entry.digest[:16]}")
            chain.append(entry.digest)
        elif entry.action == "revoke":
            if entry.digest == chain[-1]:
                raise IntegrityFailure(f"{where}: revokes the key that signed it")
            assert entry.revoked_from is not None
            revoked[entry.digest] = datetime.fromisoformat(entry.revoked_from)
    void = [
        e
        for e in entries
        if e.action != "rotate" and e.key in revoked and datetime.fromisoformat(e.at) >= revoked[e.key]
    ]
    return tuple(chain), void


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
    keys, void = _keys(path, entries)
    key = keys[-1] if keys else None
    voided = {e.seq for e in void}
    records, freezes, journals = _fold(path, [e for e in entries if e.seq not in voided])
    return RegistryState(path, tuple(entries), prev, torn, records, freezes, key, journals, keys, tuple(void))
