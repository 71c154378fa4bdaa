"""One import namespace: a user's own `harness.py`, `analysis/`, `dsl/` or `sandbox/` in the working
directory never replaces AgentRel's, for the CLI, the library and the subprocesses AgentRel starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BROKEN = "raise ImportError('the user\\'s own {name}, not AgentRel\\'s')\n"


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A directory like a user's: modules named like AgentRel's old top-level packages, all broken."""
    (tmp_path / "harness.py").write_text(BROKEN.format(name="harness"))
    for package in ("analysis", "dsl", "sandbox"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(BROKEN.format(name=package))
    return tmp_path


def python(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Plain `python -m` / `python -c`: the working directory is first on the path, as for a user.
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env
    )


def test_the_users_modules_are_really_on_the_path(scratch: Path):
    # The attack is live: without the namespace, these names resolve to the user's broken files.
    result = python(scratch, "-c", "import harness")
    assert result.returncode != 0 and "the user's own harness" in result.stderr


def test_the_cli_runs_beside_the_users_modules(scratch: Path, agentrel_home: Path):
    result = python(scratch, "-m", "agentrel", "tasks", "list")
    assert result.returncode == 0, result.stderr
    assert "itsm-cab-window" in result.stdout and "csm-double-charge" in result.stdout


def test_the_library_runs_beside_the_users_modules(scratch: Path):
    code = "import agentrel, agentrel.analysis.pipeline, agentrel.dsl.parser; print(agentrel.__version__)"
    result = python(scratch, "-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0.1.0"


def test_a_fault_audit_starts_its_tool_servers_beside_the_users_modules(
    scratch: Path, sandbox: object, agentrel_home: Path
):
    schedule = scratch / "schedule.yaml"
    schedule.write_text(
        "name: lost\nfaults:\n  - {id: lost, kind: lost_response, trigger: {when: first_irreversible_call}}\n"
    )
    args = ["-m", "agentrel", "audit", "--model", "scripted/reconcile", "--k", "1"]
    args += ["--tasks", "csm-double-charge", "--faults", str(schedule), "--results", "r", "--no-report"]
    result = python(scratch, *args)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in (scratch / "r" / "runs.jsonl").read_text().splitlines()]
    fault_runs = [r for r in records if r["condition"] == "fault:lost"]
    # The tool server subprocess started and the fault was witnessed: the user's modules shadowed nothing.
    assert [r["status"] for r in fault_runs] == ["valid"]
    assert fault_runs[0]["fault"]["verdict"] == "witnessed"
