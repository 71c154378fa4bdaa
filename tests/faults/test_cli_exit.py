"""The selftest's exit code follows its cases: one case off its expectation is exit 1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agentrel.harness.cli.main import app
from agentrel.harness.faults.selftest import Case


def test_one_unexpected_case_exits_1(monkeypatch: Any) -> None:
    import agentrel.harness.faults.selftest as st
    import agentrel.harness.run.episode as episode
    import agentrel.sandbox.sandbox as sandbox_mod

    async def fake(sb: Any, prepared: Any, receipts: Path) -> list[Case]:
        return [
            Case("real restart", "witnessed", "witnessed", "", 0.0),
            Case("noop restart", "invalid_injection", "witnessed", "", 0.0),  # a no-op that passed
        ]

    monkeypatch.setattr(st, "run_selftest", fake)
    monkeypatch.setattr(sandbox_mod.Sandbox, "open", classmethod(lambda cls, *a, **k: None))
    monkeypatch.setattr(episode, "prepare", lambda sb, task: None)
    result = CliRunner().invoke(app, ["faults", "selftest"])
    assert result.exit_code == 1, result.output
    assert "FAIL noop restart" in result.output and "1/2 cases as expected" in result.output
