"""The wheel works with no checkout: built, installed into a fresh venv elsewhere, run from elsewhere.

Installing every dependency from PyPI into the fresh venv would take minutes, so the venv gets the wheel
alone and borrows the third-party packages of the running venv through a folder of links. That folder
leaves out agentrel's own files: an editable install there (a .pth naming the checkout) would otherwise
let the checkout stand in for the wheel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from importlib.metadata import distribution
from pathlib import Path

import pytest

from agentrel.distribution import DISTRIBUTION

REPO = Path(__file__).resolve().parents[1]
# A wheel's file names spell the distribution with underscores (`agentrel_audit-0.1.0-py3-none-any.whl`).
WHEEL_NAME = DISTRIBUTION.replace("-", "_")
PACKAGES = ("agentrel.harness", "agentrel.sandbox", "agentrel.dsl", "agentrel.analysis")


def run(
    args: list[str | Path], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env, cwd=cwd)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


def borrowed_site_packages(into: Path) -> Path:
    """Links to every entry of this venv's site-packages except agentrel's own and the .pth hooks."""
    dist = distribution(DISTRIBUTION)
    own = {Path(str(f)).parts[0] for f in dist.files or []}
    into.mkdir()
    for site in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        for entry in Path(site).iterdir():
            if entry.name in own or entry.suffix == ".pth" or (into / entry.name).exists():
                continue
            (into / entry.name).symlink_to(entry)
    return into


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("package")
    pip = [sys.executable, "-m", "pip"]
    # No build isolation: the backend comes from the dev extra, so the build needs no network.
    run([*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", base / "dist", REPO])
    [wheel] = (base / "dist").glob(f"{WHEEL_NAME}-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
    # One import namespace: nothing but `agentrel` and its metadata lands at the top of site-packages.
    assert tops == {"agentrel", f"{WHEEL_NAME}-0.1.0.dist-info"}, tops
    venv = base / "venv"
    python = venv / "bin" / "python"
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    run(
        [
            *pip,
            "--python",
            python,
            "install",
            "-q",
            "--no-deps",
            wheel,
        ]
    )
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    (Path(site) / "borrowed_deps.pth").write_text(f"{borrowed_site_packages(base / 'deps')}\n")
    return venv


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("elsewhere")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, venv: Path) -> Iterator[dict[str, str]]:
    # Only the installed venv decides what is imported and where the suite is read from.
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTREL_", "PYTHON", "VIRTUAL_ENV"))}
    env = {**clean, "AGENTREL_HOME": str(tmp_path_factory.mktemp("home")), "COLUMNS": "200"}
    yield env
    # The audit started a cluster of its own under AGENTREL_HOME; stop it and delete its files.
    run([venv / "bin" / "agentrel", "sandbox", "destroy"], env=env)


def test_the_installed_code_is_the_wheel_not_the_checkout(venv: Path, env: dict[str, str], elsewhere: Path):
    probe = (
        "import json, importlib, importlib.metadata as m, agentrel.harness.suite_paths as s\n"
        f"where = {{p: importlib.import_module(p).__file__ for p in {PACKAGES!r}}}\n"
        "where.update(suite=str(s.suite_root()),\n"
        f"             dist=str(m.distribution({DISTRIBUTION!r}).locate_file('')))\n"
        "print(json.dumps(where))"
    )
    where = json.loads(run([venv / "bin" / "python", "-c", probe], env=env, cwd=elsewhere).stdout)
    for path in where.values():
        assert Path(path).resolve().is_relative_to(venv.resolve()), path
    assert (Path(where["agentrel.harness"]).parent / "prices.yaml").is_file()
    assert (Path(where["agentrel.dsl"]).parent / "agentrel.lark").is_file()


def test_tasks_list_shows_the_whole_suite(venv: Path, env: dict[str, str], elsewhere: Path):
    out = run([venv / "bin" / "agentrel", "tasks", "list", "--json"], env=env, cwd=elsewhere).stdout
    listed = {task["id"] for task in json.loads(out)}
    expected = {p.stem for p in (REPO / "tasks").glob("*/*.yaml")}
    assert len(expected) == 20
    assert listed == expected


def test_audit_records_a_run(venv: Path, env: dict[str, str], elsewhere: Path):
    results = elsewhere / "results"
    args = ["audit", "--model", "reference/stochastic", "--k", "1", "--tasks", "itsm-cab-window"]
    run([venv / "bin" / "agentrel", *args, "--results", results, "--no-report"], env=env, cwd=elsewhere)
    runs = [json.loads(line) for line in (results / "runs.jsonl").read_text().splitlines()]
    assert [(r["task"], r["error"]) for r in runs] == [("itsm-cab-window", None)]
