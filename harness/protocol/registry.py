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
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from agentrel.harness.durable import sync_folder
from agentrel.harness.errors import EnvironmentFailure, IntegrityFailure, Refused, UsageError
from agentrel.harness.protocol.canonical import sha256_hex
from agentrel.harness.protocol.registry_head import head_problem, read_head, sign_head, write_head
from agentrel.harness.protocol.registry_model import (
    GENESIS,
    HEX64,
    DigestRecord,
    EntryStatus,
    RegistryEntry,
    RegistryState,
    TornTail,
    judgement_problem,
    parse_registry,
)
from agentrel.harness.protocol.signing import Signer, load_signer

__all__ = [
    "GENESIS",
    "REGISTRY_FILE",
    "DigestRecord",
    "EntryStatus",
    "RegistryEntry",
    "RegistryState",
    "TornTail",
    "anchor_freeze",
    "anchor_journal",
    "default_registry_path",
    "parse_registry",
    "read_registry",
    "register",
    "repair",
    "resign_head",
    "revoke_key",
    "rotate_key",
    "status_of",
    "supersede",
    "verify",
    "withdraw",
]

REGISTRY_FILE = "registry.jsonl"


def default_registry_path() -> Path:
    from agentrel.sandbox.servers.local import default_home

    given = os.environ.get("AGENTREL_REGISTRY")
    return Path(given).absolute() if given else default_home() / REGISTRY_FILE


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
        if trusted not in state.keys:  # the trusted key, or one it rotated to (registry_model._keys)
            raise IntegrityFailure(
                f"{path}:1: signed by key {state.key[:16]}, not the trusted {trusted[:16]} or a key it "
                "rotated to: another publisher's registry"
            )
    if kept_head is not None:
        chain = {e.prev for e in state.entries[1:]} | {state.head}
        if kept_head not in chain:
            raise IntegrityFailure(
                f"{path}: the head {kept_head[:16]} you kept is not in this registry's chain: it was rolled "
                "back or replaced"
            )
    return state


def status_of(registry_path: Path, digest: str) -> EntryStatus:
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
    if fields["action"] == "journal":  # the same head of the same journal again: a no-op
        held = state.journals.get(str(fields["journal_of"]), ())
        return held[-1] if held and (held[-1].digest, held[-1].lines) == (digest, fields["lines"]) else None
    if fields["action"] in ("rotate", "revoke"):
        return None
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
    problem = judgement_problem(known, str(fields["action"]))
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


def anchor_journal(
    registry_path: Path, freeze_digest: str, head: str, lines: int, *, signer: Signer | None = None
) -> RegistryEntry:
    """Anchor the chain head of a results directory's runs.jsonl (registry_journal.journal_head) under
    its freeze: removing a record afterwards no longer gives an anchored prefix."""
    _hex(freeze_digest, "the freeze digest")
    _hex(head, "the journal head")
    return _append(
        registry_path, signer, action="journal", digest=head, journal_of=freeze_digest, lines=lines
    )


def rotate_key(registry_path: Path, new: Signer, *, signer: Signer | None = None) -> RegistryEntry:
    """Append a rotation, signed by the registry's current key (`signer`), naming `new`'s public key;
    every later entry, and the signed head, is `new`'s."""
    signer = signer or load_signer(create=False)
    if new.public == signer.public:
        raise UsageError("the new key is the current one: give a new --new-key")
    entry = _append(registry_path, signer, action="rotate", digest=new.public, by=_who(None))
    write_head(registry_path, sign_head(new, entry.seq + 1, sha256_hex(entry.line())))
    return entry


def revoke_key(
    registry_path: Path, public: str, revoked_from: str, reason: str, *, signer: Signer | None = None
) -> RegistryEntry:
    """Void what `public` signed from `revoked_from` on (an ISO-8601 date or time; a date is midnight
    UTC). Signed by the registry's current key, which must be another one (rotate first)."""
    public = public.strip().lower().removeprefix("ed25519:")
    if not re.fullmatch(HEX64, public):
        raise UsageError(
            f"the key to revoke must be 64 hex digits (an Ed25519 public key), got {public[:80]!r}"
        )
    if not reason.strip():
        raise UsageError("--reason must say why (it is kept in the registry for good)")
    try:
        when = datetime.fromisoformat(revoked_from)
    except ValueError:
        raise UsageError(f"--from must be an ISO-8601 date or time, got {revoked_from[:40]!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    signer = signer or load_signer(create=False)
    if public == signer.public:
        raise UsageError("cannot revoke the registry's current key: `agentrel registry rotate-key` first")
    state = read_registry(registry_path)
    if public not in state.keys:
        raise UsageError(f"{public[:16]} never signed {registry_path}: nothing to revoke")
    return _append(
        registry_path,
        signer,
        action="revoke",
        digest=public,
        revoked_from=when.isoformat(),
        reason=reason,
        by=_who(None),
    )
