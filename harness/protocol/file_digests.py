"""SHA-256 of many installed files, remembered by file identity across processes.

The evaluator digest hashes every file of the libraries it binds (tens of megabytes): seconds at each
audit's start. An installed file that has not changed since it was hashed has the same identity
(device, inode, size, modification and change times), so its hash is read from a small cache in the
user's cache folder instead. The change time is in the key because nobody but the kernel sets it: an
edited file whose modification time was put back (`touch -d`) still gets a new change time, so it is
hashed again. A file changed within the last seconds is not remembered: timestamps tick coarsely, so an
edit made in the same tick as the hash could keep the identity (git's "racily clean" case). A cache
that cannot be read or written is simply not used.

One cache per Python environment (named by `sys.prefix`), holding only files that still exist: one shared
cache grew with every venv and clone that ever audited (103 MB on a shared machine, read and rewritten by
every audit: over a second of each start).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

__all__ = ["cache_file", "identity", "sha256_files"]

_CHUNK = 1 << 20
_FORMAT = "agentrel-file-digests/1"
RACY_S = 2.0  # a file whose change time is this recent is hashed every time, never remembered


def cache_file(stem: str = "file-digests") -> Path:
    """`$AGENTREL_CACHE_DIR/<stem>-<environment>.json`, by default under the user's cache folder (XDG);
    <environment> names this interpreter's `sys.prefix` (a venv), so each venv keeps its own."""
    base = os.environ.get("AGENTREL_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agentrel"
    )
    environment = hashlib.sha256(os.path.realpath(sys.prefix).encode()).hexdigest()[:16]
    return Path(base) / f"{stem}-{environment}.json"


def identity(path: Path, settled_before_ns: int | None = None) -> tuple[str, bool] | None:
    """The identity of a file or folder, and whether it had settled (changed more than `RACY_S` before
    `settled_before_ns`, by default now) so that it may be remembered; None when it cannot be read."""
    try:
        st = path.stat()
    except OSError:
        return None
    settled = (settled_before_ns or time.time_ns()) - st.st_ctime_ns > RACY_S * 1e9
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}", settled


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)  # hashlib releases the GIL on large buffers: threads help
    except OSError:
        return "missing"
    return digest.hexdigest()


def _load(path: Path) -> dict[str, list[str]]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != _FORMAT or not isinstance(data.get("files"), dict):
        return {}
    return data["files"]


def _save(path: Path, files: dict[str, list[str]]) -> None:
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".file-digests.")
        with os.fdopen(fd, "w") as out:
            json.dump({"format": _FORMAT, "files": files}, out, separators=(",", ":"))
        os.replace(tmp, path)  # readers see the old cache or the new one, never half of one


def sha256_files(paths: Iterable[Path], cache: Path | None = None) -> dict[Path, str]:
    """The SHA-256 of each file ("missing" when it cannot be read), cached by file identity."""
    where = cache or cache_file()
    known = _load(where)
    out: dict[Path, str] = {}
    todo: list[tuple[Path, tuple[str, bool] | None]] = []
    for path in dict.fromkeys(paths):
        ident = identity(path)
        hit = known.get(str(path))
        if ident is not None and hit is not None and hit[0] == ident[0]:
            out[path] = hit[1]
        else:
            todo.append((path, ident))
    if todo:
        with ThreadPoolExecutor(max_workers=4) as pool:
            hashed = list(pool.map(_sha256, [p for p, _ in todo]))
        for (path, ident), sha in zip(todo, hashed, strict=True):
            out[path] = sha
            if ident is not None and ident[1] and sha != "missing":
                known[str(path)] = [ident[0], sha]
        # Files since deleted (an uninstalled library, a removed venv's) leave the cache as it is written.
        _save(where, {name: entry for name, entry in known.items() if os.path.exists(name)})
    return out
