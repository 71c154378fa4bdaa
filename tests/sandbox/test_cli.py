"""The sandbox CLI end to end, in a subprocess, including its one-line errors."""

import os
import subprocess
import sys

import pytest

from agentrel.dsl.state import load


def agentrel(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentrel.harness.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], code: int, fragment: str) -> None:
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert fragment in lines[0]


def test_status_of_a_server_that_is_not_running_prints_the_table_and_exits_3(tmp_path):
    status = agentrel("sandbox", "status", env={"AGENTREL_HOME": str(tmp_path / "nothing-here")})
    assert status.returncode == 3, status.stderr
    assert "running" in status.stdout and "no" in status.stdout


def test_status_digest_and_dump(sandbox, tmp_path):
    status = agentrel("sandbox", "status")
    assert status.returncode == 0, status.stderr
    assert "running" in status.stdout and "yes" in status.stdout and "PostgreSQL" in status.stdout
    digest = agentrel("sandbox", "digest")
    assert digest.stdout.strip() == sandbox.seed_template().digest
    out = tmp_path / "seed.jsonl.gz"
    dumped = agentrel("sandbox", "dump", sandbox.seed_template().name, "-o", str(out))
    assert dumped.returncode == 0, dumped.stderr
    assert load(out).digest() == sandbox.seed_template().digest


def test_missing_binaries_name_what_to_install(tmp_path):
    result = agentrel(
        "sandbox",
        "up",
        env={"AGENTREL_HOME": str(tmp_path / "h"), "AGENTREL_PG_BINDIR": str(tmp_path / "nowhere")},
    )
    assert_one_line_error(result, 4, "install the PostgreSQL server")


def test_unreachable_dsn_is_one_line():
    result = agentrel(
        "sandbox", "up", "--dsn", "host=127.0.0.1 port=9 user=nobody dbname=x connect_timeout=2"
    )
    assert_one_line_error(result, 4, "cannot reach Postgres at")


@pytest.mark.parametrize("home", ["/etc/passwd/agentrel", "/proc/agentrel-home"])
def test_unusable_data_directory_is_one_line(home):
    result = agentrel("sandbox", "up", env={"AGENTREL_HOME": home})
    assert_one_line_error(result, 4, "cannot use")


def test_unknown_database_and_unknown_backend(sandbox, tmp_path):
    assert_one_line_error(
        agentrel("sandbox", "dump", "agentrel_nope", "-o", str(tmp_path / "x")), 3, "no database named"
    )
    assert_one_line_error(agentrel("sandbox", "up", "--backend", "kubernetes"), 4, "unknown backend")


def test_docker_backend_without_an_engine_is_one_line(tmp_path):
    result = agentrel(
        "sandbox", "up", "--backend", "docker", env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    )
    assert result.returncode == 4
    assert "docker" in result.stderr.lower() and len(result.stderr.strip().splitlines()) == 1
