"""The container: no network, a unix socket in AGENTREL_HOME, the pinned image, non-root, same settings."""

from __future__ import annotations

from typing import Any

import psycopg

from agentrel.sandbox.servers.docker import DockerServer, client


def _inspect(server: DockerServer) -> dict[str, Any]:
    return dict(client().api.inspect_container(server.container_name))


def test_container_has_no_network_and_publishes_nothing(docker_server: DockerServer) -> None:
    attrs = _inspect(docker_server)
    assert attrs["HostConfig"]["NetworkMode"] == "none"
    assert not attrs["HostConfig"].get("PortBindings")
    assert not attrs["NetworkSettings"].get("Ports")
    assert set(attrs["NetworkSettings"]["Networks"]) <= {"none"}
    assert attrs["HostConfig"]["CapDrop"] == ["ALL"]


def test_server_listens_only_on_the_socket_in_agentrel_home(
    docker_server: DockerServer, agentrel_home
) -> None:
    assert docker_server.sockdir.is_relative_to(agentrel_home)
    assert (docker_server.sockdir / ".s.PGSQL.5432").is_socket()
    with psycopg.connect(docker_server.conninfo("postgres"), autocommit=True) as conn:
        assert conn.execute("SHOW listen_addresses").fetchone() == ("",)
        assert conn.execute("SHOW fsync").fetchone() == ("off",)
        assert conn.execute("SHOW timezone").fetchone() == ("UTC",)


def test_runs_as_the_images_postgres_user_from_the_pinned_image(docker_server: DockerServer, image) -> None:
    attrs = _inspect(docker_server)
    assert attrs["Image"] == docker_server.image_id
    if image.startswith("sha256:"):
        assert attrs["Image"] == image
    uid = attrs["Config"]["User"].split(":")[0]
    assert uid.isdigit() and int(uid) != 0


def test_same_major_version_as_the_local_cluster(docker_sandbox, sandbox) -> None:
    docker_version, local_version = docker_sandbox.version(), sandbox.version()
    assert docker_version.split()[:2] == ["PostgreSQL", docker_version.split()[1]]
    assert docker_version.split()[1].split(".")[0] == local_version.split()[1].split(".")[0]


def test_version_names_the_image_digest_so_the_manifest_carries_it(docker_sandbox) -> None:
    version = docker_sandbox.version()
    assert version.endswith(f"; image {docker_sandbox.server.image_id}")
    assert docker_sandbox.server.image_id.startswith("sha256:")


def test_restart_reuses_the_container_and_its_templates(docker_server: DockerServer, docker_sandbox) -> None:
    seed = docker_sandbox.seed_template()
    docker_server.stop()
    docker_server.ensure_running()
    assert docker_sandbox.dbs.exists(seed.name)
