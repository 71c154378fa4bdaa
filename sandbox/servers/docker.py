"""DockerServer: the official Postgres image pinned by digest, run through the docker SDK (optional extra)."""

from __future__ import annotations

import time

import psycopg

from sandbox.servers.base import SandboxError, ServerInfo

# Same minor version as Debian 12's server, so results are comparable with the local cluster.
IMAGE = "postgres:15.18-alpine@sha256:3d0f7584ed7d04e27fa050d6683a74746608faf21f202be78460d679cc56461f"
CONTAINER = "agentrel-sandbox"
PASSWORD = "agentrel"  # loopback-only container; not a secret


class DockerServer:
    name = "docker"
    private = True  # AgentRel made this container: its maintenance databases may be closed to PUBLIC

    def __init__(self, image: str = IMAGE) -> None:
        if "@sha256:" not in image:
            raise SandboxError(f"docker image {image!r} is not pinned: give it as name:tag@sha256:<digest>")
        self.image = image
        self.digest = image.split("@", 1)[1]
        self._port: int | None = None

    def _client(self):  # type: ignore[no-untyped-def]
        try:
            import docker  # type: ignore[import-not-found]
        except ImportError:
            raise SandboxError(
                "the docker backend needs the docker SDK: pip install 'agentrel[docker]'"
            ) from None
        try:
            client = docker.from_env(timeout=10)
            client.ping()
        except Exception as exc:  # the SDK raises several unrelated types for "no engine"
            raise SandboxError(
                f"no reachable Docker engine ({type(exc).__name__}); start Docker or use the "
                "default local cluster"
            ) from None
        return client

    def _container(self, client):  # type: ignore[no-untyped-def]
        import docker  # type: ignore[import-not-found]

        try:
            return client.containers.get(CONTAINER)
        except docker.errors.NotFound:
            return None

    def ensure_running(self) -> None:
        client = self._client()
        container = self._container(client)
        if container is None:
            container = client.containers.run(
                self.image,
                name=CONTAINER,
                detach=True,
                environment={"POSTGRES_PASSWORD": PASSWORD, "POSTGRES_USER": "agentrel"},
                ports={"5432/tcp": ("127.0.0.1", None)},
                command=[
                    "postgres",
                    "-c",
                    "fsync=off",
                    "-c",
                    "synchronous_commit=off",
                    "-c",
                    "max_connections=200",
                ],
            )
        elif container.status != "running":
            container.start()
        container.reload()
        self._port = int(container.ports["5432/tcp"][0]["HostPort"])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with psycopg.connect(self.conninfo("postgres"), connect_timeout=2):
                    return
            except psycopg.OperationalError:
                time.sleep(0.5)
        raise SandboxError(f"container {CONTAINER} did not accept connections within 60 s")

    def conninfo(self, dbname: str) -> str:
        if self._port is None:
            self.ensure_running()
        return f"host=127.0.0.1 port={self._port} user=agentrel password={PASSWORD} dbname={dbname}"

    def info(self) -> ServerInfo:
        extra = {"image": self.image, "digest": self.digest}
        try:
            client = self._client()
        except SandboxError as exc:
            return ServerInfo(backend=self.name, location=str(exc), running=False, extra=extra)
        container = self._container(client)
        running = container is not None and container.status == "running"
        return ServerInfo(backend=self.name, location=CONTAINER, running=running, extra=extra)

    def stop(self) -> None:
        container = self._container(self._client())
        if container is not None:
            container.stop()
