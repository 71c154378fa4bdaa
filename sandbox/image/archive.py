"""A deterministic layer tar and the image archive around it, loaded into the engine.

The layer lists names in byte order, clamps every mtime to the release date, and records numeric owners
only. The image is loaded from an archive whose config this module writes (`created` is the release
date too), not made by `docker import`: import stamps the current time into the config, and the image id
is the SHA-256 of that config, so two imports of the same bytes would never share an id.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tarfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CHUNK = 1 << 20


def _entries(root: Path) -> Iterator[tuple[str, Path]]:
    """(archive name, path) of everything under root, parents first, siblings in byte order."""
    stack = [(root, "")]
    while stack:
        directory, prefix = stack.pop()
        with os.scandir(directory) as it:
            names = sorted((e.name for e in it), key=os.fsencode)
        subdirs = []
        for name in names:
            path = directory / name
            arcname = f"{prefix}{name}"
            yield arcname, path
            if stat.S_ISDIR(path.lstat().st_mode):
                subdirs.append((path, f"{arcname}/"))
        stack.extend(reversed(subdirs))  # depth first, still in order


def write_layer(root: Path, out: Path, clamp_epoch: int) -> str:
    """Write root as a tar to `out`; return its SHA-256 (the layer's diff id)."""
    with open(out, "wb") as fh, tarfile.open(fileobj=fh, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for arcname, path in _entries(root):
            info = tar.gettarinfo(str(path), arcname=arcname)  # hard links are found by inode here
            if info is None:  # a socket: nothing a file system image can carry
                continue
            info.mtime = min(int(info.mtime), clamp_epoch)
            info.uname = info.gname = ""
            if info.isreg():
                with open(path, "rb") as src:
                    tar.addfile(info, src)
            else:
                tar.addfile(info)
    return _sha256(out)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def image_config(
    diff_id: str,
    arch: str,
    created_epoch: int,
    env: list[str],
    cmd: list[str],
    user: str,
    labels: dict[str, str],
) -> bytes:
    created = datetime.fromtimestamp(created_epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    config: dict[str, Any] = {
        "architecture": arch,
        "os": "linux",
        "created": created,
        "config": {"Env": env, "Cmd": cmd, "User": user, "Labels": labels, "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
        "history": [{"created": created, "created_by": "agentrel sandbox image build"}],
    }
    return json.dumps(config, sort_keys=True, separators=(",", ":")).encode()


def write_archive(layer: Path, diff_id: str, config: bytes, tag: str, out: Path) -> str:
    """The `docker save` layout (manifest.json, config, one layer); return the image id it loads as."""
    image_id = hashlib.sha256(config).hexdigest()
    manifest = [{"Config": f"{image_id}.json", "RepoTags": [tag], "Layers": [f"{diff_id}/layer.tar"]}]
    with open(out, "wb") as fh, tarfile.open(fileobj=fh, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add_bytes(tar, f"{image_id}.json", config)
        dir_info = tarfile.TarInfo(f"{diff_id}")
        dir_info.type, dir_info.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(dir_info)
        info = tarfile.TarInfo(f"{diff_id}/layer.tar")
        info.size, info.mode = layer.stat().st_size, 0o644
        with open(layer, "rb") as src:
            tar.addfile(info, src)
        _add_bytes(tar, "manifest.json", json.dumps(manifest, separators=(",", ":")).encode())
    return f"sha256:{image_id}"


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))
