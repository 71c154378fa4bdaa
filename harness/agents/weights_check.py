"""A model server's description of its weights is a claim; where the weights file is on this machine, its
SHA-256 is computed and checked.

What a server says about itself (`/v1/models`, llama.cpp's `/props`) is recorded as `claimed`: AgentRel
cannot see behind an HTTP endpoint. When the weights are local, a path the user gives (`--model-meta`'s
`weights_path`), or the `model_path` a loopback server reports when that absolute path exists here, the
file is hashed and compared with every digest said about it (the declared `weights_sha256`, the server's
listed `sha256`): a mismatch refuses the audit in one line, and a match is recorded as `verified`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from agentrel.harness.agents.base import ConfigError

CLAIMED = "claimed"  # the provenance of a server's self-description: unverified
CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def claimed_digests(server: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(where it was said, sha256) for every weights digest in a server's self-description."""
    for entry in server.get("models") or ():
        meta = entry.get("meta") if isinstance(entry, dict) else None
        if isinstance(meta, dict) and isinstance(meta.get("sha256"), str):
            yield f"the server's /v1/models entry {entry.get('id')!r}", meta["sha256"].lower()


def local_weights(declared: Mapping[str, Any], server: Mapping[str, Any], loopback: bool) -> Path | None:
    """The weights file on this machine, if there is one to check."""
    given = declared.get("weights_path")
    if isinstance(given, str):
        return Path(given)
    props = server.get("props")
    claimed = props.get("model_path") if isinstance(props, dict) else None
    # A remote server's path names a file on another machine: a same-named file here proves nothing.
    if loopback and isinstance(claimed, str) and Path(claimed).is_absolute() and Path(claimed).is_file():
        return Path(claimed)
    return None


def verify_weights(
    name: str, declared: Mapping[str, Any], server: Mapping[str, Any], loopback: bool
) -> dict[str, Any] | None:
    """What was verified ({"file", "sha256", "checked_against"}), None when no local file; ConfigError
    (one line) when the file is missing or its digest differs from one said about it."""
    path = local_weights(declared, server, loopback)
    if path is None:
        return None
    try:
        actual = file_sha256(path)
    except OSError as exc:
        raise ConfigError(
            f"{name}: cannot read the weights file {path} ({exc.strerror or exc}); fix weights_path in "
            "--model-meta"
        ) from None
    said = list(claimed_digests(server))
    if isinstance(declared.get("weights_sha256"), str):
        said.append(("--model-meta's weights_sha256", declared["weights_sha256"].lower()))
    for where, digest in said:
        if digest != actual:
            raise ConfigError(
                f"{name}: the weights file {path} has sha256 {actual[:16]}…, but {where} says "
                f"{digest[:16]}…; serve the weights you declare (or correct the declaration)"
            )
    return {"file": path.name, "sha256": actual, "checked_against": [where for where, _ in said]}
