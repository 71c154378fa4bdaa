"""The layers are enforced, not described: `make lint` runs lint-imports on pyproject's contracts. The
negative: a back edge added to a copy of the tree (the damage DSL importing the runner) is refused."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).parent / "lint-imports"


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT), "--config", str(REPO / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _tree(tmp: Path) -> Path:
    """The package as the import system sees it: agentrel/ with each layer folder inside it."""
    pkg = tmp / "agentrel"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "agentrel", pkg, ignore=ignore, symlinks=True)
    for layer in ("dsl", "sandbox", "harness", "analysis"):
        (pkg / layer).unlink()
        shutil.copytree(REPO / layer, pkg / layer, ignore=ignore)
    return tmp


def test_the_tree_keeps_its_layers(tmp_path):
    res = _lint(_tree(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert " kept, 0 broken" in res.stdout
    assert "The sandbox machinery and the tool contract name no environment KEPT" in res.stdout


def test_a_back_edge_from_the_dsl_to_the_runner_is_refused(tmp_path):
    root = _tree(tmp_path)
    (root / "agentrel" / "dsl" / "shortcut.py").write_text(
        "from agentrel.harness.run import runner  # a back edge\n"
    )
    res = _lint(root)
    assert res.returncode != 0
    assert "agentrel.dsl is not allowed to import agentrel.harness" in res.stdout
    assert "agentrel.dsl.shortcut -> agentrel.harness.run.runner" in res.stdout


def test_the_tool_contract_reaching_an_environment_is_refused(tmp_path):
    """The negative of the sandbox contract: `sandbox/tools/__init__.py` once imported the built-in's
    tools eagerly, closing an 18-file cycle through sandbox/ and sandbox/environments/. Put that edge
    back and lint-imports names it."""
    root = _tree(tmp_path)
    init = root / "agentrel" / "sandbox" / "tools" / "__init__.py"
    init.write_text(
        init.read_text() + "from agentrel.sandbox.environments.enterprise.tools import all_tools  # back\n"
    )
    res = _lint(root)
    said = " ".join(res.stdout.split())  # lint-imports wraps long lines at the terminal's width
    assert res.returncode != 0
    assert "The sandbox machinery and the tool contract name no environment BROKEN" in said
    assert "agentrel.sandbox.tools is not allowed to import agentrel.sandbox.environments.enterprise" in said


def test_the_machinery_looking_up_an_environment_is_refused(tmp_path):
    """The machinery is handed its environment (`Databases(server, env)`); one that looks it up in the
    registry again (a default read from the process) is refused."""
    root = _tree(tmp_path)
    databases = root / "agentrel" / "sandbox" / "databases.py"
    databases.write_text(
        databases.read_text() + "\nfrom agentrel.sandbox.environments.registry import default  # back\n"
    )
    res = _lint(root)
    said = " ".join(res.stdout.split())
    assert res.returncode != 0
    assert (
        "agentrel.sandbox.databases is not allowed to import agentrel.sandbox.environments.registry" in said
    )
