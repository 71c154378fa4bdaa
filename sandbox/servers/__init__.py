"""Postgres server backends: a private local cluster (default), an external DSN, or a pinned Docker image."""

from __future__ import annotations

import os

from agentrel.sandbox.servers.base import SandboxError, Server, ServerInfo, server_version

BACKENDS = ("local", "external", "docker")

__all__ = ["BACKENDS", "SandboxError", "Server", "ServerInfo", "resolve_server", "server_version"]


def resolve_server(dsn: str | None = None, backend: str | None = None, image: str | None = None) -> Server:
    """Pick the backend: a DSN (given or AGENTREL_DSN) wins, else AGENTREL_BACKEND, else local.

    `image` (else AGENTREL_DOCKER_IMAGE) is the docker backend's image, pinned by digest."""
    dsn = dsn or os.environ.get("AGENTREL_DSN")
    backend = backend or os.environ.get("AGENTREL_BACKEND") or ("external" if dsn else "local")
    if backend == "external":
        if not dsn:
            raise SandboxError(
                "the external backend needs --dsn or AGENTREL_DSN (e.g. postgresql://user@host/db)"
            )
        from agentrel.sandbox.servers.external import ExternalServer

        return ExternalServer(dsn)
    if backend == "docker":
        from agentrel.sandbox.servers.docker import IMAGE, DockerServer

        return DockerServer(image or os.environ.get("AGENTREL_DOCKER_IMAGE") or IMAGE)
    if backend == "local":
        from agentrel.sandbox.servers.local import LocalCluster

        port = os.environ.get("AGENTREL_PG_PORT")
        return LocalCluster(port=int(port) if port else 5432, tcp=bool(os.environ.get("AGENTREL_PG_TCP")))
    raise SandboxError(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
