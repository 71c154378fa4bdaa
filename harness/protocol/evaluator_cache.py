"""The current evaluator manifest, remembered across processes by the identity of all it was derived from.

Deriving the manifest parses every evaluated module (the import graph), reads the metadata of every
installed distribution and hashes thousands of files: two seconds before an audit can say anything, and
again in every process that checks a protocol. Nothing in it can change unless a file or folder it was
read from changes, so a process records, beside the manifest, the identity (device, inode, size,
modification and change times: `file_digests.identity`) of each: every file the manifest names, every
folder of the package tree (a new module, a new data file a literal names), every file of every bound
library and its folder, and every `sys.path` entry (a shadowing package, an installed or removed
distribution). The next process with the same interpreter, `sys.path` and entry modules takes the
manifest when every identity is unchanged, and derives it again otherwise.

Only what was settled before the derivation started is recorded: an entry whose change time is within
`RACY_S` of that start may have changed while it was read (or in the same clock tick as the read), so
nothing is remembered then. A cache that cannot be read or written is not used.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agentrel.harness.protocol import file_digests

__all__ = ["folders_under", "recall", "remember"]

_FORMAT = "agentrel-evaluator-cache/1"
MISSING = "missing"


def folders_under(roots: Iterable[Path]) -> list[Path]:
    """Every folder under `roots` (the roots too), byte-code caches aside."""
    out: list[Path] = []
    for root in roots:
        for folder, subfolders, _ in os.walk(root):
            subfolders[:] = [s for s in subfolders if s != "__pycache__"]
            out.append(Path(folder))
    return out


def key(roots: Mapping[str, Path], entries: Iterable[str]) -> dict[str, Any]:
    """What the derivation depends on besides the witnessed files: the interpreter, its import path
    (the current folder spelled out: `""` means wherever the process stands) and the walk's inputs."""
    return {
        "python": sys.version,
        "executable": os.path.realpath(sys.executable),
        "path": [os.path.abspath(p or ".") for p in sys.path],
        "roots": {name: str(path) for name, path in sorted(roots.items())},
        "entries": list(entries),
    }


def recall(where: Path, want: Mapping[str, Any]) -> dict[str, Any] | None:
    """The remembered manifest (as JSON) when it was derived under `want` and nothing it was derived
    from has changed since; else None."""
    try:
        data = json.loads(where.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != _FORMAT or data.get("key") != want:
        return None
    witness = data.get("witness")
    if not isinstance(witness, dict):
        return None
    for path, recorded in witness.items():
        now = file_digests.identity(Path(path))
        if (now[0] if now else MISSING) != recorded:
            return None
    manifest = data.get("manifest")
    return manifest if isinstance(manifest, dict) else None


def remember(
    where: Path, want: Mapping[str, Any], manifest: Mapping[str, Any], paths: Iterable[Path], started_ns: int
) -> bool:
    """Record `manifest` with the identity of every path it was derived from; only when each path had
    settled before `started_ns` (the derivation's start). Whether it was recorded."""
    witness: dict[str, str] = {}
    for path in paths:
        ident = file_digests.identity(path, settled_before_ns=started_ns)
        if ident is not None and not ident[1]:
            return False  # changed within RACY_S of the start: derive again next time
        witness[str(path)] = ident[0] if ident else MISSING  # one appearing later is a change too
    with contextlib.suppress(OSError):
        where.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where.parent, prefix=".evaluator.")
        with os.fdopen(fd, "w") as out:
            json.dump({"format": _FORMAT, "key": want, "witness": witness, "manifest": manifest}, out)
        os.replace(tmp, where)  # readers see the old record or the new one, never half of one
        return True
    return False
