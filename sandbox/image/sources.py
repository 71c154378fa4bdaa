"""What the image is built from: the host's release, the mirror its apt sources name, and that suite's index.

The build uses the host's own apt configuration rather than a URL of ours, so an air-gapped site that
mirrors Debian internally builds from its mirror with no change. The suite's `InRelease` file names the
hash of every package index, and a stable suite's indexes (so the versions debootstrap resolves) change
only at a point release: its hash is the cache key of a build.
"""

from __future__ import annotations

import hashlib
import platform
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from pathlib import Path

from agentrel.sandbox.servers.base import SandboxError

APT_DIR = Path("/etc/apt")
LISTS_DIR = Path("/var/lib/apt/lists")
OS_RELEASE = Path("/etc/os-release")
ARCHES = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "armhf", "ppc64le": "ppc64el", "s390x": "s390x"}


@dataclass(frozen=True)
class Origin:
    release: str  # the host's codename, e.g. bookworm
    mirror: str  # the archive URI the host's apt sources give for that suite
    arch: str  # Debian's name for this machine's architecture
    index_hash: str  # SHA-256 of the suite's main Packages index, as InRelease names it
    release_epoch: int  # InRelease's Date: every build-time mtime is clamped to it


def host_release(os_release: Path = OS_RELEASE) -> str:
    try:
        text = os_release.read_text()
    except OSError:
        raise SandboxError(
            f"cannot read {os_release}: the image is built for the host's Debian release"
        ) from None
    fields = dict(
        line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#")
    )
    if fields.get("ID", "").strip('"') not in ("debian",) and "debian" not in fields.get("ID_LIKE", ""):
        raise SandboxError("`sandbox image build` needs a Debian host (debootstrap of the host's release)")
    codename = fields.get("VERSION_CODENAME", "").strip('"')
    if not codename:
        raise SandboxError(f"{os_release} names no VERSION_CODENAME: cannot tell which release to build")
    return codename


def host_arch() -> str:
    machine = platform.machine()
    if machine not in ARCHES:
        raise SandboxError(f"unsupported architecture {machine}: the image is built for {', '.join(ARCHES)}")
    return ARCHES[machine]


def _stanzas(apt_dir: Path) -> list[tuple[list[str], list[str]]]:
    """(URIs, suites) of every enabled `deb` source, deb822 `.sources` files and one-line `.list` files."""
    found: list[tuple[list[str], list[str]]] = []
    for path in sorted(apt_dir.glob("sources.list.d/*.sources")):
        for block in path.read_text().split("\n\n"):
            fields: dict[str, str] = {}
            for line in block.splitlines():
                if line.startswith("#") or ":" not in line:
                    continue
                key, value = line.split(":", 1)
                fields[key.strip().lower()] = value.strip()
            if "deb" in fields.get("types", "").split() and fields.get("enabled", "yes") != "no":
                found.append((fields.get("uris", "").split(), fields.get("suites", "").split()))
    lists = [apt_dir / "sources.list", *sorted(apt_dir.glob("sources.list.d/*.list"))]
    for path in lists:
        if not path.is_file():
            continue
        for line in path.read_text().splitlines():
            words = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()  # options like [arch=amd64]
            if len(words) >= 3 and words[0] == "deb":
                found.append(([words[1]], [words[2]]))
    return found


def host_mirror(release: str, apt_dir: Path = APT_DIR) -> str:
    for uris, suites in _stanzas(apt_dir):
        if release in suites and uris:
            return uris[0].rstrip("/")
    raise SandboxError(
        f"no apt source in {apt_dir} serves suite {release!r}: add the Debian mirror you use to apt's sources"
    )


def _in_release(mirror: str, release: str, lists_dir: Path) -> str:
    # The mirror's copy first (what debootstrap is about to use); the host's cached copy when offline.
    url = f"{mirror}/dists/{release}/InRelease"
    try:
        with urllib.request.urlopen(url, timeout=20) as resp:
            return resp.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError):
        cached = lists_dir / (re.sub(r"^[a-z]+://", "", url).replace("/", "_"))
        if cached.is_file():
            return cached.read_text(errors="replace")
        raise SandboxError(f"cannot read {url}: the build needs the host's Debian mirror") from None


def origin(apt_dir: Path = APT_DIR, lists_dir: Path = LISTS_DIR) -> Origin:
    release = host_release()
    mirror = host_mirror(release, apt_dir)
    arch = host_arch()
    text = _in_release(mirror, release, lists_dir)
    date = re.search(r"^Date:\s*(.+)$", text, re.MULTILINE)
    wanted = f"main/binary-{arch}/Packages"
    index = re.search(rf"^\s*([0-9a-f]{{64}})\s+\d+\s+{re.escape(wanted)}$", text, re.MULTILINE)
    if not date or not index:
        # Some mirrors list only compressed indexes: their hashes pin the same content.
        index = index or re.search(
            rf"^\s*([0-9a-f]{{64}})\s+\d+\s+{re.escape(wanted)}\.xz$", text, re.MULTILINE
        )
    if not date or not index:
        raise SandboxError(f"{mirror}/dists/{release}/InRelease lacks a Date or a SHA256 entry for {wanted}")
    epoch = int(parsedate_to_datetime(date.group(1).strip()).timestamp())
    return Origin(release, mirror, arch, index.group(1), epoch)


def cache_key(o: Origin, pg_major: str, recipe: str) -> str:
    """Names a build by everything that decides its packages and its layout."""
    parts = [o.release, o.mirror, o.arch, o.index_hash, pg_major, recipe]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()
