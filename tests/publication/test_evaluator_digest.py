"""The evaluator digest covers the code that evaluates: the import graph, and libraries by their bytes.

The attacks: rig a file the evaluation runs (the state reader, the tool server, the fault rig, an adapter)
or a library it computes with (a `lark` earlier on PYTHONPATH), and keep the protocol hash. Each must
move the digest.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentrel.harness.protocol.evaluator import evaluator_manifest
from agentrel.harness.protocol.sources import FRONT_DOOR, evaluated_sources

REPO = Path(__file__).resolve().parents[2]
LAYERS = ("dsl", "harness", "analysis", "sandbox")
# The eleven files issue 22 found outside the old hand list (harness/records.py and harness/status.py now
# live in harness/results/).
ISSUE_FILES = {
    "sandbox/dump.py",
    "sandbox/tracking.py",
    "harness/faults/injectors.py",
    "harness/faults/proxy.py",
    "harness/faults/rig.py",
    "harness/agents/openai.py",
    "harness/agents/retry.py",
    "harness/run/runner.py",
    "harness/results/record.py",
    "harness/results/directory.py",
    "harness/results/status.py",
    "harness/run/session.py",
    "sandbox/environments/enterprise/tools/actions.py",
}


def _copy_tree(tmp: Path) -> dict[str, Path]:
    """A byte-identical copy of the package tree (every layer and the front door) under tmp."""
    ignore = shutil.ignore_patterns("__pycache__")
    roots = {layer: tmp / layer for layer in LAYERS}
    for layer in LAYERS:
        shutil.copytree(REPO / layer, roots[layer], ignore=ignore)
    roots[FRONT_DOOR] = tmp / "front"
    shutil.copytree(REPO / "agentrel", roots[FRONT_DOOR], ignore=ignore, symlinks=True)
    return roots


def _path_in(roots: dict[str, Path], name: str) -> Path:
    layer, _, rest = name.partition("/")
    return roots[FRONT_DOOR if layer == "agentrel" else layer] / rest


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return _copy_tree(tmp_path_factory.mktemp("tree"))


def test_the_issue_files_and_the_data_files_are_in_the_set():
    names = {n for n, _ in evaluator_manifest().files}
    assert names >= ISSUE_FILES
    assert {
        "dsl/agentrel.lark",
        "harness/protocol/policy.json",
        "harness/prices.yaml",
        "harness/publication/schemas/publishable_scorecard.schema.json",
        "harness/results/status.py",
        "harness/faults/server.py",  # started by name (`-m`), never imported: the string edge finds it
        "harness/agents/anthropic.py",  # imported lazily by the registry, by name
    } <= names


def test_every_evaluated_file_moves_the_digest_when_one_byte_is_appended(tree):
    """Iterate over the whole derived set (sources and data), on a copy of the tree."""
    same = evaluator_manifest(tree)
    assert same.digest == evaluator_manifest().digest  # the copy is byte-identical, so is its digest
    assert len(same.files) > 100
    unmoved = []
    for name, _ in same.files:
        path = _path_in(tree, name)
        original = path.read_bytes()
        path.write_bytes(original + b"\n")
        try:
            if evaluator_manifest(tree).digest == same.digest:
                unmoved.append(name)
        finally:
            path.write_bytes(original)
    assert unmoved == []
    assert evaluator_manifest(tree).digest == same.digest  # every file restored


def test_a_module_newly_imported_joins_the_set_without_a_list_to_edit(tree):
    """The attack a hand list invites: move the rigging into a new module the reader imports lazily."""
    helper = tree["sandbox"] / "rigged_reader.py"
    dump = tree["sandbox"] / "dump.py"
    original = dump.read_bytes()
    helper.write_text("def skip(table):\n    return False\n")
    dump.write_bytes(original + b"\n\ndef _late():\n    from agentrel.sandbox import rigged_reader  # noqa\n")
    try:
        names = {n for n, _ in evaluator_manifest(tree).files}
        assert "sandbox/rigged_reader.py" in names
        before = evaluator_manifest(tree).digest
        helper.write_text("def skip(table):\n    return True\n")
        assert evaluator_manifest(tree).digest != before
    finally:
        dump.write_bytes(original)
        helper.unlink()


def test_the_set_is_the_import_graph_not_every_file():
    """The CLI's view and an unrelated helper are not evaluation; the derived set says so by itself."""
    names = {n for n, _ in evaluated_sources().files}
    assert "harness/view/app.py" not in names and "harness/view/static/view.js" not in names
    assert "harness/cli/main.py" not in names


def _digest_in_subprocess(extra_path: Path | None) -> dict[str, object]:
    code = (
        "import json\n"
        "from agentrel.harness.protocol.evaluator import evaluator_manifest\n"
        "m = evaluator_manifest()\n"
        "print(json.dumps({'digest': m.digest, 'lark': [l for l in m.libraries if l[0] == 'lark']}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if extra_path is not None:
        env["PYTHONPATH"] = str(extra_path)
    done = subprocess.run(
        [sys.executable, "-P", "-c", code], env=env, capture_output=True, text=True, check=True, timeout=120
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_lark_shadowed_on_pythonpath_moves_the_digest(tmp_path):
    import lark

    shadow = tmp_path / "shadow"
    shutil.copytree(Path(lark.__file__).parent, shadow / "lark", ignore=shutil.ignore_patterns("__pycache__"))
    honest = _digest_in_subprocess(None)
    identical = _digest_in_subprocess(shadow)
    assert identical == honest  # the same bytes are the same library, wherever they are found
    parser = shadow / "lark" / "parsers" / "lalr_parser.py"
    parser.write_bytes(parser.read_bytes() + b"\n")
    rigged = _digest_in_subprocess(shadow)
    assert rigged["digest"] != honest["digest"]
    ((_, version, files_digest, count),) = rigged["lark"]
    ((_, honest_version, honest_files, honest_count),) = honest["lark"]
    assert version == honest_version and count == honest_count  # the version string cannot tell them apart
    assert files_digest != honest_files
