"""The evaluated source set, derived from the code itself: the import graph of the evaluation's entry modules.

A hand list of "evaluator files" goes stale the day someone adds a module the labeller calls, and every
file it forgets is a place to rig the measurement without moving the digest (the state reader, the tool
server, the fault rig). So the set is computed: start at the entry modules of the audit, labelling,
status, analysis and publication paths, and follow every `agentrel.*` import statically (AST, so
deferred imports inside functions count too, and so do `TYPE_CHECKING` ones: over-inclusion is safe),
plus every string literal that names an `agentrel.*` module (the lazy adapter registry and the tool
server's `-m` command line import by name). Importing `a.b.c` runs `a/__init__` and `a/b/__init__`, so
parents are edges too.

Data files: a string literal in a reached module that names an existing file or folder beside that module
(`"agentrel.lark"`, `"policy.json"`, `"schemas"`, `"prices.yaml"`) is data the module reads; a folder
contributes every non-Python file under it.

Deterministic: the walk depends only on the bytes of the files it reads. Parsing is cached per (module,
source hash), so re-deriving the set after a one-byte edit re-parses one file.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentrel.harness.errors import EnvironmentFailure

__all__ = ["ENTRY_MODULES", "SourceSet", "default_roots", "evaluated_sources"]

# The paths whose code decides what a published number is. Each is an entry point a user reaches:
# `audit` runs, records and judges; `label` reads the dumps; `status` decides valid/invalid from receipts;
# `pipeline` scores; `publish` and `compare` validate and render; `schemas` writes the JSON schemas a
# scorecard is documented against (the published contract, so the shipped files are bound too).
ENTRY_MODULES: tuple[str, ...] = (
    "agentrel.harness.run.audit",
    "agentrel.dsl.label",
    "agentrel.harness.results.status",
    "agentrel.analysis.pipeline",
    "agentrel.harness.publication.publish",
    "agentrel.harness.publication.compare",
    "agentrel.harness.publication.schemas",
)
FRONT_DOOR = "agentrel"  # the key of the package's own folder in `roots`
_NOT_DATA_SUFFIXES = (".py", ".pyc", ".pyo")


@dataclass(frozen=True)
class SourceSet:
    modules: tuple[str, ...]  # dotted names, sorted
    files: tuple[tuple[str, Path], ...]  # (name in the package tree, path on disk), sorted by name
    third_party: tuple[str, ...]  # top-level import names outside agentrel and the standard library


@dataclass(frozen=True)
class _Parsed:
    imports: frozenset[str]  # candidate agentrel.* module names (resolved later)
    third_party: frozenset[str]
    strings: frozenset[str]  # literals that may name a data file beside the module


class _Tree:
    """Maps dotted module names to files under the given roots (one folder per layer + the front door)."""

    def __init__(self, roots: Mapping[str, Path]) -> None:
        self.roots = roots

    def locate(self, module: str) -> tuple[str, Path] | None:
        parts = module.split(".")
        if parts[0] != "agentrel" or not all(p.isidentifier() for p in parts):
            return None
        if len(parts) == 1:
            base, inner, prefix = self.roots[FRONT_DOOR], [], "agentrel"
        else:
            root = self.roots.get(parts[1])
            if root is None:
                return None
            base, inner, prefix = root, parts[2:], parts[1]
        folder = base.joinpath(*inner)
        candidates = [(folder / "__init__.py", [*inner, "__init__.py"])]
        if inner:
            candidates.insert(0, (folder.with_suffix(".py"), [*inner[:-1], inner[-1] + ".py"]))
        for path, name_parts in candidates:
            if path.is_file():
                return "/".join([prefix, *name_parts]), path
        return None


def default_roots() -> dict[str, Path]:
    import importlib.util

    spec = importlib.util.find_spec("agentrel")
    if spec is None or not spec.submodule_search_locations:
        raise EnvironmentFailure("cannot locate the agentrel package to hash the evaluator's sources")
    home = Path(next(iter(spec.submodule_search_locations)))
    roots = {FRONT_DOOR: home}
    roots.update({p.name: p for p in sorted(home.iterdir()) if p.is_dir() and (p / "__init__.py").is_file()})
    return roots


@functools.lru_cache(maxsize=4096)
def _parse(module: str, is_package: bool, digest: str, source: bytes) -> _Parsed:
    del digest  # part of the cache key only (cheaper to compare than the bytes)
    tree = ast.parse(source)
    package = module.split(".") if is_package else module.split(".")[:-1]
    imports: set[str] = set()
    third: set[str] = set()
    strings: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                (imports if alias.name.split(".")[0] == "agentrel" else third).add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package[: len(package) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            if base.split(".")[0] == "agentrel":
                imports.add(base)
                imports.update(f"{base}.{alias.name}" for alias in node.names)
            else:
                third.add(base)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text.startswith("agentrel."):
                imports.add(text)  # a module imported by name; may also be a file ("agentrel.lark")
            if 0 < len(text) < 200 and "\n" not in text and not text.startswith((".", "/")):
                strings.add(text)
    tops = {name.split(".")[0] for name in third}
    return _Parsed(
        imports=frozenset(imports),
        third_party=frozenset(t for t in tops if t and t not in sys.stdlib_module_names | {"__future__"}),
        strings=frozenset(strings),
    )


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _data_files(module_file: Path, prefix: str, strings: frozenset[str]) -> dict[str, Path]:
    """Files named by a string literal relative to the module's folder (folders: every non-.py file)."""
    here = module_file.parent
    found: dict[str, Path] = {}
    for text in strings:
        target = here / text
        try:
            if ".." in Path(text).parts or not target.exists():
                continue
        except (OSError, ValueError):  # not a path at all (a NUL byte, a name too long)
            continue
        paths = [target] if target.is_file() else sorted(p for p in target.rglob("*") if p.is_file())
        for path in paths:
            rel = path.relative_to(here).as_posix()
            if "__pycache__" in path.parts or path.name.endswith(_NOT_DATA_SUFFIXES):
                continue
            found[f"{prefix}/{rel}"] = path
    return found


def evaluated_sources(
    roots: Mapping[str, Path] | None = None, entries: tuple[str, ...] = ENTRY_MODULES
) -> SourceSet:
    """Walk the import graph from `entries`; `roots` maps a layer (and "agentrel") to a folder (tests)."""
    tree = _Tree({**default_roots(), **(roots or {})})
    seen: dict[str, tuple[str, Path]] = {}
    files: dict[str, Path] = {}
    third: set[str] = set()
    pending = list(entries)
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        located = tree.locate(module)
        if located is None:
            if module in entries:
                raise EnvironmentFailure(f"cannot find the evaluator entry module {module}")
            continue
        name, path = located
        seen[module] = located
        files[name] = path
        source = path.read_bytes()
        try:
            parsed = _parse(module, path.name == "__init__.py", hashlib.sha256(source).hexdigest(), source)
        except SyntaxError as exc:
            where = f"{path}:{exc.lineno}"
            raise EnvironmentFailure(f"{where}: evaluator source does not parse: {exc.msg}") from exc
        third |= parsed.third_party
        files.update(_data_files(path, name.rpartition("/")[0], parsed.strings))
        for candidate in sorted(parsed.imports):
            pending.extend(m for m in _with_parents(candidate) if m not in seen)
    return SourceSet(
        modules=tuple(sorted(seen)),
        files=tuple(sorted(files.items())),
        third_party=tuple(sorted(third)),
    )
