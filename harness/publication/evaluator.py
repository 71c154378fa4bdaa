"""The evaluator digest: SHA-256 over the exact source bytes of the code that labels, scores and decides,
plus the installed versions of the libraries that code computes with.

Never a version string the running code reports about itself: an edited labeller with the same package
version has another digest, and so do two checkouts that differ by one byte in any file below. Files are
found through the import system (a checkout and an installed wheel give the same digest for the same
bytes) and named by their path inside the package tree, sorted.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agentrel.harness.errors import EnvironmentFailure
from agentrel.harness.publication.canonical import canonical_hash

__all__ = [
    "EVALUATOR_SOURCES",
    "LIBRARIES",
    "EvaluatorManifest",
    "current_evaluator_digest",
    "evaluator_manifest",
]

# (folder inside the package tree, glob). The DSL labels; the judge, the status rule, the seed rule and
# the receipt verdicts decide what a run was; analysis scores; the publication package validates and
# renders (its registry only stores, so it is left out).
EVALUATOR_SOURCES: tuple[tuple[str, str], ...] = (
    ("dsl", "*.py"),
    ("dsl", "*.lark"),
    ("harness", "episode.py"),
    ("harness/results", "*.py"),
    ("harness", "matrix.py"),
    ("harness/faults", "receipts.py"),
    ("analysis", "*.py"),
    ("harness/publication", "*.py"),
    ("harness/publication", "policy.json"),
    ("harness/publication", "schemas/*.json"),
)
NOT_EVALUATOR = frozenset({"harness/publication/registry.py"})
LIBRARIES: tuple[str, ...] = (
    "lark",
    "msgspec",
    "numpy",
    "pandas",
    "pydantic",
    "pydantic-core",
    "rfc8785",
    "scipy",
    "statsmodels",
)


class EvaluatorManifest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str = "agentrel-evaluator/1"
    files: tuple[tuple[str, str], ...]  # (path in the package tree, sha256 of its bytes), sorted by path
    libraries: tuple[tuple[str, str], ...]  # (distribution, installed version), sorted

    @property
    def digest(self) -> str:
        return canonical_hash(self.model_dump(mode="json"))


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(f"agentrel.{name}")
    if spec is None or not spec.submodule_search_locations:
        raise EnvironmentFailure(f"cannot locate the {name} package to hash the evaluator's sources")
    return Path(next(iter(spec.submodule_search_locations)))


def _library_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def evaluator_manifest(roots: Mapping[str, Path] | None = None) -> EvaluatorManifest:
    """Every evaluator file and its hash; `roots` maps a top-level package to another folder (tests)."""
    top: dict[str, Path] = {}
    files: dict[str, str] = {}
    for folder, pattern in EVALUATOR_SOURCES:
        package, _, inner = folder.partition("/")
        if package not in top:
            top[package] = (roots or {}).get(package) or _package_dir(package)
        base = top[package] / inner if inner else top[package]
        for path in sorted(base.glob(pattern)):
            name = f"{folder}/{path.relative_to(base).as_posix()}"
            if path.is_file() and name not in NOT_EVALUATOR:
                files[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return EvaluatorManifest(
        files=tuple(sorted(files.items())),
        libraries=tuple((lib, _library_version(lib)) for lib in sorted(LIBRARIES)),
    )


@functools.cache
def current_evaluator_digest() -> str:
    """The digest of the code this process runs (read once: the files do not change under a process)."""
    return evaluator_manifest().digest
