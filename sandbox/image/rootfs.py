"""The root file system: debootstrap of the host's release with Postgres, then stripped of what varies.

Everything removed here is either created at build time with the build's time, host or randomness in it
(logs, caches, machine and host names, the snakeoil TLS key, the cluster Debian's postinst makes with a
random system identifier) or never read by a sandbox server (documentation, translations, apt indexes).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from agentrel.sandbox.image.sources import Origin
from agentrel.sandbox.servers.base import SandboxError

# Paths relative to the root, globbed; a directory matched is removed with its contents.
REMOVE = (
    "debootstrap",
    "dev/*",  # the engine provides /dev
    "proc/*",
    "sys/*",
    "run/*",
    "tmp/*",
    "var/tmp/*",
    "var/log/*",
    "var/cache/*",
    "var/lib/apt/lists/*",
    "var/lib/dpkg/*-old",
    "var/lib/dbus/machine-id",
    "var/lib/systemd/random-seed",
    "etc/machine-id",
    "etc/hostname",
    "etc/resolv.conf",
    "etc/*-",  # passwd-, group-, shadow- backups written by adduser
    "etc/ssl/private/ssl-cert-snakeoil.key",
    "etc/ssl/certs/ssl-cert-snakeoil.pem",
    "etc/postgresql/*/main",
    "var/lib/postgresql/*/main",
    "usr/share/doc/*",
    "usr/share/man/*",
    "usr/share/info/*",
    "usr/share/locale/*",
    "usr/share/lintian/*",
)
SHADOW_FILES = ("etc/shadow", "etc/gshadow")


def debootstrap(o: Origin, pg_major: str, root: Path, debs: Path, log: Path) -> None:
    """Install the minimal base plus the Postgres server package into `root` (needs root and the mirror)."""
    exe = shutil.which("debootstrap")
    if exe is None:
        raise SandboxError("debootstrap not found: apt-get install debootstrap")
    if os.geteuid() != 0:
        raise SandboxError("`sandbox image build` runs debootstrap, which needs root: run it with sudo")
    debs.mkdir(parents=True, exist_ok=True)
    argv = [
        exe,
        "--variant=minbase",
        f"--arch={o.arch}",
        f"--include=postgresql-{pg_major}",
        f"--cache-dir={debs.absolute()}",  # keeps the .deb files: a rebuild downloads nothing known
        o.release,
        str(root),
        o.mirror,
    ]
    with open(log, "w") as fh:
        # A fixed umask: files the maintainer scripts create take their mode from it, and it is in the tar.
        env = dict(os.environ, LC_ALL="C")
        result = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, env=env, umask=0o022)
    _unmount_below(root)
    if result.returncode != 0:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith(("E:", "W:"))]
        last = lines[-1] if lines else f"exit status {result.returncode}"
        raise SandboxError(f"debootstrap failed ({last}); full log in {log}")


def _unmount_below(root: Path) -> None:
    # debootstrap mounts /proc and /sys in the target and may leave them when it fails half-way.
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return
    targets = [m.split()[1] for m in mounts if m.split()[1].startswith(f"{root.absolute()}/")]
    for target in sorted(targets, reverse=True):
        subprocess.run(["umount", "-l", target], capture_output=True)


def normalize(root: Path, clamp_epoch: int) -> None:
    for pattern in REMOVE:
        for path in sorted(root.glob(pattern), reverse=True):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
    # The "last password change" field counts days to the build; the release date stands in for it.
    day = str(clamp_epoch // 86400)
    for name in SHADOW_FILES:
        path = root / name
        if path.is_file():
            rows = path.read_text().splitlines()
            if name == "etc/shadow":
                rows = [_set_field(row, 2, day) for row in rows]
            path.write_text("".join(f"{r}\n" for r in rows))
    for sub in ("var/log", "var/cache", "tmp", "var/tmp", "run"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "tmp").chmod(0o1777)
    (root / "var/tmp").chmod(0o1777)


def _set_field(row: str, index: int, value: str) -> str:
    fields = row.split(":")
    if len(fields) > index and fields[index]:
        fields[index] = value
    return ":".join(fields)


def packages(root: Path) -> list[str]:
    """`name version` of every installed package, sorted: what the image was built from."""
    status = (root / "var/lib/dpkg/status").read_text()
    out = []
    for block in status.split("\n\n"):
        name = re.search(r"^Package: (.+)$", block, re.MULTILINE)
        version = re.search(r"^Version: (.+)$", block, re.MULTILINE)
        if name and version and "install ok installed" in block:
            out.append(f"{name.group(1)} {version.group(1)}")
    return sorted(out)


def user_ids(root: Path, user: str = "postgres") -> str:
    """`uid:gid` of `user` in the image, so the host can hand it the socket directory."""
    for line in (root / "etc/passwd").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == user:
            return f"{fields[2]}:{fields[3]}"
    raise SandboxError(f"the built image has no {user!r} user: the postgresql package did not configure")
