"""The supersession registry: an append-only, hash-chained, signed `registry.jsonl`.

`protocol freeze` anchors a results directory's freeze here (a `freeze` entry: the freeze digest, the
protocol and matrix hashes, how many runs the directory held, when); `publish` registers every scorecard
it writes; `supersede` and `withdraw` append a later judgement on one. Nothing is ever edited: an entry's
status is the fold of the entries about it. Each line is the RFC 8785 form of one entry, and each entry
carries the SHA-256 of the previous line's bytes (`prev`), so an edit of any line breaks the chain.

Every entry is signed with the publisher's Ed25519 key (signing.py) and names that key: one key keeps a
registry, and a line without a valid signature by it (hand-appended, re-chained after a removal) is
refused on every read. The signed head beside the file (registry_head.py) moves with every append and
catches a cut. `verify` checks all of it against the key the reader trusts.

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
from agentrel.harness.publication.registry_head import head_problem, read_head, sign_head, write_head
from agentrel.harness.publication.signing import (
    PUBLIC_PATTERN,
    SIG_PATTERN,
    Signer,
    load_signer,
    signature_valid,
)

__all__ = [
    "GENESIS",
    "REGISTRY_FILE",
    "DigestRecord",
    "RegistryEntry",
    "RegistryState",
    "Status",
    "TornTail",
    "anchor_freeze",
    "default_registry_path",
    "read_registry",
    "register",
    "repair",
    "resign_head",
    "status_of",
    "supersede",
    "verify",
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
        problem = _judgement_problem(known, entry.action)
        if problem:
            raise IntegrityFailure(f"{where}: {problem}")
        status: Status = "superseded" if entry.action == "supersede" else "withdrawn"
        records[entry.digest] = DigestRecord(known.registration, status, entry)
    return records, freezes


def _judgement_problem(known: DigestRecord, action: str) -> str | None:
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


def _whole(path: Path, data: bytes) -> RegistryState:
    """The parse plus the signed head: raises IntegrityFailure naming the first bad line."""
    state = parse_registry(path, data)
    problem = head_problem(path, read_head(path), len(state.entries), state.head, state.key)
    if problem:
        raise IntegrityFailure(problem)
    return state


def read_registry(path: Path) -> RegistryState:
    """The whole registry, verified (chain, signatures, head); an absent file is an empty registry unless
    a signed head says it held entries."""
    if not path.exists():
        return _whole(path, b"")
    with _locked(path, fcntl.LOCK_SH, create=False) as fd:
        return _whole(path, _read_all(fd))


def verify(path: Path, trusted: str | None, kept_head: str | None = None) -> RegistryState:
    """`read_registry`, and the registry is kept by the `trusted` public key (and holds `kept_head`, a head
    hash the reader kept, so it was not rolled back past it). IntegrityFailure names the first problem."""
    state = read_registry(path)
    if state.key is not None:
        if trusted is None:
            raise IntegrityFailure(
                f"{path}: signed by key {state.key}, and no key to trust is given: pass --public-key "
                "(the publisher's, printed by publish)"
            )
        if state.key != trusted:
            raise IntegrityFailure(
                f"{path}:1: signed by key {state.key[:16]}, not the trusted {trusted[:16]}: another "
                "publisher's registry"
            )
    if kept_head is not None:
        chain = {e.prev for e in state.entries[1:]} | {state.head}
        if kept_head not in chain:
            raise IntegrityFailure(
                f"{path}: the head {kept_head[:16]} you kept is not in this registry's chain: it was rolled "
                "back or replaced"
            )
    return state


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


def _append(path: Path, signer: Signer | None, **fields: object) -> RegistryEntry:
    """Under the exclusive lock: verify the whole file and its head, check the action against it, append
    the signed entry, fsync, and sign the new head."""
    signer = signer or load_signer()
    new = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path, fcntl.LOCK_EX, create=True) as fd:
        data = _read_all(fd)
        state = _whole(path, data)
        state.require_whole()
        if state.key is not None and state.key != signer.public:
            raise Refused(
                f"{path} is kept by key {state.key[:16]}; {signer.path} is {signer.public[:16]}: sign with "
                "the registry's key (--key) or use another registry"
            )
        existing = _check(state, fields)
        if existing is not None:
            return existing
        unsigned = {
            **fields,
            "seq": len(state.entries),
            "prev": state.head,
            "at": datetime.now(UTC).isoformat(),
            "key": signer.public,
        }
        draft = RegistryEntry.model_validate({**unsigned, "sig": "0" * 128})
        entry = draft.model_copy(update={"sig": signer.sign("registry-entry", draft.body())})
        line = entry.line()
        rest = memoryview(line + b"\n")
        try:
            while rest:
                rest = rest[os.write(fd, rest) :]
            os.fsync(fd)
        except OSError as exc:
            os.ftruncate(fd, len(data))  # no later entry may land behind a torn one
            raise EnvironmentFailure(f"{path}: cannot append to the registry: {exc.strerror}") from None
        write_head(path, sign_head(signer, len(state.entries) + 1, sha256_hex(line)))
    if new:
        sync_folder(path.parent)
    return entry


def _check(state: RegistryState, fields: dict[str, object]) -> RegistryEntry | None:
    """Refuse what the registry does not permit; an identical registration or freeze is a no-op (a re-run)."""
    digest = str(fields["digest"])
    if fields["action"] == "freeze":
        return state.freezes.get(digest)  # the digest binds the freeze's hashes: the first one stands
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
    *,
    signer: Signer | None = None,
) -> RegistryEntry:
    """Record a published scorecard as active; the same registration again returns the first entry."""
    for value, what in ((scorecard_digest, "the scorecard digest"), (protocol_hash, "protocol_hash")):
        _hex(value, what)
    _hex(subject_config_hash, "subject_config_hash")
    _hex(derived_from, "derived_from")
    return _append(
        registry_path,
        signer,
        action="register",
        digest=scorecard_digest,
        protocol_hash=protocol_hash,
        subject_config_hash=subject_config_hash,
        derived_from=derived_from,
        by=_who(by),
    )


def anchor_freeze(
    registry_path: Path,
    freeze_digest: str,
    protocol_hash: str,
    matrix_hash: str,
    runs_before: int,
    by: str | None = None,
    *,
    signer: Signer | None = None,
) -> RegistryEntry:
    """Anchor a freeze outside its results directory; the same freeze again returns the first entry."""
    return _append(
        registry_path,
        signer,
        action="freeze",
        digest=freeze_digest,
        protocol_hash=protocol_hash,
        matrix_hash=matrix_hash,
        runs_before=runs_before,
        by=_who(by),
    )


def supersede(
    registry_path: Path,
    digest: str,
    reason: str,
    replacement: str | None = None,
    by: str | None = None,
    *,
    signer: Signer | None = None,
) -> RegistryEntry:
    """Mark an active scorecard superseded, optionally naming the amended protocol that replaces it."""
    _hex(digest, "DIGEST")
    _hex(replacement, "--replacement")
    if not reason.strip():
        raise UsageError("--reason must say why (it is kept in the registry for good)")
    return _append(
        registry_path,
        signer,
        action="supersede",
        digest=digest,
        reason=reason,
        replacement=replacement,
        by=_who(by),
    )


def withdraw(
    registry_path: Path, digest: str, reason: str, by: str | None = None, *, signer: Signer | None = None
) -> RegistryEntry:
    """Withdraw a scorecard (active or superseded): it is never compared again."""
    _hex(digest, "DIGEST")
    if not reason.strip():
        raise UsageError("--reason must say why (it is kept in the registry for good)")
    return _append(registry_path, signer, action="withdraw", digest=digest, reason=reason, by=_who(by))


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


def resign_head(registry_path: Path, *, key: Path | None = None) -> bool:
    """Re-sign a head that lags the file by whole, validly signed entries (an append interrupted between
    its line and its head); True when it did. Never re-makes a missing head or one ahead of or beside the
    file's chain: that would bless a cut."""
    if not registry_path.exists():
        return False
    with _locked(registry_path, fcntl.LOCK_EX, create=True) as fd:
        state = parse_registry(registry_path, _read_all(fd))
        head = read_head(registry_path)
        resigned = False
        # The head must vouch for a line this chain holds: the one the first unvouched entry follows.
        if (
            head is not None
            and head.entries < len(state.entries)
            and state.entries[head.entries].prev == head.head
        ):
            signer = load_signer(key, create=False)
            if signer.public != state.key:
                raise Refused(
                    f"{registry_path} is kept by key {str(state.key)[:16]}: re-sign with it (--key)"
                )
            write_head(registry_path, sign_head(signer, len(state.entries), state.head))
            resigned = True
        problem = head_problem(
            registry_path, read_head(registry_path), len(state.entries), state.head, state.key
        )
        if problem:
            raise IntegrityFailure(problem)
    return resigned
