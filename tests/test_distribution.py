"""AgentRel's distribution is `agentrel-audit`, its import package `agentrel`: the `agentrel` on PyPI is an
unrelated project (and `agentrel-audit` is on no index either), so everything AgentRel documents installs
from a checkout path, every lookup of our own metadata uses the distribution's name, and the worked
example depends on the checkout, never on an index."""

from __future__ import annotations

import re
import shlex
import tomllib
from importlib.metadata import distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from agentrel.distribution import DISTRIBUTION, installed_version

REPO = Path(__file__).resolve().parents[1]
IMPORT_NAME = "agentrel"
# `pip install ARGS` as a README, a docs page, an example or an error message writes it; the command ends
# at the end of its line, code span, comment, quote or parenthesis.
PIP_INSTALL = re.compile(r"""pip install([^\n`#;)"]*)""")
TAKES_A_VALUE = {"--python", "-r", "--requirement", "-c", "--constraint", "-d", "-t", "--target", "-f"}
# Where the command ends and the sentence goes on ("pip install -e '.[ray]' in the AgentRel checkout").
PROSE = {"in", "the", "then", "and", "or", "to", "into", "from", "with", "for", "brings", "gives", "installs"}


def _project(root: Path) -> dict:
    return tomllib.loads((root / "pyproject.toml").read_text())["project"]


def install_targets(command_args: str) -> list[str]:
    """What a `pip install` is asked to install: its arguments without options (and their values)."""
    try:
        words = shlex.split(command_args)
    except ValueError:  # an unbalanced quote in prose: read it word by word
        words = command_args.split()
    targets, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = word in TAKES_A_VALUE
        elif word in PROSE or not re.fullmatch(r"[A-Za-z0-9_.\-/\[\],<>=!~*']+", word):
            break
        else:
            targets.append(word.rstrip(","))
    return targets


def target_problem(target: str, repo: Path = REPO) -> str | None:
    """Why `target` cannot be installed as written (None: it can). A path is read from the checkout's
    root, as the docs' commands are run; a name is asked of the index, which has no AgentRel."""
    path, _, extras = target.partition("[")
    wanted = {e.strip() for e in extras.rstrip("]").split(",") if e.strip()}
    if path.startswith((".", "/")) or "/" in path:
        root = (repo / path).resolve()
        if not (root / "pyproject.toml").is_file():
            return f"{target}: no project at {path}"
        missing = wanted - set(_project(root).get("optional-dependencies", {}))
        return f"{target}: no extra {sorted(missing)} in {path}/pyproject.toml" if missing else None
    name = canonicalize_name(re.split(r"[<>=!~\[]", target)[0])
    if name == IMPORT_NAME:
        return f"{target}: `agentrel` on PyPI is another project; use the checkout (pip install -e .)"
    if name == canonicalize_name(DISTRIBUTION):
        return f"{target}: {DISTRIBUTION} is on no index; install from the checkout (pip install -e .)"
    return None  # a third-party package (playwright, openai-agents): the index has it


def documented_installs() -> list[tuple[str, str]]:
    files = [
        REPO / "README.md",
        *REPO.glob("docs/**/*.md"),
        *REPO.glob("examples/**/*.md"),
        *REPO.glob("examples/**/*.py"),
        *REPO.glob("examples/**/pyproject.toml"),
        *REPO.glob("harness/**/*.py"),
        *REPO.glob("sandbox/**/*.py"),
        *REPO.glob("bench/*.py"),
        *REPO.glob("scripts/*.py"),
    ]
    found = []
    for path in files:
        for match in PIP_INSTALL.finditer(path.read_text(encoding="utf-8")):
            for target in install_targets(match.group(1)):
                found.append((str(path.relative_to(REPO)), target))
    return found


def test_the_distribution_is_not_named_like_the_import_package_on_purpose():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    project = pyproject["project"]
    assert project["name"] == DISTRIBUTION != IMPORT_NAME
    assert canonicalize_name(DISTRIBUTION) != IMPORT_NAME  # not a spelling of the other project's name
    # ... while what it installs is the one import package and the `agentrel` command.
    assert pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == [IMPORT_NAME]
    assert set(project["scripts"]) == {IMPORT_NAME}
    # Inspect AI reads the namespace of `agentrel/<task>` as an entry point's name, not the distribution's.
    assert project["entry-points"]["inspect_ai"] == {IMPORT_NAME: "agentrel.harness.inspect_tasks.registry"}


def test_our_own_metadata_is_read_by_the_distribution_name():
    project = _project(REPO)
    assert installed_version() == project["version"]
    assert "agentrel/" in (distribution(DISTRIBUTION).read_text("RECORD") or "") or (
        distribution(DISTRIBUTION).read_text("direct_url.json") is not None  # an editable install
    )
    # The evaluator digest binds the libraries our own requirements name, read from our metadata: under a
    # wrong name it would find none and bind every installed extra instead (issue 33.2 again).
    from agentrel.harness.protocol import libraries

    own = libraries._distribution(DISTRIBUTION)
    assert own is not None
    asked = {name for name, _ in libraries._requirements(own, frozenset())}
    declared = {str(canonicalize_name(Requirement(r).name)) for r in project["dependencies"]}
    assert declared <= asked and asked - declared <= {"editables"}  # hatchling's editable hook adds one


def test_every_documented_pip_install_is_installable_as_written():
    found = documented_installs()
    assert len(found) > 15 and any(t.startswith(".[") for _, t in found)
    problems = [f"{where}: {why}" for where, target in found if (why := target_problem(target))]
    assert not problems, "\n".join(problems)


def test_the_check_refuses_what_it_is_for(tmp_path):
    """The attacks: the other project's name, our unpublished name, a path or an extra that is not there."""
    assert install_targets("-e '.[agents]'   ") == [".[agents]"]
    assert install_targets("-q --python x -e '.[ray]' in the AgentRel checkout") == [".[ray]"]
    for bad in (
        "agentrel",
        "agentrel[ray]",
        "Agentrel>=0.1",
        "agentrel-audit[docker]",
        ".[nosuch]",
        "examples/nowhere",
        "examples/refund-desk[agents]",
    ):
        assert target_problem(bad) is not None, bad
    for good in (
        ".",
        ".[view]",
        ".[inspect]",
        "examples/refund-desk",
        "examples/refund-desk[checkout]",
        "playwright",
        "pydantic-ai-slim[openai,mcp]",
    ):
        assert target_problem(good) is None, good
    planted = tmp_path / "README.md"
    planted.write_text("Then `pip install 'agentrel[view]'`.\n")
    (target,) = [t for m in PIP_INSTALL.finditer(planted.read_text()) for t in install_targets(m.group(1))]
    assert target_problem(target) is not None


def test_the_example_depends_on_the_checkout_never_on_an_index():
    from hatchling.metadata.core import ProjectMetadata
    from hatchling.plugin.manager import PluginManager

    for pyproject in REPO.glob("examples/**/pyproject.toml"):
        core = ProjectMetadata(str(pyproject.parent), PluginManager()).core  # as hatchling builds it
        extras = [r for reqs in core.optional_dependencies.values() for r in reqs]
        requirements = [Requirement(r) for r in [*core.dependencies, *extras]]
        for req in requirements:
            if canonicalize_name(req.name) in (IMPORT_NAME, canonicalize_name(DISTRIBUTION)):
                # Named, AgentRel comes only by a path to this checkout, and never as a plain dependency
                # (which would replace the editable install `make setup` made with a copy).
                assert req.url == REPO.as_uri(), (pyproject, str(req))
                assert str(req) not in core.dependencies, (pyproject, str(req))
    refund_desk = ProjectMetadata(str(REPO / "examples" / "refund-desk"), PluginManager()).core
    assert refund_desk.optional_dependencies["checkout"] == [f"{DISTRIBUTION} @ {REPO.as_uri()}"]
