"""DockerServer: Postgres in a container with no network, reached on a unix socket in a bind mount.

The image is named by digest only: a local image id `sha256:…` (what `agentrel sandbox image build`
prints) or a registry reference `name[:tag]@sha256:…`. The engine is never asked to pull: an air-gapped
host has no registry, and a pull would put an image the user did not pin in the audit.

The container runs with `network_mode="none"`, all capabilities dropped, as the image's `postgres` user.
Its one mount is `AGENTREL_HOME/docker/<digest>/`, holding the data directory and the socket directory,
one per image so that a different image never starts on another one's data. Every role logs in with
scram-sha-256; the superuser's password is kept 0600 in `AGENTREL_HOME/secrets/` (sandbox/servers/auth.py)
and reaches initdb through a one-use file in the mount, removed by the container once initdb has run.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from agentrel.sandbox.servers.auth import SuperuserSecret, ensure_sealed, write_pwfile
from agentrel.sandbox.servers.base import SandboxError, ServerInfo
from agentrel.sandbox.servers.local import SUPERUSER, default_home
from agentrel.sandbox.servers.settings import server_settings

# The official image (Debian 12's minor version) for hosts with a registry; `docker pull` it first.
IMAGE = "postgres:15.18-alpine@sha256:3d0f7584ed7d04e27fa050d6683a74746608faf21f202be78460d679cc56461f"
PINNED = re.compile(r"^(?:(?P<name>[^@\s]+)@)?(?P<digest>sha256:[0-9a-f]{64})$")
MOUNT = "/var/lib/agentrel"
RUN_SPACE = "/var/lib/agentrel-runs"  # a tmpfs in the container: run databases, as /dev/shm locally
LABEL = "org.agentrel.sandbox"
USER_LABEL = "org.agentrel.postgres-user"
MAX_SOCKET_PATH = 107  # sockaddr_un
START_TIMEOUT = 60.0
PWFILE = ".pwfile"  # in the mount: initdb's one-use password file
# The local cluster's settings (sandbox/servers/settings.py), so both backends serve the same state.
SETTINGS = server_settings(f"{MOUNT}/sock", 5432)
# Works in the built image and in the official ones: the server binaries are found where each keeps them.
START_SCRIPT = "\n".join(
    [
        "set -e",
        'for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && PATH="$d:$PATH"; done',
        "export PATH",
        f"D={MOUNT}/data",
        f"mkdir -p {MOUNT}/sock",
        'if [ ! -s "$D/PG_VERSION" ]; then',
        f'  initdb -D "$D" -U {SUPERUSER} --auth=scram-sha-256 --pwfile={MOUNT}/{PWFILE} '
        "-E UTF8 --locale=C --no-sync >/dev/null",
        "fi",
        f"rm -f {MOUNT}/{PWFILE}",
        'exec postgres -D "$D" ' + " ".join(f"-c '{k}={v}'" for k, v in SETTINGS.items()),
    ]
)


def check_pinned(image: str) -> re.Match[str]:
    match = PINNED.match(image)
    if match is None:
        raise SandboxError(
            f"docker image {image!r} is not pinned: give a local id sha256:<64 hex> "
            "(`agentrel sandbox image build` prints one) or name:tag@sha256:<digest>"
        )
    return match


def client(timeout: int = 30) -> Any:
    """A docker SDK client for an engine that answers, or one line saying there is none."""
    try:
        import docker
    except ImportError:
        raise SandboxError(
            "the docker backend needs the docker SDK: pip install -e '.[docker]' in the AgentRel checkout"
        ) from None
    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        engine = docker.from_env(timeout=timeout)
        engine.ping()
    except Exception as exc:  # the SDK raises several unrelated types for "no engine"
        raise SandboxError(
            f"no Docker engine answers at {where} ({type(exc).__name__}): start one "
            "(`dockerd --bridge=none --iptables=false` needs no network) or use the local cluster"
        ) from None
    return engine


def find_image(engine: Any, ref: str) -> Any:
    """The engine's image for a pinned ref; never pulled. Raises one line when absent or different."""
    import docker

    match = check_pinned(ref)
    name, digest = match.group("name"), match.group("digest")
    try:
        image = engine.images.get(ref)
    except docker.errors.ImageNotFound:
        image = None
    if image is not None and (name is not None or image.id == digest):
        return image
    if name is not None:
        try:
            by_name = engine.images.get(name)
        except docker.errors.ImageNotFound:
            by_name = None
        if by_name is not None:
            if by_name.id == digest:  # pinned by its content id rather than a registry digest
                return by_name
            raise SandboxError(
                f"image {name} on the Docker engine is {by_name.id[:19]}…, not the pinned {digest[:19]}…: "
                f"`docker pull {name}@{digest}` or fix the reference"
            )
    built = [i.id for i in engine.images.list(filters={"label": LABEL})]
    hint = f" (it has AgentRel image(s) {', '.join(built)})" if built else ""
    raise SandboxError(
        f"image {ref} is not on the Docker engine{hint}: run `agentrel sandbox image build` and pass the "
        "id it prints, or `docker load`/`docker pull` that image"
    )


class DockerServer:
    name = "docker"
    private = True  # AgentRel made this container: its maintenance databases may be closed to PUBLIC
    run_space = RUN_SPACE

    def __init__(self, image: str = IMAGE, home: Path | None = None) -> None:
        self.image = image
        self.digest = check_pinned(image).group("digest")
        self.home = (home or default_home()).absolute()
        tag = hashlib.sha256(str(self.home).encode()).hexdigest()[:12]
        self.container_name = f"agentrel-sandbox-{tag}"
        self.mount_dir = self.home / "docker" / self.digest.removeprefix("sha256:")[:12]
        self._image_id: str | None = None
        self.secret = SuperuserSecret.in_home(self.home, f"docker-{self.mount_dir.name}", SUPERUSER)

    @property
    def sockdir(self) -> Path:
        return self.mount_dir / "sock"

    @property
    def image_id(self) -> str:
        """The content id of the image the server runs: it goes into the server version of a manifest."""
        if self._image_id is None:
            self._image_id = str(find_image(client(), self.image).id)
        return self._image_id

    def conninfo(self, dbname: str) -> str:
        """The superuser's: the password file is named, the password is not."""
        return f"{self._address(dbname)} passfile={self.secret.path}"

    def _address(self, dbname: str) -> str:
        return f"host={self.sockdir} port=5432 user={SUPERUSER} dbname={dbname}"

    # -- lifecycle -----------------------------------------------------------------------------------
    def ensure_running(self) -> None:
        engine = client()
        image = find_image(engine, self.image)
        self._image_id = str(image.id)
        with self._lock():
            container = self._container(engine)
            # Made from another image (its data stays in its own directory), or its directory was deleted
            # under it (the socket would never appear on the host): made again.
            stale = container is not None and container.attrs.get("Image") != image.id
            if container is not None and (stale or not self.mount_dir.is_dir()):
                container.remove(force=True)
                container = None
            if container is None:
                container = self._create(engine, image)
            if container.status != "running":
                self._write_pwfile(engine, image)
                container.start()
            self._wait(container)
            with contextlib.suppress(OSError):  # a container made by an earlier version leaves it
                (self.mount_dir / PWFILE).unlink(missing_ok=True)
            fix = f"`docker rm -f {self.container_name}` and remove {self.mount_dir}"
            ensure_sealed(self._address("postgres"), self.secret, self.container_name, fix)

    def _write_pwfile(self, engine: Any, image: Any) -> None:
        """For a first start's initdb (the script removes it either way), readable by the image's user."""
        owner = self._user_ids(engine, image) if os.geteuid() == 0 else None
        try:
            write_pwfile(self.mount_dir / PWFILE, self.secret.ensure(), owner)
        except OSError as exc:
            raise SandboxError(
                f"cannot write into {self.mount_dir}: {exc.strerror}; set AGENTREL_HOME elsewhere"
            ) from None

    def _create(self, engine: Any, image: Any) -> Any:
        from docker.types import Mount

        uid, gid = self._user_ids(engine, image)
        self._prepare_mount(uid, gid)
        return engine.containers.create(
            image.id,
            name=self.container_name,
            entrypoint=["/bin/sh", "-c"],
            command=[START_SCRIPT],
            user=f"{uid}:{gid}",
            network_mode="none",
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mounts=[Mount(target=MOUNT, source=str(self.mount_dir), type="bind")],
            tmpfs={RUN_SPACE: f"uid={uid},gid={gid},mode=0700"},
            shm_size="256m",  # Postgres' dynamic shared memory lives in /dev/shm; the default is 64 MB
            environment={"LC_ALL": "C", "LANG": "C"},
            labels={LABEL: "1", "org.agentrel.home": str(self.home)},
            detach=True,
        )

    def _user_ids(self, engine: Any, image: Any) -> tuple[int, int]:
        """The image's postgres uid:gid: from the label our build sets, else asked of the image itself."""
        ids = (image.labels or {}).get(USER_LABEL)
        if not ids:
            out = engine.containers.run(
                image.id,
                entrypoint=["/bin/sh", "-c"],
                command=["echo $(id -u postgres):$(id -g postgres)"],
                network_mode="none",
                remove=True,
            )
            ids = out.decode().strip()
        uid, _, gid = str(ids).partition(":")
        if not (uid.isdigit() and gid.isdigit()):
            raise SandboxError(f"image {self.image} has no postgres user: it is not a Postgres server image")
        return int(uid), int(gid)

    def _prepare_mount(self, uid: int, gid: int) -> None:
        socket = self.sockdir / ".s.PGSQL.5432"
        if len(str(socket)) > MAX_SOCKET_PATH:
            raise SandboxError(
                f"socket path {socket} is too long for a unix socket: set AGENTREL_HOME to a shorter path"
            )
        try:
            self.mount_dir.parent.mkdir(parents=True, exist_ok=True)
            if not self.mount_dir.exists():
                self.mount_dir.mkdir(mode=0o711)  # others may pass through to the socket, not list
                if os.geteuid() == 0:
                    os.chown(self.mount_dir, uid, gid)
        except OSError as exc:
            raise SandboxError(
                f"cannot use AGENTREL_HOME {self.home}: {exc.strerror}; point it at a writable directory"
            ) from None
        if not _writable_by(self.mount_dir, uid, gid):
            raise SandboxError(
                f"socket directory {self.mount_dir} is not writable by the container's postgres user "
                f"(uid {uid}): `chown {uid}:{gid} {self.mount_dir}`, or remove it and rerun as root"
            )

    def _wait(self, container: Any) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if (self.sockdir / ".s.PGSQL.5432").exists():
                ping = psycopg.pq.PGconn.ping(f"{self._address('postgres')} connect_timeout=2".encode())
                if ping == psycopg.pq.Ping.OK:
                    return
            container.reload()
            if container.status in ("exited", "dead"):
                raise SandboxError(self._exit_message(container))
            time.sleep(0.2)
        raise SandboxError(f"container {self.container_name} did not accept connections within 60 s")

    def _exit_message(self, container: Any) -> str:
        lines = container.logs(tail=5).decode(errors="replace").strip().splitlines()
        last = lines[-1] if lines else f"exit code {container.attrs['State'].get('ExitCode')}"
        if "Permission denied" in last or "Read-only file system" in last:
            return (
                f"the container cannot write its socket directory {self.mount_dir} ({last}): make it "
                "writable by the image's postgres user or set AGENTREL_HOME elsewhere"
            )
        return f"container {self.container_name} exited: {last}"

    def _container(self, engine: Any) -> Any:
        import docker

        try:
            return engine.containers.get(self.container_name)
        except docker.errors.NotFound:
            return None

    @contextmanager
    def _lock(self) -> Iterator[None]:
        # Two commands starting at once would both try to create the container: one waits for the other.
        path = self.home / "docker" / ".lock"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(path, "a")  # noqa: SIM115
        except OSError as exc:
            raise SandboxError(
                f"cannot use AGENTREL_HOME {self.home}: {exc.strerror}; point it at a writable directory"
            ) from None
        with fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            yield

    def info(self) -> ServerInfo:
        extra = {"image": self.image, "socket": str(self.sockdir)}
        try:
            engine = client()
        except SandboxError as exc:
            return ServerInfo(backend=self.name, location=str(exc), running=False, extra=extra)
        container = self._container(engine)
        running = container is not None and container.status == "running"
        if container is not None:
            extra["image id"] = str(container.attrs.get("Image"))
        return ServerInfo(backend=self.name, location=self.container_name, running=running, extra=extra)

    def stop(self) -> None:
        container = self._container(client())
        if container is not None and container.status == "running":
            container.stop()

    def destroy(self) -> None:
        """Remove the container and its directory (tests; the image stays on the engine)."""
        container = self._container(client())
        if container is not None:
            container.remove(force=True)
        shutil.rmtree(self.mount_dir, ignore_errors=True)
        self.secret.remove()


def _writable_by(path: Path, uid: int, gid: int) -> bool:
    st = path.stat()
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IWUSR and st.st_mode & stat.S_IXUSR)
    if st.st_gid == gid:
        return bool(st.st_mode & stat.S_IWGRP and st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IWOTH and st.st_mode & stat.S_IXOTH)
