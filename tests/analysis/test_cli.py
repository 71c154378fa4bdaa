from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from agentrel.harness.cli import analyze as analyze_cli
from agentrel.harness.cli import export as export_cli
from agentrel.harness.cli.errors import ExitCode, UserError, exit_code
from tests.analysis.conftest import ROOT, record, write_results

CELL_KEYS = {
    "model",
    "task",
    "condition",
    "n",
    "x",
    "p_hat",
    "ci_low",
    "ci_high",
    "demonstrably_stochastic",
    "passed",
    "expected_dollars_per_run",
}
POOL_KEYS = {
    "model",
    "cells",
    "damage_cells",
    "miss_rate_pair",
    "miss_rate_event",
    "icc_mle",
    "icc_mle_ci",
    "icc_anova",
    "icc_fleiss_cuzick",
    "icc_kleinman",
}
SMALL_CSV = """model,task,run,damaged,passed,errored,mutated,dollars,severity,irreversibility,cost_usd
m1,t1,1,1,0,0,1,250.00,high,substrate,0.05
m1,t1,2,0,1,0,0,,,,0.05
m1,t1,3,1,0,0,1,10.00,LOW,reversible,0.05
m1,t1,4,0,1,0,0,,,,0.05
m1,t2,1,0,1,0,0,,,,0.04
m1,t2,2,0,1,0,0,,,,0.04
m1,t2,3,0,0,1,0,,,,0.04
m1,t2,4,0,1,0,0,,,,0.04
reference/stochastic,t1,1,1,0,0,1,5.00,medium,governance,
reference/stochastic,t1,2,1,0,0,1,5.00,medium,governance,
reference/stochastic,t1,3,0,1,0,0,,,,
reference/stochastic,t1,4,1,0,0,1,5.00,medium,governance,
"""


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def app() -> typer.Typer:
    root = typer.Typer()
    analyze_cli.register(root)
    export_cli.register(root)
    return root


@pytest.fixture
def small_csv(tmp_path: Path) -> Path:
    path = tmp_path / "small.csv"
    path.write_text(SMALL_CSV)
    return path


def test_analyze_round_trip_on_a_small_csv(runner, app, small_csv, tmp_path):
    out, summary = tmp_path / "report", tmp_path / "summary.json"
    res = runner.invoke(
        app,
        [
            "analyze",
            str(small_csv),
            "--out",
            str(out),
            "--json-file",
            str(summary),
            "--bootstrap",
            "300",
            "--seed",
            "7",
        ],
    )
    assert res.exit_code == 0, res.output
    for name in ("report.md", "report.html", "cells.csv", "cell_rates.png", "detection.png", "dollars.png"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "cell_rates.png").read_bytes()[:4] == b"\x89PNG"
    data = json.loads(summary.read_text())
    assert len(data["cells"]) == 3 and set(data["cells"][0]) >= CELL_KEYS
    by_cell = {(c["model"], c["task"]): c for c in data["cells"]}
    c = by_cell[("m1", "t1")]
    assert (c["n"], c["x"], c["p_hat"], c["passed"]) == (4, 2, 0.5, 2)
    assert c["expected_dollars_per_run"] == pytest.approx(65.0)
    assert c["agent_kind"] == "model" and by_cell[("reference/stochastic", "t1")]["agent_kind"] == "reference"
    pools = {p["model"]: p for p in data["pools"]}
    assert {"all", "m1", "reference/stochastic"} == set(pools) and set(pools["all"]) >= POOL_KEYS
    assert pools["all"]["agents"] == ["m1"]  # reference agents are not pooled with models
    assert pools["all"]["miss_rate_pair"] == pytest.approx(0.5)
    assert len(pools["all"]["icc_mle_ci"]) == 2
    with (out / "cells.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3 and rows[0]["dollars_total"] in {"260.00", "0.00", "15.00"}
    report = (out / "report.md").read_text()
    assert "reference/stochastic (reference agent)" in report
    assert "| m1 | model |" in report
    html = (out / "report.html").read_text()
    assert "<table>" in html and 'src="data:image/png;base64,' in html


def test_analyze_is_seeded(runner, app, small_csv, tmp_path):
    outs = []
    for i, seed in enumerate(["3", "3", "4"]):
        path = tmp_path / f"s{i}.json"
        res = runner.invoke(
            app,
            [
                "analyze",
                str(small_csv),
                "--out",
                str(tmp_path / f"o{i}"),
                "--json-file",
                str(path),
                "--bootstrap",
                "200",
                "--seed",
                seed,
                "--no-figures",
            ],
        )
        assert res.exit_code == 0, res.output
        outs.append(json.loads(path.read_text())["pools"][0]["bootstrap"])
    assert outs[0] == outs[1] and outs[0] != outs[2]


def test_bad_csv_is_one_clear_error(runner, app, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("model,task,run,damaged\nm,t,1,yes\n")
    res = runner.invoke(app, ["analyze", str(bad), "--out", str(tmp_path / "o")])
    assert isinstance(res.exception, UserError) and exit_code(res.exception) == ExitCode.BAD_INPUT
    assert str(res.exception) == f"{bad}:2: column 'damaged': expected true/false/1/0, got 'yes'"


def test_entry_point_prints_one_line_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("model,task,run\nm,t,1\n")
    entry = Path(sys.executable).with_name("agentrel")
    proc = subprocess.run(
        [str(entry), "analyze", str(bad)], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert proc.returncode == int(ExitCode.BAD_INPUT)
    assert proc.stderr.strip().splitlines() == [
        f"agentrel: error: {bad}:1: missing required column(s) damaged (need model, task, run, damaged)"
    ]
    assert "Traceback" not in proc.stderr


def test_mixed_protocols_refused_unless_allowed(runner, app, tmp_path):
    directory = write_results(tmp_path / "r", [record("m", "t", 0), record("m", "t", 1, protocol="f" * 64)])
    res = runner.invoke(app, ["analyze", str(directory), "--no-figures", "--bootstrap", "10"])
    assert isinstance(res.exception, UserError)
    assert "--allow-mixed-protocols" in str(res.exception)
    res = runner.invoke(
        app, ["analyze", str(directory), "--no-figures", "--bootstrap", "10", "--allow-mixed-protocols"]
    )
    assert res.exit_code == 0, res.output
    assert (directory / "analysis" / "report.md").exists()


def test_results_directory_reports_failures_and_reference_agents(runner, app, small_results, tmp_path):
    summary = tmp_path / "s.json"
    res = runner.invoke(
        app,
        ["analyze", str(small_results), "--json-file", str(summary), "--bootstrap", "100", "--no-figures"],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(summary.read_text())
    assert data["invalid_runs"] == 2 and data["runs"] == 24
    assert data["invalid_by_status"] == {"harness_invalid": 2}
    assert data["protocol_hashes"] == ["a" * 64]
    report = (small_results / "analysis" / "report.md").read_text()
    assert "24 valid and 2 invalid runs (harness_invalid 2)" in report and "db clone failed" not in report
    assert "24 valid runs, 2 invalid (harness_invalid 2) in 6 cells" in res.stderr
    assert "reference/stochastic (reference agent)" in report


def test_json_means_json_on_stdout(runner, app, small_results, tmp_path):
    """`--json` is JSON on standard output, as on every other command; the files written go to stderr."""
    res = runner.invoke(app, ["analyze", str(small_results), "--json", "--bootstrap", "50", "--no-figures"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["runs"] == 24 and data["invalid_runs"] == 2
    assert "report.md" in res.stderr


def test_required_k_single_values(runner, app):
    def run(*args: str) -> str:
        res = runner.invoke(app, ["required-k", *args])
        assert res.exit_code == 0, res.output
        return res.stdout.strip()

    def k_of(*args: str) -> int:
        return int(json.loads(run(*args, "--json"))["k"])

    assert k_of("--p", "0.16", "--alpha", "0.05") == 18
    assert k_of("--p", "0.01", "--alpha", "0.9801") == 2
    assert k_of("--p", "0.2", "--target", "0.95") == 14
    assert k_of("--x", "4", "--n", "16", "--alpha", "0.05") == 11
    assert k_of("--x", "4", "--n", "16", "--alpha", "0.05", "--conservative") == 32
    # The answer in words, with the suite's total (20 tasks ship) and its cost when a run's cost is given.
    text = run("--p", "0.05", "--cost-per-run", "0.12")
    assert text.splitlines() == [
        "59 runs of each task give a 95% chance of seeing at least one damaging run when the per-run "
        "damage rate is 5%.",
        "For the 20-task suite: 1,180 runs per agent and condition, about $141.60 at $0.12 a run.",
    ]
    # x = 0: the exact one-sided bound, 1 - 0.05^(1/160) = 0.01855 shown rounded up, never a k.
    zero = run("--x", "0", "--n", "160", "--alpha", "0.05")
    assert zero.startswith("No damage in 160 runs: the per-run damage rate is below 1.9% at 95% confidence")
    data = json.loads(run("--x", "0", "--n", "16", "--json"))
    assert data["k"] is None and abs(data["p_upper"] - (1 - 0.05 ** (1 / 16))) < 1e-12
    assert "below 17.1%" in data["sentence"]


def test_percent_never_overstates_a_bound():
    from agentrel.analysis.plain import percent

    assert percent(0.05) == "5%" and percent(0.16) == "16%" and percent(0.0) == "0%"
    assert percent(0.018547, "up") == "1.9%" and percent(0.018447, "up") == "1.9%"
    assert percent(0.018447) == "1.8%"  # nearest would claim a bound below the exact one
    assert percent(0.0902, "down") == "9%" and percent(0.0999, "down") == "9.9%"
    assert percent(0.17075, "up") == "17.1%" and percent(0.0025) == "0.25%"


@pytest.mark.parametrize(
    "args",
    [
        ["--p", "0.2", "--x", "1", "--n", "4"],
        ["--x", "3"],
        ["--p", "0.2", "--alpha", "0.05", "--target", "0.9"],
        ["--x", "5", "--n", "4"],
        ["--p", "0.2", "--alpha", "1.5"],
        [],
    ],
)
def test_required_k_usage_errors(runner, app, args):
    res = runner.invoke(app, ["required-k", *args])
    assert isinstance(res.exception, UserError) and exit_code(res.exception) == ExitCode.USAGE


def test_required_k_from_input(runner, app, small_csv):
    res = runner.invoke(
        app, ["required-k", "--from", str(small_csv), "--target", "0.95"], env={"COLUMNS": "200"}
    )
    assert res.exit_code == 0, res.output
    # Outside a terminal the tables are plain columns, nothing cut: split on runs of two spaces.
    assert "│" not in res.stdout and "…" not in res.stdout
    split = [re.split(r"\s{2,}", line.strip()) for line in res.stdout.splitlines()]
    rows = {cols[0] + "/" + cols[1]: cols for cols in split if len(cols) > 8 and cols[0] != "agent"}
    # m1/t1: 2 of 4; point k = 5; one-sided 95% lower bound 0.0976 -> k = 30, at $0.05 a run -> $1.50
    assert rows["m1/t1"][4:] == ["0", "0.500", "5", "30", "–", "$0.05", "$1.50"]
    assert rows["m1/t2"][6:9] == ["–", "–", "0.5271"]  # x = 0: no k, an upper bound instead
    assert rows["reference/stochastic (reference agent)/t1"][6:8] == ["3", "11"]
    assert "Heterogeneity-aware" in res.stdout
    data = json.loads(
        runner.invoke(app, ["required-k", "--from", str(small_csv), "--target", "0.95", "--json"]).stdout
    )
    by_cell = {(c["model"], c["task"]): c for c in data["cells"]}
    assert by_cell[("m1", "t1")]["k_conservative"] == 30 and by_cell[("m1", "t2")]["k_point"] is None


def test_export_damages_from_results(runner, app, small_results, tmp_path):
    out = tmp_path / "damages.csv"
    res = runner.invoke(app, ["export", "damages", str(small_results), "-o", str(out)])
    assert res.exit_code == 0, res.output
    with out.open() as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0])[:12] == [
        "run_id",
        "model",
        "task",
        "condition",
        "run_index",
        "rule",
        "severity",
        "irreversibility",
        "table",
        "key",
        "dollars",
        "protocol_hash",
    ]
    assert len(rows) == 7
    first = rows[0]
    assert (first["rule"], first["table"], first["key"], first["dollars"]) == (
        "wrong_row",
        "incident",
        "[7]",
        "100.50",
    )
    assert first["protocol_hash"] == "a" * 64 and first["run_index"] == "0"


def test_export_damages_from_csv_has_one_row_per_damaged_run(runner, app, small_csv, tmp_path):
    out = tmp_path / "damages.csv"
    res = runner.invoke(app, ["export", "damages", str(small_csv), "-o", str(out)])
    assert res.exit_code == 0, res.output
    with out.open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 5 and all(r["rule"] == "" for r in rows)
    assert [r["dollars"] for r in rows[:2]] == ["250.00", "10.00"]
    assert rows[1]["severity"] == "low"


def test_export_cells(runner, app, small_results, tmp_path):
    out = tmp_path / "cells.csv"
    res = runner.invoke(app, ["export", "cells", str(small_results), "-o", str(out), "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    with out.open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 6
    t1 = next(r for r in rows if r["model"] == "model-a" and r["task"] == "t1")
    assert (t1["n"], t1["x"], t1["dollars_total"]) == ("4", "2", "201.50")
    assert float(t1["expected_dollars_per_run"]) == pytest.approx(50.375)
    assert float(t1["dollars_ci_low"]) <= 50.375 <= float(t1["dollars_ci_high"])
    assert float(t1["lgd_max"]) == pytest.approx(100.75)
    # One number format: every estimate with six decimals, the exact summed dollars with cents.
    estimates = ("p_hat", "ci_low", "ci_high", "expected_dollars_per_run", "lgd_mean", "cost_usd_mean")
    assert all(re.fullmatch(r"-?\d+\.\d{6}", r[c]) for r in rows for c in estimates if r[c])
    assert t1["expected_dollars_per_run"] == "50.375000"


def test_end_to_end_on_real_published_runs(runner, app, arb_csv, tmp_path):
    summary = tmp_path / "arb.json"
    res = runner.invoke(
        app,
        [
            "analyze",
            str(arb_csv),
            "--out",
            str(tmp_path / "arb"),
            "--json-file",
            str(summary),
            "--bootstrap",
            "500",
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(summary.read_text())
    assert data["runs"] == 1728 and len(data["cells"]) == 180
    everyone = data["pools"][0]
    assert everyone["model"] == "all" and len(everyone["agents"]) == 9
    assert (everyone["cells"], everyone["damage_cells"]) == (180, 20)
    assert everyone["miss_rate_pair"] == pytest.approx(0.7515625)
    assert everyone["miss_rate_event"] == pytest.approx(
        (69 - sum(c["x"] ** 2 / c["n"] for c in data["cells"])) / 69
    )
    assert 0 < everyone["icc_mle_ci"][0] < everyone["icc_mle"] < everyone["icc_mle_ci"][1] < 1
    assert sum(c["demonstrably_stochastic"] for c in data["cells"]) == everyone["stochastic_cells"] == 8
    priced = [c for c in data["cells"] if c["dollars_total"] not in (None, "0")]
    assert sorted(c["dollars_total"] for c in priced) == ["28166.0", "59379.0"]
    assert (tmp_path / "arb" / "report.html").exists()


def test_package_root_is_this_checkout():
    assert (ROOT / "analysis" / "pipeline.py").exists()
