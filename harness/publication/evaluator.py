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

import functools
import hashlib
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agentrel.harness.publication.canonical import canonical_hash
from agentrel.harness.publication.libraries import bind_libraries
from agentrel.harness.publication.sources import ENTRY_MODULES, evaluated_sources

__all__ = [
    "ENTRY_MODULES",
    "EvaluatorManifest",
    "current_evaluator_digest",
    "evaluator_manifest",
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
    found = evaluated_sources(roots, entries)
    files = {name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in found.files}
    return EvaluatorManifest(
        entries=tuple(entries),
        files=tuple(sorted(files.items())),
        libraries=bind_libraries(found.third_party),
    )


@functools.cache
def current_evaluator_digest() -> str:
    """The digest of the code this process runs (read once: the files do not change under a process)."""
    return evaluator_manifest().digest
