"""Third-party code the evaluator computes with, bound by the bytes of its installed files.

A version string is what a package says about itself: an edited `lark` inside site-packages, or another
`lark` earlier on `PYTHONPATH`, reports the same version and parses differently. So each distribution is
bound by the SHA-256 of every file its RECORD lists (importlib.metadata), read **where the import system
finds it**: a file under an importable top-level package is read from that package's folder as
`importlib.util.find_spec` locates it (so a shadow copy is what gets hashed), anything else (vendored
`.libs`, single data files) from the distribution's own location. Metadata (`*.dist-info`), byte-code
caches and files installed outside the environment (scripts under `../bin`) are not code that runs here.

Which distributions: those of AgentRel's own required dependencies (closed over their `Requires-Dist`
with the markers of this interpreter and the extras that were asked for: agentrel's own `psycopg[binary]`
brings `psycopg-binary`) that provide a top-level name the evaluated modules import
(`packages_distributions`). A library only an optional extra brings (`docker`, `ray`, `mcp`, the view's
server) is not part of the evaluator: installing the extra must not move the protocol of an audit that
never uses it, and an audit that does use one binds it where it is used (an agent program's environment
in its subject identity, the docker image by its digest). A name no installed distribution provides is
bound by the files under its import location when it is importable anyway (a package on PYTHONPATH), and
left out when it is not.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata as metadata
import importlib.util
from collections.abc import Callable, Iterable
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from agentrel.distribution import DISTRIBUTION
from agentrel.harness.protocol.file_digests import sha256_files

__all__ = ["LibraryBinding", "bind_environment", "bind_libraries", "library_inputs"]

LibraryBinding = tuple[str, str, str, int]  # (distribution or import name, version, files digest, n files)
_SKIP_SUFFIXES = (".pyc", ".pyo")
# our own distribution (agentrel.distribution): its required dependencies are the libraries bound


@functools.cache
def _import_location(top: str) -> tuple[str, Path] | None:
    """("package", folder) or ("module", file) where `import top` would load from, or None."""
    if not top.isidentifier():
        return None
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if locations and spec.origin not in (None, "namespace"):
        return "package", Path(locations[0])
    if not locations and spec.origin and spec.has_location:
        return "module", Path(spec.origin)
    return None  # a namespace package: no one folder to rebase onto


def _where(dist: metadata.Distribution, file: metadata.PackagePath) -> Path:
    parts = file.parts
    top = parts[0]
    name = top[: -len(".py")] if top.endswith(".py") and len(parts) == 1 else top
    located = _import_location(name)
    if located is not None:
        kind, path = located
        if kind == "package" and len(parts) > 1:
            return path.joinpath(*parts[1:])
        if kind == "module" and len(parts) == 1:
            return path
    return Path(str(dist.locate_file(file)))


def _installed(dist: metadata.Distribution, file: metadata.PackagePath) -> Path:
    return Path(str(dist.locate_file(file)))


def _code_files(
    dist: metadata.Distribution,
    where: Callable[[metadata.Distribution, metadata.PackagePath], Path] = _where,
) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    for file in dist.files or []:
        parts = file.parts
        if not parts or parts[0] == ".." or parts[0].endswith((".dist-info", ".egg-info")):
            continue
        if "__pycache__" in parts or file.name.endswith(_SKIP_SUFFIXES):
            continue
        out.append((file.as_posix(), where(dist, file)))
    return sorted(out)


def _files_of_import(top: str) -> list[tuple[str, Path]]:
    """Files of an importable name no distribution claims (a folder on PYTHONPATH)."""
    located = _import_location(top)
    if located is None:
        return []
    kind, path = located
    if kind == "module":
        return [(path.name, path)]
    return sorted(
        (f"{top}/{p.relative_to(path).as_posix()}", p)
        for p in path.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(_SKIP_SUFFIXES)
    )


def _distribution(name: str) -> metadata.Distribution | None:
    try:
        return metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None


def _requirements(dist: metadata.Distribution, extras: frozenset[str]) -> list[tuple[str, frozenset[str]]]:
    wanted: list[tuple[str, frozenset[str]]] = []
    for line in dist.requires or []:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        envs = [{"extra": extra} for extra in sorted(extras)] or [{"extra": ""}]
        if req.marker is None or any(req.marker.evaluate(env) for env in envs):
            wanted.append((str(canonicalize_name(req.name)), frozenset(req.extras)))
    return wanted


def _installed_closure(roots: Iterable[tuple[str, frozenset[str]]]) -> dict[str, metadata.Distribution]:
    """The installed distributions `roots` name, closed over what each requires (with its extras)."""
    pending = list(roots)
    found: dict[str, metadata.Distribution] = {}
    done: set[tuple[str, frozenset[str]]] = set()
    while pending:
        key, extras = pending.pop()
        if (key, extras) in done:
            continue
        done.add((key, extras))
        dist = found.get(key) or _distribution(key)
        if dist is None:
            continue
        found[key] = dist
        pending.extend(_requirements(dist, extras))
    return found


def _closure(tops: Iterable[str]) -> tuple[dict[str, metadata.Distribution], list[str]]:
    """The required distributions providing `tops`, and what they require; and the names nothing
    installed provides but that import anyway (from a folder on PYTHONPATH)."""
    providers = metadata.packages_distributions()
    own = _distribution(DISTRIBUTION)
    asked: dict[str, frozenset[str]] = dict(_requirements(own, frozenset())) if own is not None else {}
    required = _installed_closure(asked.items()) if own is not None else None
    pending: list[tuple[str, frozenset[str]]] = []
    unclaimed: list[str] = []
    for top in sorted(set(tops)):
        names = [str(canonicalize_name(n)) for n in providers.get(top) or []]
        if not names:
            if _import_location(top) is not None:
                unclaimed.append(top)
            continue  # not installed and not importable: nothing runs it, and installing it is an extra
        for name in names:
            # Without our own metadata (a bare checkout on PYTHONPATH) nothing tells required from extra.
            if required is None or name in required:
                pending.append((name, asked.get(canonicalize_name(name), frozenset())))
    return _installed_closure(pending), unclaimed


def _digest(files: list[tuple[str, str]]) -> str:
    return hashlib.sha256("\n".join(f"{name}\0{sha}" for name, sha in files).encode()).hexdigest()


def _bind(groups: dict[tuple[str, str], list[tuple[str, Path]]]) -> tuple[LibraryBinding, ...]:
    hashes = sha256_files(path for files in groups.values() for _, path in files)
    bound: list[LibraryBinding] = []
    for (name, version), files in sorted(groups.items()):
        listed = [(rel, hashes[path]) for rel, path in files]
        bound.append((name, version, _digest(listed), len(listed)))
    return tuple(bound)


@functools.cache
def bind_environment(paths: tuple[str, ...]) -> tuple[LibraryBinding, ...]:
    """Every distribution installed on `paths` (another interpreter's `sys.path`: an agent program's),
    each bound like the evaluator's libraries by the bytes of the files its RECORD lists, read where they
    are installed; the first of a name on the path is the one that imports, as for the import system.
    Cached per process, as `bind_libraries`."""
    groups: dict[tuple[str, str], list[tuple[str, Path]]] = {}
    seen: set[str] = set()
    for dist in metadata.distributions(path=list(paths)):
        name = dist.metadata["Name"] if dist.metadata is not None else None
        if not name or (key := str(canonicalize_name(name))) in seen:
            continue
        seen.add(key)
        groups[(key, dist.version)] = _code_files(dist, _installed)
    return _bind(groups)


@functools.cache
def bind_libraries(tops: tuple[str, ...]) -> tuple[LibraryBinding, ...]:
    """(name, version, digest of its files' (path, sha256) list, file count) for every library, sorted.

    Cached per process: installed files do not change under a running evaluator (and a process that
    changed them would be rigging itself, which no digest it computes can catch)."""
    return _bind(_library_files(tops)[0])


def library_inputs(tops: tuple[str, ...]) -> list[Path]:
    """Every file `bind_libraries(tops)` read: the bound files where they import from, and each bound
    distribution's own files where they are installed (its RECORD and metadata: which files, which
    version, what it requires), with our own distribution's (its requirements say what is bound)."""
    return _library_files(tops)[1]


@functools.cache
def _library_files(tops: tuple[str, ...]) -> tuple[dict[tuple[str, str], list[tuple[str, Path]]], list[Path]]:
    dists, unclaimed = _closure(tops)
    groups: dict[tuple[str, str], list[tuple[str, Path]]] = {}
    read: list[Path] = []
    own = _distribution(DISTRIBUTION)
    for key, dist in dists.items():
        groups[(key, dist.version)] = _code_files(dist)
    for dist in [*dists.values(), *([own] if own is not None else [])]:
        read.extend(_installed(dist, file) for file in dist.files or [])
    for top in unclaimed:
        files = _files_of_import(top)
        groups[(f"import:{top}", "unclaimed")] = files
        read.extend({path.parent for _, path in files})  # no RECORD: a file added there is bound too
    read.extend(path for files in groups.values() for _, path in files)
    return groups, read
