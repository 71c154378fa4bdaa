"""`agentrel analyze` writes a certificate section (report.md and certificates.json) for an `--until detect`
audit (its frozen rule) or when given --target-p; known counts, bounds checked against scipy's Beta
quantile (the exact one-sided Clopper–Pearson bound), and one-line refusals for bad options."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from scipy.stats import beta

from agentrel.harness.cli.main import main
from tests.analysis.conftest import event, record, write_results


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    def invoke(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        monkeypatch.chdir(cwd)
        monkeypatch.setattr(sys, "argv", ["agentrel", *args])
        with pytest.raises(SystemExit) as stop:
            main()
        got = capsys.readouterr()
        return subprocess.CompletedProcess(args, int(stop.value.code or 0), got.out, got.err)

    return invoke


@pytest.fixture
def audited(tmp_path: Path) -> Path:
    """Agent m: t1 clean in 12 runs, t2 damaged once in 12, t3 clean in 5 runs plus 3 invalid ones."""
    recs = [record("m", "t1", i, "PASS") for i in range(12)]
    recs += [
        record("m", "t2", i, "FAIL_DAMAGE" if i == 9 else "PASS", events=[event("5.00")] if i == 9 else None)
        for i in range(12)
    ]
    recs += [record("m", "t3", i, "PASS") for i in range(5)]
    recs += [record("m", "t3", 100 + i, None, error={"kind": "harness", "message": "x"}) for i in range(3)]
    return write_results(tmp_path / "results" / "a", recs)


def _analyze(cli, results: Path, tmp_path: Path, *extra: str) -> tuple[dict, str]:
    out = tmp_path / "report"
    proc = cli(
        "analyze", str(results), "--out", str(out), "--no-figures", "--bootstrap", "20", *extra, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "certificates.json").read_text()), (out / "report.md").read_text()


def upper(clean: int, level: float) -> float:
    return float(beta.ppf(level, 1, clean))  # one-sided exact upper bound with no damaging run


def test_union_certificates_from_options(cli, audited: Path, tmp_path: Path) -> None:
    # P = 0.2, C = 0.9, union: n = ceil(ln 0.1 / ln 0.8) = 11 per cell.
    data, md = _analyze(cli, audited, tmp_path, "--target-p", "0.2", "--confidence", "0.9")
    (agent,) = data["agents"]
    assert data["source"] == "options given to analyze" and data["multiplicity"] == "union"
    assert agent["runs_required"] == math.ceil(math.log(0.1) / math.log(0.8)) == 11
    assert agent["certified"] == {
        "t1/clean": "no damage in 12 runs: per-run damage rate below 0.2 with confidence 0.9"
    }
    assert agent["detected"] == ["t2/clean"]
    assert agent["open"]["t3/clean"]["clean"] == 5
    assert agent["open"]["t3/clean"]["upper"] == pytest.approx(upper(5, 0.9), rel=1e-9)
    assert agent["invalid_runs"] == 3
    # Union bound over 3 cells: 1 - 3 (1 - 0.9) = 0.7.
    assert (
        "1 of 3 cells certified" in agent["statement"]
        and "jointly with confidence 0.7 " in agent["statement"]
    )
    assert "## Certificates" in md and "| t2/clean | detected |" in md and "5 of 11" in md


def test_bonferroni_raises_the_count_and_can_leave_a_cell_open(cli, audited: Path, tmp_path: Path) -> None:
    data, _ = _analyze(
        cli, audited, tmp_path, "--target-p", "0.2", "--confidence", "0.9", "--multiplicity", "bonferroni"
    )
    (agent,) = data["agents"]
    level = 1 - 0.1 / 3
    assert agent["cell_confidence"] == pytest.approx(level)
    assert agent["runs_required"] == math.ceil(math.log(1 - level) / math.log(0.8)) == 16
    # 12 clean runs no longer certify t1: it is open, with its exact bound at the adjusted confidence.
    assert agent["certified"] == {} and agent["open"]["t1/clean"]["upper"] == pytest.approx(upper(12, level))
    assert "0 of 3 cells certified" in agent["statement"]


def test_an_until_detect_audit_gets_its_frozen_rule(cli, audited: Path, tmp_path: Path) -> None:
    manifest = json.loads((audited / "manifest.json").read_text())
    manifest["stopping"] = {
        "until": "detect",
        "target_p": 0.2,
        "confidence": 0.9,
        "multiplicity": "union",
        "cell_confidence": 0.9,
        "runs_to_certify": 11,
    }
    (audited / "manifest.json").write_text(json.dumps(manifest))
    data, _ = _analyze(cli, audited, tmp_path)
    assert data["source"] == "the audit's frozen --until detect rule"
    assert data["agents"][0]["runs_required"] == 11 and list(data["agents"][0]["certified"]) == ["t1/clean"]


def test_no_rule_no_section(cli, audited: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    proc = cli("analyze", str(audited), "--out", str(out), "--no-figures", "--bootstrap", "20", cwd=tmp_path)
    assert proc.returncode == 0 and not (out / "certificates.json").exists()
    assert "## Certificates" not in (out / "report.md").read_text()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--target-p", "0"], "--target-p must be strictly between 0 and 1"),
        (["--target-p", "0.1", "--confidence", "1"], "--confidence must be strictly between 0 and 1"),
        (["--target-p", "0.1", "--multiplicity", "holm"], "--multiplicity must be one of union, bonferroni"),
        (["--confidence", "0.9"], "--confidence and --multiplicity go with --target-p"),
    ],
)
def test_bad_options_are_one_line(cli, audited: Path, tmp_path: Path, args: list[str], needle: str) -> None:
    proc = cli("analyze", str(audited), "--no-figures", *args, cwd=tmp_path)
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
