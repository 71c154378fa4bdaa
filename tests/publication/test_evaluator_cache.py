"""The evaluator manifest is remembered across processes only while nothing it was derived from changed.

The attacks: edit an evaluated file and put its modification time back (`touch -d`), add a data file
where a literal names it, or edit a file in the same clock tick as the derivation read it. Each must give
the digest of the edited tree, never the remembered one.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from agentrel.harness.protocol import evaluator_cache, file_digests, sources
from agentrel.harness.protocol.evaluator import evaluator_manifest, remembered_manifest
from agentrel.harness.protocol.libraries import library_inputs

from .test_evaluator_digest import _copy_tree


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setattr(file_digests, "RACY_S", 0.0)  # the copy was just written: settled at once here
    # The import path without the current folder (pytest's): other tests write there while these run,
    # and a folder on the path that changes is, rightly, a reason to derive again.
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p and os.path.abspath(p) != os.getcwd()])
    return _copy_tree(tmp_path / "tree")


def _parses(roots, cache: Path) -> tuple[str, int]:
    sources._parse.cache_clear()  # the in-process memo: count what this derivation parses
    digest = remembered_manifest(roots, cache=cache).digest
    return digest, sources._parse.cache_info().misses


def test_a_second_process_takes_the_manifest_without_parsing(tree, tmp_path):
    cache = tmp_path / "evaluator.json"
    first, parsed = _parses(tree, cache)
    assert parsed > 100 and first == evaluator_manifest(tree).digest
    again, parsed = _parses(tree, cache)
    assert (again, parsed) == (first, 0)


def test_an_edit_with_its_modification_time_put_back_is_derived_again(tree, tmp_path):
    cache = tmp_path / "evaluator.json"
    before, _ = _parses(tree, cache)
    label = tree["dsl"] / "label.py"
    st = label.stat()
    text = label.read_bytes()
    label.write_bytes(text.replace(b"def ", b"def  ", 1).replace(b"\n\n", b"\n", 1))  # same size
    os.utime(label, ns=(st.st_atime_ns, st.st_mtime_ns))  # and its modification time put back
    assert label.stat().st_size == st.st_size and label.stat().st_mtime_ns == st.st_mtime_ns
    after, parsed = _parses(tree, cache)
    assert parsed > 0 and after != before and after == evaluator_manifest(tree).digest


def test_a_data_file_appearing_where_a_literal_names_a_folder_is_derived_again(tree, tmp_path):
    cache = tmp_path / "evaluator.json"
    before, _ = _parses(tree, cache)
    (tree["harness"] / "publication" / "schemas" / "planted.schema.json").write_text("{}")
    after, _ = _parses(tree, cache)
    assert after != before and after == evaluator_manifest(tree).digest


def test_what_changed_just_before_the_derivation_is_not_remembered(tree, tmp_path, monkeypatch):
    monkeypatch.setattr(file_digests, "RACY_S", 3600.0)  # everything here counts as just changed
    cache = tmp_path / "evaluator.json"
    remembered_manifest(tree, cache=cache)
    assert not cache.exists()


def test_another_import_path_is_another_key(tree, tmp_path, monkeypatch):
    cache = tmp_path / "evaluator.json"
    _parses(tree, cache)
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path / "elsewhere")])
    _, parsed = _parses(tree, cache)
    assert parsed > 0  # a shadowing package could sit on the new path: derived again


def test_every_bound_library_file_and_the_import_path_are_witnessed(tmp_path, monkeypatch):
    monkeypatch.setattr(file_digests, "RACY_S", 0.0)
    cache = tmp_path / "evaluator.json"
    manifest = remembered_manifest(cache=cache)
    witness = json.loads(cache.read_text())["witness"]
    found = sources.evaluated_sources()
    assert {str(p) for p in library_inputs(found.third_party)} <= witness.keys()
    assert {str(Path(os.path.abspath(p or "."))) for p in sys.path} <= witness.keys()
    assert {str(p) for _, p in found.files} <= witness.keys()
    assert {str(p) for p in evaluator_cache.folders_under(sources.default_roots().values())} <= witness.keys()
    assert any(name == "lark" for name, *_ in manifest.libraries)
