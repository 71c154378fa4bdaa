"""The publisher's Ed25519 key: what signs every scorecard, freeze entry, registry entry and registry head.

A signature says who vouched for an object, not that the object is true: a key holder can still sign
whatever it likes (docs/explanation/trust.md says what that leaves open). What it stops is everyone else:
a hand-written registry line, a re-chained file, an edited scorecard, or one signed by another key.

Where: `--key FILE`, else `AGENTREL_SIGNING_KEY`, else `$AGENTREL_HOME/signing.key`. A signing operation
makes the key there on first use (PKCS#8 PEM, mode 0600, created whole under an exclusive name so two
first uses keep one key); a verifying operation never makes one. A key file that others may read is
refused, as ssh refuses one. Public keys travel as 64 lowercase hex digits (the raw 32 bytes).

Every signature covers a domain tag naming the kind of object, so a signature over one kind can never be
passed off as one over another.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from agentrel.harness.errors import EnvironmentFailure, UsageError, UserError

__all__ = [
    "KEY_ENV",
    "KEY_FILE",
    "PUBLIC_KEY_ENV",
    "SIG_PATTERN",
    "Signer",
    "key_path",
    "load_signer",
    "signature_valid",
    "trusted_key",
]

KEY_FILE = "signing.key"
KEY_ENV = "AGENTREL_SIGNING_KEY"
PUBLIC_KEY_ENV = "AGENTREL_PUBLIC_KEY"
PUBLIC_PATTERN = r"^[0-9a-f]{64}$"
SIG_PATTERN = r"^[0-9a-f]{128}$"
Domain = Literal["registry-entry", "registry-head", "scorecard"]


def _tagged(domain: Domain, data: bytes) -> bytes:
    return b"agentrel-signature/1 " + domain.encode() + b"\n" + data


@dataclass(frozen=True)
class Signer:
    path: Path
    private: Ed25519PrivateKey
    public: str  # hex of the raw public key
    created: bool  # this call made the key (the caller prints its public part)

    def sign(self, domain: Domain, data: bytes) -> str:
        return self.private.sign(_tagged(domain, data)).hex()


def signature_valid(public: str, domain: Domain, data: bytes, signature: str) -> bool:
    """Whether `signature` (hex) is `public`'s Ed25519 signature over `data` as a `domain` object."""
    try:
        key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public))
        key.verify(bytes.fromhex(signature), _tagged(domain, data))
    except (InvalidSignature, ValueError):
        return False
    return True


def key_path(given: Path | None = None) -> Path:
    if given is not None:
        return given.absolute()
    env = os.environ.get(KEY_ENV)
    if env:
        return Path(env).absolute()
    from agentrel.sandbox.servers.local import default_home

    return default_home() / KEY_FILE


def _public_hex(private: Ed25519PrivateKey) -> str:
    raw = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return raw.hex()


def _read(path: Path) -> Ed25519PrivateKey:
    try:
        mode = path.stat().st_mode
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read the signing key: {exc.strerror}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise UserError(
            f"{path}: the signing key may be read by others (mode {mode & 0o777:o}); chmod 600 it"
        )
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise UserError(f"{path}: not an unencrypted PEM Ed25519 private key; give another --key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise UserError(f"{path}: a {type(key).__name__}, not an Ed25519 key; give an Ed25519 --key")
    return key


def _make(path: Path) -> bool:
    """Write a new key to `path` whole, mode 0600; False when another process made one first."""
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, pem)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # never over an existing key
        except FileExistsError:
            return False
    except OSError as exc:
        raise EnvironmentFailure(f"{path}: cannot create the signing key: {exc.strerror}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return True


def load_signer(given: Path | None = None, *, create: bool = True) -> Signer:
    """The user's signing key; made on first use when `create` (only for signing, never for verifying)."""
    path = key_path(given)
    created = False
    if not path.exists():
        if not create:
            raise UsageError(f"{path}: no signing key there; give --key or --public-key")
        created = _make(path)
    private = _read(path)
    return Signer(path, private, _public_hex(private), created)


def trusted_key(public: str | None = None, key: Path | None = None) -> str | None:
    """The public key to verify against: the one given (`--public-key`, `AGENTREL_PUBLIC_KEY`), else the
    public part of the user's own signing key when it exists; None when there is neither."""
    public = public or os.environ.get(PUBLIC_KEY_ENV) or None
    if public is not None:
        public = public.strip().lower().removeprefix("ed25519:")
        if not re.fullmatch(PUBLIC_PATTERN, public):
            raise UsageError(
                f"--public-key must be 64 hex digits (an Ed25519 public key), got {public[:80]!r}"
            )
        return public
    path = key_path(key)
    return _public_hex(_read(path)) if path.exists() else None
