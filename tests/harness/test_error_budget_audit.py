"""`agentrel audit --error-budget B`: the budget is planned into the manifest (so the freeze binds it), absent
when not given (the protocol hash of an audit without one does not move), and a bad value is one line."""

from __future__ import annotations

import json
import sys

import pytest

TASK = "itsm-cab-window"
BASE = ["agentrel", "audit", "-m", "scripted/oracle", "--tasks", TASK]


@pytest.mark.parametrize("value", ["1.5", "-0.1", "1", "nan"])
def test_a_bad_budget_is_one_line_and_plans_nothing(tmp_path, monkeypatch, capsys, value) -> None:
    from agentrel.harness.cli.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [*BASE, "--plan", "--error-budget", value])
    with pytest.raises(SystemExit) as stop:
        main()
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and "--error-budget" in err[0] and "[0, 1)" in err[0], err
    assert not (tmp_path / "results").exists()


def test_the_budget_is_planned_into_the_manifest(sandbox, tmp_path) -> None:
    from agentrel.harness.run.audit import audit

    with_budget, without = tmp_path / "b", tmp_path / "n"
    for results, budget in ((with_budget, 0.1), (without, None)):
        audit(models=["scripted/oracle"], k=2, tasks=[TASK], concurrency=1, results=results,
              sandbox=sandbox, show_progress=False, plan=True, error_budget=budget)  # fmt: skip
    assert json.loads((with_budget / "manifest.json").read_text())["error_budget"] == 0.1
    assert "error_budget" not in json.loads((without / "manifest.json").read_text())
