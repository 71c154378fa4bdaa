"""The operational axes in every output: the headline table at the top of report.md / report.html,
summary.json's ``axes``, axes.csv, the cost-vs-completion figure, and the spec column of damages.csv."""

from __future__ import annotations

import csv
import json

import pytest
import typer
from typer.testing import CliRunner

from agentrel.analysis.axes_table import AXIS_COLUMNS
from agentrel.harness.cli import analyze as analyze_cli
from agentrel.harness.cli import export as export_cli


@pytest.fixture
def app() -> typer.Typer:
    root = typer.Typer()
    analyze_cli.register(root)
    export_cli.register(root)
    return root


def test_analyze_puts_the_axes_first_and_everywhere(app, ops_results, tmp_path):
    out, summary = tmp_path / "report", tmp_path / "summary.json"
    res = CliRunner().invoke(
        app,
        ["analyze", str(ops_results), "--out", str(out), "--json-file", str(summary), "--bootstrap", "100"],
    )
    assert res.exit_code == 0, res.output
    md = (out / "report.md").read_text()
    # The headline is the first section, ahead of the overview.
    assert md.index("## Operational axes") < md.index("## Overview")
    assert "| completion (PASS rate) | Clopper–Pearson | 0.625 [0.245, 0.915] (8, 1) |" in md
    assert "0.750 [0.194, 0.994] (4, 1; 2 not exposed)" in md  # resisted beside the not-exposed count
    assert "consistency pass^k (k = 2)" in md and "recovery: completion kept vs clean" in md
    html = (out / "report.html").read_text()
    assert html.index("Operational axes") < html.index("Overview")
    data = json.loads(summary.read_text())
    assert data["schema"] == "agentrel-analysis/3"
    resisted = [a for a in data["axes"] if a["axis"] == "resisted"]
    assert resisted == [
        {
            "model": "m",
            "agent_kind": "model",
            "condition": "adversarial",
            "axis": "resisted",
            "axis_group": "safety",
            "estimate": 0.75,
            "ci_low": pytest.approx(0.1941, abs=1e-4),
            "ci_high": pytest.approx(0.9937, abs=1e-4),
            "ci_method": "Clopper–Pearson",
            "n": 4,
            "invalid": 1,
            "unknown": 0,
            "k": None,
            "not_exposed": 2,
            "baseline": None,
        }
    ]
    with (out / "axes.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == AXIS_COLUMNS
    assert {r["axis"] for r in rows} >= {"completion", "extra_damage", "canary_echo"}
    assert (out / "cost_completion.png").stat().st_size > 0
    assert "cost_completion.png" in md


def test_export_damages_carries_the_spec(app, ops_results, tmp_path):
    path = tmp_path / "damages.csv"
    res = CliRunner().invoke(app, ["export", "damages", str(ops_results), "-o", str(path)])
    assert res.exit_code == 0, res.output
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    by_spec: dict[str, int] = {}
    for r in rows:
        by_spec[r["spec"]] = by_spec.get(r["spec"], 0) + 1
    # Valid runs only: the invalid adversarial run's injected damage is not an event here.
    assert by_spec == {"t2": 2, "t1": 2, "injection:exfil": 1}


def test_export_axes(app, ops_results, tmp_path):
    path = tmp_path / "axes.csv"
    res = CliRunner().invoke(app, ["export", "axes", str(ops_results), "-o", str(path), "--bootstrap", "20"])
    assert res.exit_code == 0, res.output
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    completion = next(
        r for r in rows if r["axis"] == "completion" and r["condition"] == "clean" and r["model"] == "m"
    )
    assert (completion["estimate"], completion["n"], completion["invalid"]) == ("0.625", "8", "1")
