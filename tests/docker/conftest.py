"""The docker backend against a real engine and the image `agentrel sandbox image build` made.

Collected only by `make test-docker` (pyproject's addopts ignores this directory for plain `make test`).
Where there is no engine or no image these tests fail with the reason: they never skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if not os.environ.get("AGENTREL_DOCKER_IMAGE"):
        raise pytest.UsageError(
            "tests/docker need AGENTREL_DOCKER_IMAGE=<the id `agentrel sandbox image build` printed>; "
            "run them with `make test-docker`"
        )


@pytest.fixture(scope="session")
def image() -> str:
    return os.environ["AGENTREL_DOCKER_IMAGE"]


@pytest.fixture(scope="session")
def docker_server(agentrel_home: Path, image: str) -> Iterator[object]:
    """One container for the session, in the same private home as the local cluster of tests/conftest."""
    from agentrel.sandbox.servers.docker import DockerServer

    server = DockerServer(image, home=agentrel_home)
    server.ensure_running()  # no engine or no image: a SandboxError here fails every test, with its line
    yield server
    server.destroy()


@pytest.fixture(scope="session")
def docker_sandbox(docker_server: object, agentrel_home: Path) -> object:
    from agentrel.sandbox.sandbox import Sandbox

    # Its own dump cache: the digests compared below must come from this server, not from files the
    # local cluster's sandbox wrote.
    sb = Sandbox(docker_server, home=agentrel_home / "docker-home")  # type: ignore[arg-type]
    sb.seed_template()
    return sb
