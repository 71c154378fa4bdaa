"""The preregistered claims a freeze binds (`agentrel protocol freeze --claims FILE`).

The claims file (analysis.claims.ClaimsFile, YAML or JSON) is validated, copied into the results
directory as its RFC 8785 form (`claims.json`), and its SHA-256 becomes the freeze's `claims_hash`. The
freeze's digest, which every run recorded afterwards carries (`frozen_by`) and which the signed registry
anchors, therefore covers the claims: a claims.json edited afterwards no longer hashes to the freeze's
`claims_hash` (`claims_altered`), a freeze.json edited to match no longer matches the registry or the
runs, and a claims.json dropped into a directory frozen without claims is `claims_unfrozen`. Claims are
never added to a frozen directory (that is an amendment: a new results directory), nor frozen into a
directory that already holds runs (they would no longer be preregistered).
"""

from __future__ import annotations

from pathlib import Path

from agentrel.analysis.claims import ClaimsFile
from agentrel.harness.durable import read_model, write_durably
from agentrel.harness.errors import CheckFailed, EnvironmentFailure
from agentrel.harness.protocol.canonical import canonical_bytes, sha256_hex
from agentrel.harness.results.layout import CLAIMS
from agentrel.harness.yamlfile import load_model

__all__ = [
    "CLAIMS",
    "claims_bytes",
    "claims_hash",
    "claims_problem",
    "frozen_claims",
    "read_claims_file",
    "write_claims",
]


def read_claims_file(path: Path) -> ClaimsFile:
    """A user's claims file (YAML or JSON); one line naming the file and the first bad field otherwise."""
    return load_model(ClaimsFile, path)


def claims_bytes(claims: ClaimsFile) -> bytes:
    return canonical_bytes(claims.model_dump(mode="json"))


def claims_hash(claims: ClaimsFile) -> str:
    """SHA-256 of the claims' RFC 8785 form: what the freeze binds."""
    return sha256_hex(claims_bytes(claims))


def write_claims(results: Path, claims: ClaimsFile) -> None:
    """claims.json, written once: the same claims again is a no-op, other claims are refused."""
    path = results / CLAIMS
    data = claims_bytes(claims)
    try:
        if write_durably(path, data, replace=False):
            return
        if path.read_bytes() == data:
            return
    except OSError as exc:
        raise EnvironmentFailure(f"{path}: cannot write the claims ({exc.strerror})") from None
    raise CheckFailed(
        f"{path}: other claims are already here; claims are preregistered once, with the freeze: freeze "
        "new claims in a new results directory"
    )


def claims_problem(results: Path, frozen_hash: str | None) -> str | None:
    """Why claims.json is not the claims the freeze bound (a reason code), or None when it is (or when
    neither the freeze nor the directory holds claims)."""
    path = results / CLAIMS
    if frozen_hash is None:
        return "claims_unfrozen" if path.exists() else None
    try:
        data = path.read_bytes()
    except OSError:
        return "claims_altered"
    return None if sha256_hex(data) == frozen_hash else "claims_altered"


def frozen_claims(results: Path, frozen_hash: str | None) -> ClaimsFile | None:
    """The claims the freeze bound, read from claims.json once it is checked (None without claims)."""
    if frozen_hash is None:
        return None
    if claims_problem(results, frozen_hash) is not None:
        raise CheckFailed(f"{results / CLAIMS}: not the claims the freeze bound (claims_altered)")
    return read_model(results / CLAIMS, ClaimsFile, "claims file")
