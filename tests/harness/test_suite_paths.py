"""Where the suite is read from: the checkout by default, AGENTREL_SUITE_DIR when set."""

import shutil
from pathlib import Path

import pytest

from agentrel.harness.errors import UserError
from agentrel.harness.suite_paths import ENV, PACKAGED, suite_root
from agentrel.harness.tasks import load_suite


def test_a_checkout_reads_its_top_level_folders(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert suite_root() == PACKAGED
    assert (PACKAGED / "tasks").is_dir() and (PACKAGED / "damage_specs").is_dir()


def test_the_override_moves_tasks_and_specs_together(monkeypatch, tmp_path: Path):
    (tmp_path / "tasks" / "itsm").mkdir(parents=True)
    (tmp_path / "damage_specs").mkdir()
    shutil.copy(PACKAGED / "tasks/itsm/itsm-cab-window.yaml", tmp_path / "tasks/itsm")
    shutil.copy(PACKAGED / "damage_specs/itsm-cab-window.dmg", tmp_path / "damage_specs")
    monkeypatch.setenv(ENV, str(tmp_path))
    [task] = load_suite()
    assert task.spec_path == tmp_path / "damage_specs/itsm-cab-window.dmg"
    assert task.spec_digest()


def test_a_wrong_override_is_an_error_not_an_empty_suite(monkeypatch, tmp_path: Path):
    monkeypatch.setenv(ENV, str(tmp_path / "nowhere"))
    with pytest.raises(UserError, match=f"set {ENV}"):
        load_suite()
