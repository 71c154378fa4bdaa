"""Same state on every backend: seed digest, task template digests and an audit's verdicts, byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentrel.harness.run.episode import prepare
from agentrel.harness.tasks import load_suite
from agentrel.sandbox.servers.docker import DockerServer

AUDIT_TASKS = "itsm-laptop-purchase,itsm-status-notice,csm-double-charge,csm-rma-email"


def test_seed_digest_equals_the_local_clusters(docker_sandbox, sandbox) -> None:
    assert docker_sandbox.seed_template().digest == sandbox.seed_template().digest


def test_task_template_digests_equal_the_local_clusters(docker_sandbox, sandbox) -> None:
    tasks = load_suite()
    assert tasks
    local = {t.id: prepare(sandbox, t).template.digest for t in tasks}
    docker = {t.id: prepare(docker_sandbox, t).template.digest for t in tasks}
    assert docker == local


def _audit(results: Path, env: dict[str, str]) -> dict[str, tuple[str, object, str, str | None]]:
    argv = [
        sys.executable,
        "-m",
        "agentrel.harness.cli",
        "audit",
        "--model",
        "reference/stochastic",
        "--k",
        "2",
    ]
    argv += ["--tasks", AUDIT_TASKS, "--results", str(results), "--no-report", "-j", "4"]
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env}, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (results / "runs.jsonl").read_text().splitlines()]
    return {r["run_id"]: (r["status"], r["verdict"], r["before_digest"], r["after_digest"]) for r in rows}


@pytest.mark.usefixtures("cluster")
def test_audit_gives_the_same_verdicts_and_after_digests(tmp_path: Path, image: str) -> None:
    local = _audit(tmp_path / "local", {"AGENTREL_BACKEND": "local"})
    # A home of its own: its own container and dump cache, so no digest is read from the local run's files.
    home = tmp_path / "home"
    try:
        docker = _audit(tmp_path / "docker", {"AGENTREL_BACKEND": "docker", "AGENTREL_HOME": str(home)})
    finally:
        DockerServer(image, home=home).destroy()
    assert len(local) == 4 * 2
    assert docker == local
    manifest = json.loads((tmp_path / "docker" / "manifest.json").read_text())
    assert "; image sha256:" in manifest["server_version"]
    assert "; image" not in json.loads((tmp_path / "local" / "manifest.json").read_text())["server_version"]
