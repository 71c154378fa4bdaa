"""`agentrel insure`: realised loss apart from reversible value at stake, what the premium prices, the
CSV on stdout with `--csv -`, and JSON that states currency, agent and volume without float noise."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentrel.analysis.decisions.insure import TaskEvidence, annual_loss, cents
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
def mixed(tmp_path: Path) -> Path:
    """t1 damages 4 of 10 runs: two at $100 realised + $900 reversible, two at $900 reversible only."""
    recs = []
    for i in range(10):
        if i < 2:
            events = [event("100.00"), event("900.00", irreversibility="reversible", key=[8])]
            recs.append(record("m", "t1", i, "FAIL_DAMAGE", events=events))
        elif i < 4:
            events = [event("900.00", irreversibility="reversible")]
            recs.append(record("m", "t1", i, "FAIL_DAMAGE", events=events))
        else:
            recs.append(record("m", "t1", i, "PASS"))
    return write_results(tmp_path / "results" / "mixed", recs)


def test_realised_and_reversible_are_priced_apart(cli, mixed: Path, tmp_path: Path) -> None:
    """The attack: reversible value at stake priced as money lost (issue 34: $308,569 of $321,909)."""
    proc = cli("insure", str(mixed), "--volume", "1000", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    # Known answer: Jeffreys E[p] = 4.5 / 11; realised severities {100, 100, 0, 0} (mean $50), at stake
    # {900, 900, 900, 900} (mean $900).
    assert data["prices"] == "realised_loss"
    assert data["realised_loss"]["expected_loss"] == cents(1000 * 4.5 / 11 * 50)
    assert data["reversible_at_stake"]["expected_loss"] == cents(1000 * 4.5 / 11 * 900)
    assert data["expected_loss"] == data["realised_loss"]["expected_loss"]
    every = json.loads(
        cli("insure", str(mixed), "--volume", "1000", "--json", "--price", "all", cwd=tmp_path).stdout
    )
    assert every["prices"] == "all_priced"
    assert every["expected_loss"] == cents(1000 * 4.5 / 11 * (1000 + 1000 + 900 + 900) / 4)
    assert every["realised_loss"] == data["realised_loss"]  # the parts do not depend on what is priced
    want = annual_loss([TaskEvidence("t1", 10, 4, (100.0, 100.0, 0.0, 0.0), 0)], 1000)
    assert data["premium"] == cents(want.premium)


def test_json_states_currency_agent_volume_without_float_noise(cli, mixed: Path, tmp_path: Path) -> None:
    proc = cli("insure", str(mixed), "--volume", "123457", "--json", cwd=tmp_path)
    data = json.loads(proc.stdout)
    assert (data["currency"], data["agent"], data["condition"], data["volume"]) == (
        "USD",
        "m",
        "clean",
        123457,
    )
    # No amount has more than two decimals in the text itself (27173062.500000004 must not appear).
    for number in re.findall(r"-?\d+\.\d+", proc.stdout):
        assert len(number.split(".")[1]) <= 2, number


def test_csv_dash_writes_stdout_not_a_file(cli, mixed: Path, tmp_path: Path) -> None:
    """The bug: `--csv -` wrote a file named `-` in the working directory."""
    proc = cli("insure", str(mixed), "--volume", "1000", "--csv", "-", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "-").exists()
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert len(rows) == 1
    row = rows[0]
    assert row["currency"] == "USD" and row["agent"] == "m" and row["volume"] == "1000"
    assert float(row["realised_loss_expected_loss"]) == cents(1000 * 4.5 / 11 * 50)
    assert "Annual loss" not in proc.stdout  # stdout holds the CSV alone


def test_csv_dash_with_json_is_refused(cli, mixed: Path, tmp_path: Path) -> None:
    proc = cli("insure", str(mixed), "--volume", "10", "--csv", "-", "--json", cwd=tmp_path)
    assert proc.returncode == 2 and "--csv - and --json both write to stdout" in proc.stderr


def test_unknown_price_basis_is_refused(cli, mixed: Path, tmp_path: Path) -> None:
    proc = cli("insure", str(mixed), "--volume", "10", "--price", "some", cwd=tmp_path)
    assert proc.returncode == 2 and "--price must be realised or all" in proc.stderr.strip()


def test_report_names_what_it_prices(cli, mixed: Path, tmp_path: Path) -> None:
    proc = cli("insure", str(mixed), "--volume", "1000", cwd=tmp_path)
    assert "Priced: realised loss" in proc.stdout
    assert "reversible value at stake: expected / VaR 99%" in proc.stdout


def test_the_csv_columns_are_documented(cli, mixed: Path, tmp_path: Path) -> None:
    from agentrel.analysis.columns import INSURE

    proc = cli("insure", str(mixed), "--volume", "1000", "--csv", "-", cwd=tmp_path)
    assert proc.stdout.splitlines()[0].split(",") == [c.name for c in INSURE.columns]
