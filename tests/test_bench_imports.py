"""The benchmarks still import what they use: every `from agentrel… import name` in bench/ names something
that exists. Benchmarks are not run by `make test` (speed is measured by hand), so a rename broke two of
them silently once (view_latency's ResultsDir, publish_scale's re-derivation stub); this catches the
import half of that without running them."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def agentrel_imports(path: Path) -> list[tuple[str, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agentrel"):
            found += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names if alias.name.startswith("agentrel")]
    return found


@pytest.mark.parametrize("path", sorted(BENCH.glob("*.py")), ids=lambda p: p.name)
def test_every_name_a_benchmark_imports_exists(path: Path) -> None:
    for module, name in agentrel_imports(path):
        imported = importlib.import_module(module)
        if name and not hasattr(imported, name):
            # `from package import submodule` is fine too.
            importlib.import_module(f"{module}.{name}")


def test_the_check_catches_a_moved_name(tmp_path: Path) -> None:
    """The attack it stops: a benchmark importing a name from the module it left."""
    bad = tmp_path / "bench_bad.py"
    bad.write_text("from agentrel.harness.results.record import ResultsDir\n")
    ((module, name),) = agentrel_imports(bad)
    imported = importlib.import_module(module)
    assert not hasattr(imported, name)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"{module}.{name}")
