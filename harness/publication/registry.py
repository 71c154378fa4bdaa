"""The supersession registry: an append-only, hash-chained `registry.jsonl` of scorecard digests.

`publish` registers every scorecard it writes; `supersede` and `withdraw` append a later judgement on
one. Nothing is ever edited: an entry's status is the fold of the entries about it. Each line is the
RFC 8785 form of one entry, and each entry carries the SHA-256 of the previous line's bytes (`prev`), so
an edit of any line but the last breaks the chain at the line after it and is caught on every read. (The
last line has no successor to vouch for it: `registry list` prints the head hash, to be kept elsewhere.)

A line without its newline is a torn append (the writer stopped mid-write). It is reported, never dropped:
reads that decide something (a status, an append) refuse until `repair` has set its bytes aside in a
sidecar file. Writers hold an exclusive `flock` on the file itself, readers a shared one, so concurrent
`publish` runs append in turn and a reader never sees half a line.

Where: `--registry FILE`, else `AGENTREL_REGISTRY`, else `$AGENTREL_HOME/registry.jsonl` (`.agentrel/`
in the working directory by default): one registry per AgentRel home, shared by every results directory.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentrel.harness.durable import sync_folder
from agentrel.harness.errors import EnvironmentFailure, IntegrityFailure, Refused, UsageError
from agentrel.harness.publication.canonical import canonical_bytes, sha256_hex

__all__ = [
    "GENESIS",
    "REGISTRY_FILE",
    "DigestRecord",
    "RegistryEntry",
    "RegistryState",
    "Status",
    "TornTail",
    "default_registry_path",
    "read_registry",
    "register",
    "repair",
    "status_of",
    "supersede",
    "withdraw",
]

REGISTRY_FILE = "registry.jsonl"
GENESIS = "0" * 64
HEX64 = r"^[0-9a-f]{64}$"
Status = Literal["active", "superseded", "withdrawn"]


def default_registry_path() -> Path:
    from agentrel.sandbox.servers.local import default_home

    given = os.environ.get("AGENTREL_REGISTRY")
    return Path(given).absolute() if given else default_home() / REGISTRY_FILE


class RegistryEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["agentrel-registry-entry/1"] = "agentrel-registry-entry/1"
    seq: int = Field(ge=0)
    prev: str = Field(pattern=HEX64)  # SHA-256 of the previous line's bytes; GENESIS for the first
    action: Literal["register", "supersede", "withdraw"]
    digest: str = Field(pattern=HEX64)  # the scorecard's digest
    at: str  # ISO-8601 UTC, when it was appended
    by: str | None = None
    protocol_hash: str | None = Field(default=None, pattern=HEX64)
    subject_config_hash: str | None = Field(default=None, pattern=HEX64)
    derived_from: str | None = Field(default=None, pattern=HEX64)  # the scorecard this re-evaluates
    reason: str | None = None
    replacement: str | None = Field(default=None, pattern=HEX64)  # the amended protocol's hash

    @model_validator(mode="after")
    def _fields_of_action(self) -> RegistryEntry:
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
        return canonical_bytes(self.model_dump(mode="json"))


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

    def require_whole(self) -> None:
        if self.torn is not None:
            raise IntegrityFailure(
                f"{self.path}: the last line is torn ({self.torn.size} bytes at offset {self.torn.offset}, "
                "an interrupted append that may have been a withdrawal): inspect it, then "
                "`agentrel registry repair` sets it aside"
            )


# -- reading (the parse and the fold are pure) ------------------------------------------------------------


def _fold(path: Path, entries: list[RegistryEntry]) -> dict[str, DigestRecord]:
    """Replay the entries; one a writer could not have appended (a judgement before the registration,
    a second withdrawal) means the file was written by something else, and is refused."""
    records: dict[str, DigestRecord] = {}
    for entry in entries:
        where = f"{path}:{entry.seq + 1}"
        known = records.get(entry.digest)
        if entry.action == "register":
            if known is not None:
                raise IntegrityFailure(f"{where}: {entry.digest[:12]} is registered twice")
            records[entry.digest] = DigestRecord(entry, "active", None)
            continue
        if known is None:
            raise IntegrityFailure(f"{where}: {entry.action} of the unregistered {entry.digest[:12]}")
        problem = _judgement_problem(known, entry.action)
        if problem:
            raise IntegrityFailure(f"{where}: {problem}")
        status: Status = "superseded" if entry.action == "supersede" else "withdrawn"
        records[entry.digest] = DigestRecord(known.registration, status, entry)
    return records


def _judgement_problem(known: DigestRecord, action: str) -> str | None:
    judged = known.judgement
    if judged is None:
        return None
    if known.status == "withdrawn" or action == "supersede":
        return f"{judged.digest[:12]} is {known.status} already (line {judged.seq + 1}: {judged.reason})"
    return None  # a superseded scorecard may still be withdrawn


def parse_registry(path: Path, data: bytes) -> RegistryState:
    cut = data.rfind(b"\n") + 1
    torn = TornTail(cut, len(data) - cut) if cut != len(data) else None
    entries: list[RegistryEntry] = []
    prev = GENESIS
    for lineno, line in enumerate(data[:cut].split(b"\n")[:-1], start=1):
        try:
            entry = RegistryEntry.model_validate_json(line)
        except ValidationError as exc:
            from agentrel.harness.yamlfile import field_problem

            raise IntegrityFailure(f"{path}:{lineno}: not a registry entry ({field_problem(exc)})") from None
        where = f"{path}:{lineno}"
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
    return RegistryState(path, tuple(entries), prev, torn, _fold(path, entries))


def read_registry(path: Path) -> RegistryState:
    """The whole registry, verified; an absent file is an empty registry."""
    if not path.exists():
        return parse_registry(path, b"")
    with _locked(path, fcntl.LOCK_SH, create=False) as fd:
        return parse_registry(path, _read_all(fd))


def status_of(registry_path: Path, digest: str) -> Status:
    """active, superseded or withdrawn; an unknown digest or a torn registry is refused, never guessed."""
    return _record(read_registry(registry_path), digest).status


def _record(state: RegistryState, digest: str) -> DigestRecord:
    state.require_whole()
    record = state.records.get(digest)
    if record is None:
        raise Refused(
            f"{digest[:12]} is not in the registry {state.path}: `agentrel publish` registers a scorecard"
        )
    return record


# -- writing ------------------------------------------------------------------------------------------------


@contextmanager
def _locked(path: Path, mode: int, *, create: bool) -> Iterator[int]:
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT if create else os.O_RDONLY
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        raise EnvironmentFailure(f"{path}: cannot open the registry: {exc.strerror}") from None
    try:
        fcntl.flock(fd, mode)
        yield fd
    finally:
        os.close(fd)  # releases the lock


def _read_all(fd: int) -> bytes:
    chunks, offset = [], 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _append(path: Path, **fields: object) -> RegistryEntry:
    """Under the exclusive lock: verify the whole file, check the action against it, append, fsync."""
    new = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path, fcntl.LOCK_EX, create=True) as fd:
        data = _read_all(fd)
        state = parse_registry(path, data)
        state.require_whole()
        existing = _check(state, fields)
        if existing is not None:
            return existing
        entry = RegistryEntry.model_validate(
            {**fields, "seq": len(state.entries), "prev": state.head, "at": datetime.now(UTC).isoformat()}
        )
        rest = memoryview(entry.line() + b"\n")
        try:
            while rest:
                rest = rest[os.write(fd, rest) :]
            os.fsync(fd)
        except OSError as exc:
            os.ftruncate(fd, len(data))  # no later entry may land behind a torn one
            raise EnvironmentFailure(f"{path}: cannot append to the registry: {exc.strerror}") from None
    if new:
        sync_folder(path.parent)
    return entry


def _check(state: RegistryState, fields: dict[str, object]) -> RegistryEntry | None:
    """Refuse what the registry does not permit; an identical registration is a no-op (publish re-run)."""
    digest = str(fields["digest"])
    known = state.records.get(digest)
    if fields["action"] == "register":
        derived = fields.get("derived_from")
        if derived is not None and (derived == digest or derived not in state.records):
            raise Refused(f"derived_from {str(derived)[:12]} is not a registered scorecard")
        if known is None:
            return None
        reg = known.registration
        same = (reg.protocol_hash, reg.subject_config_hash, reg.derived_from) == (
            fields["protocol_hash"],
            fields["subject_config_hash"],
            derived,
        )
        if not same:
            raise Refused(f"{digest[:12]} is registered already, with other hashes (line {reg.seq + 1})")
        return reg
    if known is None:
        raise Refused(f"cannot {fields['action']} {digest[:12]}: not in the registry {state.path}")
    problem = _judgement_problem(known, str(fields["action"]))
    if problem:
        raise Refused(f"cannot {fields['action']}: {problem}")
    return None


def _who(by: str | None) -> str | None:
    if by:
        return by
    try:
        import getpass

        return getpass.getuser()
    except (KeyError, OSError):
        return None


def _hex(value: str | None, what: str) -> None:
    import re

    if value is not None and not re.fullmatch(HEX64, value):
        raise UsageError(f"{what} must be 64 lowercase hex digits (a SHA-256), got {value[:80]!r}")


def register(
    registry_path: Path,
    scorecard_digest: str,
    protocol_hash: str,
    subject_config_hash: str,
    derived_from: str | None = None,
    by: str | None = None,
) -> RegistryEntry:
    """Record a published scorecard as active; the same registration again returns the first entry."""
    for value, what in ((scorecard_digest, "the scorecard digest"), (protocol_hash, "protocol_hash")):
        _hex(value, what)
    _hex(subject_config_hash, "subject_config_hash")
    _hex(derived_from, "derived_from")
    return _append(
        registry_path,
        action="register",
        digest=scorecard_digest,
        protocol_hash=protocol_hash,
        subject_config_hash=subject_config_hash,
        derived_from=derived_from,
        by=_who(by),
    )


def supersede(
    registry_path: Path, digest: str, reason: str, replacement: str | None = None, by: str | None = None
) -> RegistryEntry:
    """Mark an active scorecard superseded, optionally naming the amended protocol that replaces it."""
    _hex(digest, "DIGEST")
    _hex(replacement, "--replacement")
    if not reason.strip():
        raise UsageError("--reason must say why (it is kept in the registry for good)")
    return _append(
        registry_path, action="supersede", digest=digest, reason=reason, replacement=replacement, by=_who(by)
    )


def withdraw(registry_path: Path, digest: str, reason: str, by: str | None = None) -> RegistryEntry:
    """Withdraw a scorecard (active or superseded): it is never compared again."""
    _hex(digest, "DIGEST")
    if not reason.strip():
        raise UsageError("--reason must say why (it is kept in the registry for good)")
    return _append(registry_path, action="withdraw", digest=digest, reason=reason, by=_who(by))


def repair(registry_path: Path) -> Path | None:
    """Set a torn last line aside in `registry.jsonl.torn-<offset>` (kept, never deleted) and cut it.

    Only the bytes after the last newline: they were never an entry. Returns the sidecar, or None when
    the file was whole."""
    if not registry_path.exists():
        return None
    with _locked(registry_path, fcntl.LOCK_EX, create=True) as fd:
        data = _read_all(fd)
        state = parse_registry(registry_path, data)
        if state.torn is None:
            return None
        side = registry_path.with_name(f"{registry_path.name}.torn-{state.torn.offset}")
        side.write_bytes(data[state.torn.offset :])
        os.ftruncate(fd, state.torn.offset)
        os.fsync(fd)
    return side
