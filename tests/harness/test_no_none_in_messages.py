"""A missing value is said in words, never as Python's `None` (issue 33.12): each test runs the real
command a newcomer meets with the value missing and reads everything it printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def agentrel(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentrel.harness.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "AGENTREL_HOME": str(home), "COLUMNS": "200"},
        cwd=cwd,
        timeout=300,
    )


@pytest.mark.parametrize("command", ["list", "verify"])
def test_an_empty_registry_names_no_key_as_none(tmp_path, command):
    """Before anything is published the registry has no key and an all-zero head: `registry list` said
    "verified under key None"."""
    registry = tmp_path / "registry.jsonl"
    registry.write_text("")
    done = agentrel("registry", command, "--registry", str(registry), home=tmp_path / "home", cwd=tmp_path)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "None" not in said and "0 entries: nothing signed yet" in said
    assert "0" * 64 not in said  # the genesis head is not a head anyone signed


@pytest.mark.parametrize(
    ("rule", "needs"),
    [(["--until", "detect"], "--target-p"), (["--until", "precision"], "--half-width")],
)
def test_a_sequential_rule_without_its_number_names_what_is_missing(tmp_path, rule, needs):
    """`audit --until detect` without --target-p said "... strictly between 0 and 1, got None"."""
    done = agentrel(
        "audit", "-m", "reference/stochastic", "--tasks", "itsm-cab-window", *rule,
        "--results", str(tmp_path / "r"), home=tmp_path / "home", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert "None" not in line and f"needs {needs}," in line
    assert not (tmp_path / "r").exists() and not (tmp_path / "home").exists()  # refused before anything
