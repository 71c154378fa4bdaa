"""The evaluator digest: SHA-256 over the exact bytes of the code that records, labels, scores and decides,
and of the installed libraries that code computes with.

Never a version string the running code reports about itself: an edited labeller with the same package
version has another digest, and so do two checkouts that differ by one byte in any evaluated file. Which
files: `sources.py` derives them from the import graph of the evaluation's entry modules (no hand list);
which libraries: `libraries.py` binds every distribution those modules import, by the hashes of its
installed files as the import system finds them. Files are named by their path inside the package tree,
sorted, so a checkout and an installed wheel give the same digest for the same bytes.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agentrel.harness.protocol import evaluator_cache, file_digests
from agentrel.harness.protocol.canonical import canonical_hash
from agentrel.harness.protocol.libraries import bind_libraries, library_inputs
from agentrel.harness.protocol.sources import ENTRY_MODULES, SourceSet, default_roots, evaluated_sources

__all__ = [
    "ENTRY_MODULES",
    "EvaluatorManifest",
    "current_evaluator_digest",
    "current_evaluator_manifest",
    "describe_change",
    "evaluator_manifest",
    "remembered_manifest",
]


class EvaluatorManifest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str = "agentrel-evaluator/2"
    entries: tuple[str, ...]  # the modules the import graph is walked from
    files: tuple[tuple[str, str], ...]  # (path in the package tree, sha256 of its bytes), sorted by path
    # (distribution, version, sha256 over its files' (path, sha256) list, number of files), sorted
    libraries: tuple[tuple[str, str, str, int], ...]

    @property
    def digest(self) -> str:
        return canonical_hash(self.model_dump(mode="json"))


def evaluator_manifest(
    roots: Mapping[str, Path] | None = None, entries: tuple[str, ...] = ENTRY_MODULES
) -> EvaluatorManifest:
    """Every evaluated file and library with its hash; `roots` maps a layer folder (dsl, harness, ...) or
    "agentrel" (the front door) to another folder, so tests can hash an edited copy of the tree."""
    return _derive(roots, entries)[0]


def _derive(
    roots: Mapping[str, Path] | None, entries: tuple[str, ...]
) -> tuple[EvaluatorManifest, SourceSet]:
    found = evaluated_sources(roots, entries)
    files = {name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in found.files}
    manifest = EvaluatorManifest(
        entries=tuple(entries),
        files=tuple(sorted(files.items())),
        libraries=bind_libraries(found.third_party),
    )
    return manifest, found


def _derived_from(tree: Mapping[str, Path], found: SourceSet) -> list[Path]:
    """Every file and folder a manifest was derived from: what `evaluator_cache` witnesses."""
    read = [path for _, path in found.files]
    read += evaluator_cache.folders_under(tree.values())
    read += library_inputs(found.third_party)
    read += [Path(os.path.abspath(entry or ".")) for entry in sys.path]
    return sorted(set(read))


def remembered_manifest(
    roots: Mapping[str, Path] | None = None,
    entries: tuple[str, ...] = ENTRY_MODULES,
    cache: Path | None = None,
) -> EvaluatorManifest:
    """`evaluator_manifest`, taken from the cache (`evaluator_cache`) when nothing it was derived from
    has changed since a process derived it, and derived (and remembered) otherwise."""
    where = cache or file_digests.cache_file("evaluator")
    tree = {**default_roots(), **(roots or {})}
    want = evaluator_cache.key(tree, entries)
    if (known := evaluator_cache.recall(where, want)) is not None:
        with contextlib.suppress(ValueError):
            return EvaluatorManifest.model_validate(known)
    started = time.time_ns()
    manifest, found = _derive(tree, entries)
    evaluator_cache.remember(
        where, want, manifest.model_dump(mode="json"), _derived_from(tree, found), started
    )
    return manifest


@functools.cache
def current_evaluator_manifest() -> EvaluatorManifest:
    """The manifest of the code this process runs (read once: the files do not change under a process)."""
    return remembered_manifest()


def current_evaluator_digest() -> str:
    return current_evaluator_manifest().digest


def describe_change(old: EvaluatorManifest, new: EvaluatorManifest) -> str:
    """What moved the digest, in words a user can act on: each library whose version or bytes changed,
    was added or left, and how many evaluated files changed (the first few named)."""
    before = {name: (version, digest) for name, version, digest, _ in old.libraries}
    after = {name: (version, digest) for name, version, digest, _ in new.libraries}
    parts: list[str] = []
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name), after.get(name)
        if was == now:
            continue
        if was is None:
            parts.append(f"{name} {now[0]} added")  # type: ignore[index]
        elif now is None:
            parts.append(f"{name} {was[0]} removed")
        elif was[0] != now[0]:
            parts.append(f"{name} {was[0]} -> {now[0]}")
        else:
            parts.append(f"{name} {now[0]} (same version, other files)")
    old_files, new_files = dict(old.files), dict(new.files)
    moved = sorted(f for f in old_files.keys() | new_files.keys() if old_files.get(f) != new_files.get(f))
    if moved:
        shown = ", ".join(moved[:3]) + (f" and {len(moved) - 3} more" if len(moved) > 3 else "")
        parts.append(f"AgentRel's own files: {shown}")
    return "; ".join(parts) if parts else "the entry modules differ"
