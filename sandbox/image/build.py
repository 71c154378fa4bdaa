"""`agentrel sandbox image build`: the sandbox image from the host's own Debian packages, offline of any
registry, loaded into the local engine under a content id.

A build is cached by what decides its packages (the suite's index hash, see sources.py) and by this
recipe: when the engine already has an image labelled with that key, it is returned without a rebuild.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrel.sandbox.image import archive, rootfs, sources
from agentrel.sandbox.servers.base import SandboxError
from agentrel.sandbox.servers.docker import LABEL, START_SCRIPT, USER_LABEL, client
from agentrel.sandbox.servers.local import default_home, find_bindir

# Bump when the layout of the image changes: a cached image of an older recipe is then rebuilt.
RECIPE = "1"
KEY_LABEL = "org.agentrel.build-key"


@dataclass(frozen=True)
class Built:
    image_id: str  # sha256:… — the content id to pass as --image / AGENTREL_DOCKER_IMAGE
    tag: str
    postgres: str  # the server package's version
    packages_digest: str  # SHA-256 of the sorted `name version` list of the installed packages
    cached: bool


def local_major() -> str:
    """The major version of the local cluster's server, which the image must match."""
    out = subprocess.run([str(find_bindir() / "postgres"), "--version"], capture_output=True, text=True)
    words = [w for w in out.stdout.split() if w[:1].isdigit()]
    if out.returncode != 0 or not words:
        raise SandboxError(f"cannot tell the local Postgres version from {out.stdout.strip()!r}")
    return words[0].split(".")[0]


def build(work: Path | None = None, rebuild: bool = False) -> Built:
    # Asked first, before minutes of debootstrap: an image no engine can load is of no use. Loading
    # hundreds of MB takes longer than the default timeout of a request.
    engine = client(timeout=600)
    major = local_major()
    origin = sources.origin()
    key = sources.cache_key(origin, major, RECIPE)
    tag = f"agentrel/sandbox:pg{major}-{key[:12]}"
    if not rebuild:
        found = engine.images.list(filters={"label": f"{KEY_LABEL}={key}"})
        if found:
            return _describe(found[0], tag, cached=True)
    work = work or default_home() / "image"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work, prefix="build-") as tmp:
        root = Path(tmp) / "root"
        rootfs.debootstrap(origin, major, root, work / "debs", work / "debootstrap.log")
        installed = rootfs.packages(root)
        postgres = next((p.split()[1] for p in installed if p.startswith(f"postgresql-{major} ")), "")
        user = rootfs.user_ids(root)
        rootfs.normalize(root, origin.release_epoch)
        (work / f"{key[:12]}.packages").write_text("".join(f"{p}\n" for p in installed))
        layer = Path(tmp) / "layer.tar"
        diff_id = archive.write_layer(root, layer, origin.release_epoch)
        shutil.rmtree(root)
        labels = {
            LABEL: "1",
            KEY_LABEL: key,
            USER_LABEL: user,
            "org.agentrel.release": origin.release,
            "org.agentrel.postgres": postgres,
            "org.agentrel.packages": hashlib.sha256("\n".join(installed).encode()).hexdigest(),
        }
        env = [
            f"PATH=/usr/lib/postgresql/{major}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        ]
        config = archive.image_config(
            diff_id, origin.arch, origin.release_epoch, env, ["/bin/sh", "-c", START_SCRIPT], user, labels
        )
        bundle = Path(tmp) / "image.tar"
        image_id = archive.write_archive(layer, diff_id, config, tag, bundle)
        layer.unlink()
        _load(engine, bundle)
    image = engine.images.get(image_id)
    return _describe(image, tag, cached=False)


def _load(engine: Any, bundle: Path) -> None:
    try:
        with open(bundle, "rb") as fh:
            engine.images.load(fh)
    except Exception as exc:  # the SDK's APIError carries the engine's one-line reason
        raise SandboxError(f"the Docker engine refused the image: {str(exc).splitlines()[0]}") from None


def _describe(image: Any, tag: str, cached: bool) -> Built:
    labels = image.labels or {}
    return Built(
        image_id=str(image.id),
        tag=tag,
        postgres=labels.get("org.agentrel.postgres", "?"),
        packages_digest=labels.get("org.agentrel.packages", "?"),
        cached=cached,
    )
