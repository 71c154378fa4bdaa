"""What an agent program is made of: its code directory, its declared files, and the Python environment
its command runs with, each bound by the bytes of its files (the subject's identity) and mounted
read-only in its sandbox (what it may run).

- **The code directory**: `code_dir` of an agent file, else its `cwd`, else the folder of the first
  command argument that names a file (the script). Every file under it is hashed (a module the script
  imports, edited after the freeze, changes the identity and is refused like any protocol change), except
  caches and version-control folders and Python environments inside it, which are hidden in the sandbox
  instead (`masks`): what the agent can run is what was hashed. A stale `__pycache__` cannot stand in for
  an edited source, since it is not visible.
- **The Python environment**: when the command is a Python interpreter (by name, or the `#!` line of its
  script), that interpreter is asked once for its `sys.path`; every distribution installed there is bound
  by `harness.protocol.libraries.bind_environment` (the evaluator digest's machinery), and folders on
  its path outside the interpreter's prefixes (`PYTHONPATH`) are hashed as code directories.

Bounded: a code directory with more than MAX_CODE_FILES files or MAX_CODE_BYTES bytes is refused (one
line: give the agent a folder of its own), so the home directory is never hashed or mounted by accident.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrel.harness.agents.base import ConfigError
from agentrel.harness.protocol.libraries import bind_environment

MAX_CODE_FILES = 5000
MAX_CODE_BYTES = 512 * 1024 * 1024
SKIP_NAMES = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox"}
)
_PYTHON = re.compile(r"^python[0-9.]*$")
QUERY = (
    "import json, sys; print(json.dumps({'executable': sys.executable, 'version': sys.version.split()[0],"
    " 'prefix': sys.prefix, 'base_prefix': sys.base_prefix, 'path': sys.path}))"
)
QUERY_S = 60.0


@dataclass
class CodeTree:
    """One hashed folder: (relative path, sha256) of every file, and the subtrees hidden instead."""

    root: Path
    files: list[tuple[str, str]]
    hidden: list[Path] = field(default_factory=list)

    @property
    def digest(self) -> str:
        return hashlib.sha256("\n".join(f"{n}\0{h}" for n, h in self.files).encode()).hexdigest()

    def identity(self) -> dict[str, Any]:
        return {"path": str(self.root), "files": len(self.files), "digest": self.digest}


@dataclass
class PythonEnv:
    executable: str
    version: str
    prefix: Path
    base_prefix: Path
    path: list[Path]  # the folders on its sys.path that exist

    def mounts(self) -> list[Path]:
        real = Path(os.path.realpath(self.executable)).parent
        return [self.prefix, self.base_prefix, real, *self.path]

    def extra_paths(self) -> list[Path]:
        """Folders on its path outside both prefixes (PYTHONPATH, a .pth file's): code, hashed as such."""
        return [p for p in self.path if not _under(p, self.prefix) and not _under(p, self.base_prefix)]


def sha256_file(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def walk_code(root: Path, hidden: Iterable[Path], where: str) -> CodeTree:
    """Hash every file under `root`, leaving out (and listing, to be hidden in the sandbox) the paths in
    `hidden`, caches, version control and Python environments. Refused past the bounds."""
    home = Path.home().resolve()
    if root == Path("/") or root == home:
        raise ConfigError(
            f"{where}: its code directory would be {root}: give the agent a folder of its own (code_dir in an"
            " --agent-file, or its script in its own folder)"
        )
    hide = [h for h in hidden if _under(h, root)]
    files: list[tuple[str, str]] = []
    out_hidden: list[Path] = list(hide)
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        for name in list(dirnames):
            sub = here / name
            if name in SKIP_NAMES or (sub / "pyvenv.cfg").exists() or sub in hide:
                dirnames.remove(name)
                if sub not in hide:
                    out_hidden.append(sub)
        dirnames.sort()
        for name in sorted(filenames):
            path = here / name
            if path in hide:
                continue
            try:
                if not path.is_file():
                    continue  # a dangling link, a socket: nothing to run
                total += path.stat().st_size
                files.append((path.relative_to(root).as_posix(), sha256_file(path)))
            except OSError as exc:
                raise ConfigError(f"{where}: cannot read {path} ({exc.strerror})") from None
            if len(files) > MAX_CODE_FILES or total > MAX_CODE_BYTES:
                raise ConfigError(
                    f"{where}: its code directory {root} holds more than {MAX_CODE_FILES} files or"
                    f" {MAX_CODE_BYTES >> 20} MiB: give the agent a folder of its own (code_dir in an"
                    " --agent-file)"
                )
    return CodeTree(root, sorted(files), sorted(set(out_hidden)))


def python_of(command: list[str], cwd: Path | None) -> str | None:
    """The Python interpreter the command runs with, if it is one: the program itself, or the
    interpreter on its script's `#!` line."""
    program = command[0]
    if "/" in program:
        path: Path | None = Path(program) if Path(program).is_absolute() or cwd is None else cwd / program
    else:
        found = shutil.which(program)
        path = Path(found) if found else None
    if path is None:
        return None
    if _PYTHON.match(path.name):
        return str(path)
    try:
        with path.open("rb") as f:
            first = f.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    if words and Path(words[0]).name == "env" and len(words) > 1:
        words = words[1:]
        found = shutil.which(words[0])
        return found if found and _PYTHON.match(Path(words[0]).name) else None
    return words[0] if words and _PYTHON.match(Path(words[0]).name) else None


@functools.cache
def _query(python: str, cwd: str | None, pythonpath: str | None) -> dict[str, Any] | str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREL_")}
    env.pop("PYTHONPATH", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    try:
        done = subprocess.run(
            [python, "-c", QUERY], capture_output=True, text=True, cwd=cwd, env=env, timeout=QUERY_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    try:
        data = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return "it printed no description of itself"
    return data if isinstance(data, dict) else "it printed no description of itself"


def python_env(python: str, cwd: Path | None, env: Mapping[str, str], where: str) -> PythonEnv:
    data = _query(python, str(cwd) if cwd else None, env.get("PYTHONPATH"))
    if isinstance(data, str):
        raise ConfigError(f"{where}: its Python {python} cannot describe its environment ({data})")
    paths = [Path(p) for p in data["path"] if p and Path(p).is_dir()]
    return PythonEnv(
        executable=str(data["executable"]),
        version=str(data["version"]),
        prefix=Path(data["prefix"]),
        base_prefix=Path(data["base_prefix"]),
        path=paths,
    )


def python_identity(py: PythonEnv) -> dict[str, Any]:
    libraries = bind_environment(tuple(str(p) for p in py.path))
    return {
        "executable": py.executable,
        "version": py.version,
        "prefix": str(py.prefix),
        "libraries_digest": hashlib.sha256(json.dumps(libraries).encode()).hexdigest(),
        "libraries": [list(b) for b in libraries],
    }
