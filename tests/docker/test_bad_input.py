"""Bad input on the docker backend: one line each, exit 4, naming what to do."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrel.sandbox.servers.docker import client

OTHER = "sha256:" + "0" * 64


def agentrel(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentrel.harness.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "AGENTREL_BACKEND": "docker", **env},
        timeout=300,
    )


def assert_exit_4(result: subprocess.CompletedProcess[str], fragment: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 4, result.stderr
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert fragment in lines[0], lines[0]


def test_no_engine(tmp_path: Path) -> None:
    env = {"AGENTREL_HOME": str(tmp_path), "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    assert_exit_4(agentrel("sandbox", "up", env=env), "no Docker engine answers")


@pytest.mark.parametrize("ref", ["postgres:15", "postgres:latest", "sha256:abc123", "b7ada5e49cd4"])
def test_image_without_a_digest(tmp_path: Path, ref: str) -> None:
    result = agentrel("sandbox", "up", "--image", ref, env={"AGENTREL_HOME": str(tmp_path)})
    assert_exit_4(result, "is not pinned")


def test_unpinned_image_from_the_environment(tmp_path: Path) -> None:
    env = {"AGENTREL_HOME": str(tmp_path), "AGENTREL_DOCKER_IMAGE": "postgres:15-alpine"}
    assert_exit_4(agentrel("sandbox", "up", env=env), "is not pinned")


def test_engine_without_the_image(tmp_path: Path) -> None:
    result = agentrel("sandbox", "up", "--image", OTHER, env={"AGENTREL_HOME": str(tmp_path)})
    assert_exit_4(result, "is not on the Docker engine")
    assert "agentrel sandbox image build" in result.stderr


@pytest.fixture
def tagged(image: str) -> Iterator[str]:
    name = "agentrel/sandbox:bad-input-test"
    engine = client()
    engine.images.get(image).tag(name)
    yield name
    engine.images.remove(name)


def test_digest_not_matching_the_image_found(tmp_path: Path, tagged: str, image: str) -> None:
    result = agentrel("sandbox", "up", "--image", f"{tagged}@{OTHER}", env={"AGENTREL_HOME": str(tmp_path)})
    assert_exit_4(result, "not the pinned")
    # The same name pinned by the image's own id is accepted: the check is the digest, not the name.
    ok = agentrel("sandbox", "status", "--image", f"{tagged}@{image}", env={"AGENTREL_HOME": str(tmp_path)})
    assert "not pinned" not in ok.stderr and "not the pinned" not in ok.stderr


def test_socket_directory_the_container_cannot_write(tmp_path: Path, image: str) -> None:
    from agentrel.sandbox.servers.docker import DockerServer

    server = DockerServer(image, home=tmp_path)
    server.mount_dir.mkdir(parents=True, mode=0o755)  # root's, not the image's postgres user's
    if os.geteuid() != 0:
        server.mount_dir.chmod(0o555)
    try:
        result = agentrel("sandbox", "up", "--image", image, env={"AGENTREL_HOME": str(tmp_path)})
        assert_exit_4(result, "not writable by the container's postgres user")
    finally:
        server.destroy()
