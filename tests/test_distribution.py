"""`agentrel` on PyPI is an unrelated project: AgentRel installs from its checkout, and nothing it ships
or documents asks pip (or a package's requirements) for that name."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import distribution
from pathlib import Path

from agentrel.distribution import DISTRIBUTION, installed_version

REPO = Path(__file__).resolve().parents[1]
# `pip install agentrel`, `'agentrel[ray]'`, a requirement "agentrel>=…": the other project's name.
OTHER = re.compile(r"""pip install[^\n`]*\bagentrel(\[|['"`\s]|$)|["']agentrel(\[[a-z,]+\])?(>|<|=|["'])""")


def test_the_distribution_name_is_spelled_once():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION
    assert installed_version() == project["version"]
    assert "agentrel" in (distribution(DISTRIBUTION).read_text("RECORD") or "")


def test_no_file_names_the_other_project_for_pip():
    looked = 0
    for path in [REPO / "README.md", *REPO.glob("docs/**/*.md"), *REPO.glob("examples/**/pyproject.toml")]:
        looked += 1
        text = path.read_text(encoding="utf-8")
        found = [m.group(0) for m in OTHER.finditer(text)]
        assert not found, f"{path.relative_to(REPO)}: {found}"
    for path in [*REPO.glob("harness/**/*.py"), *REPO.glob("sandbox/**/*.py")]:
        text = path.read_text(encoding="utf-8")
        assert "pip install 'agentrel[" not in text, path
    assert looked > 10


def test_the_pattern_catches_what_it_is_for():
    for bad in ("pip install 'agentrel[ray]'", "pip install agentrel", 'dependencies = ["agentrel"]'):
        assert OTHER.search(bad), bad
    for good in ("pip install -e '.[ray]'", "dependencies = []", "pip install -e examples/x"):
        assert not OTHER.search(good), good
