"""`agentrel insure` and `agentrel power` end to end through the real entry point: JSON keys, numbers
that match the library, and one-line refusals with exit 2 or 3 for every bad input the issue lists."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentrel.analysis.decisions.certify import zero_damage_count
from agentrel.analysis.decisions.insure import TaskEvidence, annual_loss
from agentrel.analysis.decisions.power import clustered, mcnemar_exact_pairs, mcnemar_pairs, unpaired_runs
from agentrel.harness.cli.main import main
from tests.analysis.conftest import event, record, write_results

ENTRY = Path(sys.executable).with_name("agentrel")
INSURE_KEYS = [
    "expected_loss",
    "std",
    "var_99",
    "var_995",
    "tvar_99",
    "tvar_995",
    "premium",
    "unpriced_damaging_runs",
]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed entry point in a subprocess (slow on a loaded machine: used once)."""
    return subprocess.run([str(ENTRY), *args], capture_output=True, text=True, cwd=cwd, check=False)


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """The real `main()` in process (its error mapping and exit codes), returning (code, out, err)."""

    def invoke(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        monkeypatch.chdir(cwd)
        monkeypatch.setattr(sys, "argv", ["agentrel", *args])
        with pytest.raises(SystemExit) as stop:
            main()
        got = capsys.readouterr()
        return subprocess.CompletedProcess(args, int(stop.value.code or 0), got.out, got.err)

    return invoke


@pytest.fixture
def priced(tmp_path: Path) -> Path:
    """One agent, two tasks: t1 damages 3 of 10 (two priced, one unpriced), t2 never; one invalid run."""
    recs = []
    for i in range(10):
        if i in (0, 1):
            recs.append(record("m", "t1", i, "FAIL_DAMAGE", events=[event("200.00")]))
        elif i == 2:
            recs.append(record("m", "t1", i, "FAIL_DAMAGE", events=[event("0.00")]))
        else:
            recs.append(record("m", "t1", i, "PASS"))
        recs.append(record("m", "t2", i, "PASS"))
    recs.append(record("m", "t2", 10, None, error={"kind": "harness", "message": "clone failed"}))
    return write_results(tmp_path / "results" / "r", recs)


@pytest.fixture
def unpriced(tmp_path: Path) -> Path:
    recs = [
        record("m", "t1", i, "FAIL_DAMAGE" if i < 2 else "PASS", events=[event("0.00")] if i < 2 else None)
        for i in range(6)
    ]
    return write_results(tmp_path / "results" / "u", recs)


def test_insure_json_keys_and_numbers(cli, priced: Path, tmp_path: Path) -> None:
    proc = cli("insure", str(priced), "--volume", "5000", "--mix", "t1=0.25,t2=0.75", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert list(data)[: len(INSURE_KEYS)] == INSURE_KEYS
    want = annual_loss(
        [TaskEvidence("t1", 10, 3, (200.0, 200.0), 1), TaskEvidence("t2", 10, 0, (), 0)],
        5000,
        {"t1": 0.25, "t2": 0.75},
    )
    assert {k: data[k] for k in INSURE_KEYS} == pytest.approx(want.keys(), abs=0.005)
    # Every dollar here is substrate damage: all of it realised, none at stake.
    assert (
        data["prices"] == "realised_loss" and data["realised_loss"]["expected_loss"] == data["expected_loss"]
    )
    assert data["reversible_at_stake"]["expected_loss"] == 0
    assert data["unpriced_damaging_runs"] == 1
    # E[L] by hand: N (s1 E[p1] + s2 E[p2]) * $200, Jeffreys posteriors Beta(3.5, 7.5) and Beta(0.5, 10.5)
    assert data["expected_loss"] == pytest.approx(5000 * (0.25 * 3.5 / 11 + 0.75 * 0.5 / 11) * 200)


def test_insure_report(cli, priced: Path, tmp_path: Path) -> None:
    md, table = tmp_path / "loss.md", tmp_path / "loss.csv"
    proc = cli(
        "insure", str(priced), "--volume", "1000", "--report", str(md), "--csv", str(table), cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    header, row = table.read_text().splitlines()
    cols = dict(zip(header.split(","), row.split(","), strict=False))
    assert header.split(",")[:8] == INSURE_KEYS and cols["agent"] == "m" and cols["currency"] == "USD"
    text = (tmp_path / "loss.md").read_text()
    assert "standard deviation principle" in text and "invalid runs (not in any rate) | 1 |" in text
    assert "Assumes: executions are independent" in text and "t2 pooled" in text


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["--volume", "0"], 2, "--volume must be a positive number"),
        (["--volume", "10", "--mix", "t1=0.5,t2=0.4"], 2, "--mix shares sum to 0.9, not 1"),
        (["--volume", "10", "--mix", "t1=half"], 2, "--mix item 't1=half'"),
        (["--volume", "10", "--mix", "t1=0.5,zz=0.5"], 3, "--mix names task 'zz'"),
        (["--volume", "10", "--principle", "cheap"], 2, "--principle must be one of"),
        (["--volume", "10", "--agent", "nobody"], 3, "--agent 'nobody' is not in the results"),
    ],
)
def test_insure_bad_input(cli, priced: Path, tmp_path: Path, args: list[str], code: int, needle: str) -> None:
    proc = cli("insure", str(priced), *args, cwd=tmp_path)
    assert proc.returncode == code
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr


def test_insure_refuses_results_with_no_priced_task(unpriced: Path, tmp_path: Path) -> None:
    """The attack: damage that was never priced must not come out as a $0 premium."""
    proc = run("insure", str(unpriced), "--volume", "1000", "--json", cwd=tmp_path)
    assert proc.returncode == 3 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"agentrel: error: {unpriced}: no damaging run in the results carries a dollar amount, so no loss "
        "size can be estimated; price the damage rules of at least one task"
    ]


def test_power_json(cli, tmp_path: Path) -> None:
    proc = cli(
        "power", "--p1", "0.1", "--p2", "0.2", "--icc", "0.05", "--tasks", "40", "--json", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["paired_runs"] == mcnemar_exact_pairs(0.1, 0.2) and data["unpaired_runs"] == unpaired_runs(
        0.1, 0.2
    )
    assert data["paired_runs_large_sample"] == mcnemar_pairs(0.1, 0.2)
    assert data["exact_power"] >= 0.8 > data["large_sample_exact_power"]
    assert data["paired_runs_per_cell"] == clustered(data["paired_runs"], 0.05, 40).runs_per_task
    assert data["cells"] == 40
    text = cli("power", "--p1", "0.1", "--p2", "0.2", "--power", "0.9", cwd=tmp_path)
    assert f"{mcnemar_exact_pairs(0.1, 0.2, 0.05, 0.9)} runs per agent, exact power" in text.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--p1", "0", "--p2", "0.2"], "--p1 must be strictly between 0 and 1"),
        (["--p1", "0.1", "--p2", "1.5"], "--p2 must be strictly between 0 and 1"),
        (["--p1", "0.1", "--p2", "0.2", "--alpha", "1"], "--alpha must be strictly between 0 and 1"),
        (["--p1", "0.1", "--p2", "0.1"], "zero difference"),
        (["--p1", "0.1", "--p2", "0.2", "--icc", "0.1"], "--icc and --tasks go together"),
        (["--p1", "0.1", "--p2", "0.2", "--icc", "0.5", "--tasks", "10"], "use at least"),
    ],
)
def test_power_bad_input(cli, tmp_path: Path, args: list[str], needle: str) -> None:
    proc = cli("power", *args, cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0]


def test_certify_count_only(cli, tmp_path: Path) -> None:
    proc = cli("certify", "--target-p", "0.05", "--confidence", "0.95", "--json", cwd=tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout)["runs"] == 59
    proc = cli(
        "certify",
        "--target-p",
        "0.05",
        "--confidence",
        "0.95",
        "--multiplicity",
        "bonferroni",
        "--cells",
        "10",
        "--json",
        cwd=tmp_path,
    )
    assert json.loads(proc.stdout)["runs"] == zero_damage_count(0.05, 1 - 0.05 / 10)


@pytest.fixture
def audited(tmp_path: Path) -> Path:
    """Agent m: t1 clean in 12 runs, t2 damaged once in 12, t3 clean in 5 runs plus 30 invalid ones."""
    recs = [record("m", "t1", i, "PASS") for i in range(12)]
    recs += [
        record("m", "t2", i, "FAIL_DAMAGE" if i == 9 else "PASS", events=[event("5.00")] if i == 9 else None)
        for i in range(12)
    ]
    recs += [record("m", "t3", i, "PASS") for i in range(5)]
    recs += [
        record("m", "t3", 100 + i, None, error={"kind": "harness", "message": "boom"}) for i in range(30)
    ]
    return write_results(tmp_path / "results" / "a", recs)


def test_certify_results(cli, audited: Path, tmp_path: Path) -> None:
    # P = 0.2, C = 0.9: n = 11. t1 certified (12 clean), t2 detected (damage at run 9), t3 open: 5 valid
    # clean runs; its 30 invalid runs do not count toward the certificate.
    proc = cli(
        "certify",
        str(audited),
        "--target-p",
        "0.2",
        "--confidence",
        "0.9",
        "--json",
        "--budget-runs",
        "6",
        "--prior",
        "0.5,5",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    (agent,) = data["agents"]
    assert agent["runs_required"] == 11
    assert agent["certified"] == {
        "t1/clean": "no damage in 12 runs: per-run damage rate below 0.2 with confidence 0.9"
    }
    assert agent["detected"] == ["t2/clean"]
    assert list(agent["open"]) == ["t3/clean"] and agent["open"]["t3/clean"]["clean"] == 5
    assert agent["invalid_runs"] == 30
    assert "1 of 3 cells certified" in agent["statement"]
    assert data["budget"]["runs"] == {"m/t3/clean": 6} and data["budget"]["allocated"] == 6


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--target-p", "0"], "--target-p must be strictly between 0 and 1"),
        (["--target-p", "1"], "--target-p must be strictly between 0 and 1"),
        (["--confidence", "1.5"], "--confidence must be strictly between 0 and 1"),
        (["--budget-runs", "-1"], "--budget-runs must be a non-negative number"),
        (["--multiplicity", "holm"], "--multiplicity must be one of union, bonferroni"),
        (["--prior", "0,1"], "--prior must be a,b with a, b > 0"),
    ],
)
def test_certify_bad_input(cli, tmp_path: Path, args: list[str], needle: str) -> None:
    proc = cli("certify", *args, cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0]


def test_certify_budget_without_a_usable_fit(cli, tmp_path: Path) -> None:
    clean = write_results(tmp_path / "results" / "c", [record("m", "t", i, "PASS") for i in range(4)])
    proc = cli("certify", str(clean), "--budget-runs", "10", cwd=tmp_path)
    assert proc.returncode == 3
    assert "declare a Beta prior" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_power_explains_why_paired_and_unpaired_differ():
    """Two bare numbers (paired 71 > unpaired 60) read as a bug; the sentence says why, and how pairing
    saves runs when the agents fail together."""
    from agentrel.harness.cli.power import pairing_sentence

    independent = pairing_sentence(71, 60, None)
    assert "damage independently" in independent and "more runs than" in independent
    assert "--discordant" in independent
    assert pairing_sentence(43, 60, 0.22).startswith("Pairing saves 17 runs per agent")
    assert "at least as many" in pairing_sentence(80, 60, 0.6)
