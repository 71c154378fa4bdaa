"""One place for AgentRel's state by default: the same cluster, registry and signing key from whichever
directory agentrel runs in. A folder-relative default once started a second, empty world (a new
cluster, registry and key) in every new directory, silently."""

import logging
from pathlib import Path

import pytest

from agentrel.sandbox.servers import local
from agentrel.sandbox.servers.base import SandboxError


@pytest.fixture
def unset(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("AGENTREL_HOME", raising=False)
    monkeypatch.setattr(local, "_SAID_OLD_HOME", False)
    return monkeypatch


def test_two_directories_share_one_home_and_agentrel_home_overrides_it(unset, tmp_path: Path):
    unset.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    homes = set()
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        unset.chdir(tmp_path / folder)
        homes.add(local.default_home())
    assert homes == {tmp_path / "state" / "agentrel"}
    unset.setenv("AGENTREL_HOME", "mine")
    assert local.default_home() == tmp_path / "b" / "mine"


def test_without_xdg_state_home_it_is_under_the_users_home(unset, tmp_path: Path):
    unset.delenv("XDG_STATE_HOME", raising=False)
    unset.setenv("HOME", str(tmp_path))
    assert local.default_home() == tmp_path / ".local" / "state" / "agentrel"


def test_no_home_directory_is_one_line_naming_agentrel_home(unset):
    unset.delenv("XDG_STATE_HOME", raising=False)

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    unset.setattr(local.Path, "home", staticmethod(no_home))
    with pytest.raises(SandboxError, match="set AGENTREL_HOME to a writable directory"):
        local.default_home()


def test_an_earlier_home_in_the_folder_is_named_once_never_used_silently(
    unset, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    unset.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    unset.chdir(tmp_path)
    (tmp_path / ".agentrel" / "venv-tau2").mkdir(parents=True)  # a checkout's build cache: not a home
    with caplog.at_level(logging.INFO, logger="agentrel.notices"):
        local.default_home()
        assert not caplog.records
        (tmp_path / ".agentrel" / "registry.jsonl").write_text("")
        local.default_home()
        local.default_home()
    (said,) = [r.getMessage() for r in caplog.records]
    assert f"AGENTREL_HOME={tmp_path / '.agentrel'}" in said and str(tmp_path / "state" / "agentrel") in said
