"""analysis/ has no import cycle: every module's imports of other analysis modules (at any depth of
the file, deferred imports included) form a DAG, so the loaders never import the dispatcher back."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter

from tests.analysis.conftest import ROOT


def analysis_imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted((ROOT / "analysis").glob("*.py")):
        name = f"agentrel.analysis.{path.stem}"
        deps = graph.setdefault(name, set())
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("agentrel.analysis.")
            ):
                deps.add(node.module)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith("agentrel.analysis."))
    return graph


def test_no_import_cycle_among_analysis_modules():
    graph = analysis_imports()
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        raise AssertionError(f"import cycle: {' -> '.join(exc.args[1])}") from None
    assert order.index("agentrel.analysis.normalized") < order.index("agentrel.analysis.load_results")
    assert (
        "agentrel.analysis.inputs"
        not in graph["agentrel.analysis.load_csv"] | graph["agentrel.analysis.load_results"]
    )
