"""The results owner owns the files: every name of a results directory is spelled in layout.py alone, its
manifest has one reader and one hash, and a manifest that is not a JSON object is refused by name."""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

import pytest
import rfc8785

from agentrel.analysis.load_results import load_results
from agentrel.analysis.normalized import InputError
from agentrel.harness.protocol import identity
from agentrel.harness.results import layout
from agentrel.harness.results.manifest import ManifestUnreadable, manifest_hash, read_manifest
from agentrel.harness.view.index import ResultsIndex

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("analysis", "bench", "dsl", "harness", "sandbox", "scripts", "agentrel")
# The names only a results directory uses (a folder name like `dumps` is also the sandbox's own cache).
NAMES = {
    layout.MANIFEST,
    layout.PROTOCOL,
    layout.EVALUATOR,
    layout.FREEZE,
    layout.EXECUTION_ENVIRONMENT,
    layout.EXECUTION_SLOTS,
    layout.RUNS,
    layout.REGISTRY_POINTER,
}
# Another file of the same name that is not a results directory's: an image archive's own manifest.
ELSEWHERE = {("sandbox/image/archive.py", layout.MANIFEST)}


def _spelled(path: Path) -> set[str]:
    """The file names of NAMES a module spells as a whole string literal (prose inside a message is not a
    path; an f-string's parts are literals too, so `f"{x}/runs.jsonl"` would show as `/runs.jsonl`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in NAMES}


def test_no_source_file_but_layout_spells_a_results_file_name():
    found = []
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "harness/results/layout.py" or "/." in rel:
                continue
            found += [(rel, n) for n in sorted(_spelled(path)) if (rel, n) not in ELSEWHERE]
    assert found == [], "spell these through agentrel.harness.results.layout"


def test_the_guard_sees_a_spelled_name(tmp_path):
    """The guard above can fail: a module that spells runs.jsonl is found."""
    module = tmp_path / "m.py"
    module.write_text('from pathlib import Path\n\nRUNS = Path("r") / "runs.jsonl"\n')
    assert _spelled(module) == {"runs.jsonl"}


def test_one_manifest_reader_and_one_hash(tmp_path):
    assert read_manifest(tmp_path) is None
    document = {"k": 3, "agents": [{"name": "vendør/m", "kind": "model"}], "b": 1.5}
    (tmp_path / layout.MANIFEST).write_text(json.dumps(document))
    assert read_manifest(tmp_path) == document
    assert manifest_hash(document) == hashlib.sha256(rfc8785.dumps(document)).hexdigest()
    assert identity.manifest_hash is manifest_hash  # the protocol identity hashes the same bytes


@pytest.mark.parametrize("body", [b"[1, 2]", b"\xff\xfe{", b'"a string"', b""])
def test_a_manifest_that_is_not_an_object_is_refused_by_name(tmp_path, body):
    (tmp_path / layout.MANIFEST).write_bytes(body)
    with pytest.raises(
        ManifestUnreadable, match=r"manifest\.json: not a manifest \(a JSON object\); restore"
    ):
        read_manifest(tmp_path)
    # Analysis refuses it in one line naming the file, as it did before the reader moved to the owner.
    (tmp_path / layout.RUNS).write_text("")
    with pytest.raises(InputError, match=r"manifest\.json: not a manifest"):
        load_results(tmp_path)
    # The view (read-only) says so beside the runs and reads on without a manifest.
    snap = ResultsIndex(tmp_path).snapshot()
    assert snap.manifest is None
    assert any("manifest.json: not a manifest" in p for p in snap.problems)
