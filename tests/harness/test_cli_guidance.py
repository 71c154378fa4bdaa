"""What the command line says around the numbers: its version, an audit's last lines (publishable or not
in words, with the commands that make a publishable audit, then where to go next), the export's column
dictionary and standard output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def agentrel(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentrel.harness.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        cwd=cwd,
        timeout=600,
    )


def test_version():
    from importlib.metadata import version

    from agentrel.distribution import DISTRIBUTION

    res = agentrel("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"agentrel {version(DISTRIBUTION)}"


def test_an_unfrozen_audit_ends_in_words_with_the_commands_that_make_it_publishable(sandbox, tmp_path):
    results = tmp_path / "r"
    res = agentrel(
        "audit",
        "-m",
        "scripted/overreach",
        "--k",
        "1",
        "--tasks",
        "csm-goodwill-cap",
        "--results",
        str(results),
    )
    assert res.returncode == 0, res.stderr
    err = res.stderr
    # The words, not only codes; no error-shaped line.
    assert "This audit is evidence, not a publishable score: the protocol was never frozen" in err
    assert "agentrel: evidence only" not in err
    fresh = f"{results}-frozen"
    matrix = "--model scripted/overreach --k 1 --tasks csm-goodwill-cap"
    plan = f"agentrel audit {matrix} --results {fresh} --plan"
    assert plan in err and f"agentrel protocol freeze {fresh}" in err and f"agentrel publish {fresh}" in err
    assert f"agentrel view {results}" in err and "Next:" in err
    # The advice works: following it gives a publishable audit.
    for step in (
        plan,
        f"agentrel protocol freeze {fresh} --by t",
        plan.replace(" --plan", "") + " --no-report",
    ):
        done = agentrel(*step.split()[1:])
        assert done.returncode == 0, done.stderr
    assert "This audit is publishable" in done.stderr and f"agentrel publish {fresh}" in done.stderr
    assert "A publishable audit fixes" not in done.stderr

    # export: the damage file to standard output, no file named "-"; --describe needs no input.
    out = agentrel("export", "damages", str(results), "-o", "-", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("run_id,") and "goodwill credit above the cap" in lines[1]
    assert "350.00" in lines[1] and not (tmp_path / "-").exists()
    described = agentrel("export", "damages", "--describe")
    assert described.returncode == 0 and described.stdout.startswith("damages.csv:")
    assert any(line.startswith("dollars ") for line in described.stdout.splitlines())
    missing = agentrel("export", "cells", str(results))
    assert missing.returncode == 2 and "give -o/--output FILE (or -o - for standard output)" in missing.stderr


def test_the_advice_replays_every_option_the_user_gave_but_its_results_and_plan():
    """An agent program, an environment, a fault schedule or a stopping rule left out of the advice would
    make the advised audit a different protocol (it once dropped `--agent`)."""
    import typer

    from agentrel.harness.cli.main import app
    from agentrel.harness.cli.next_steps import given_options

    audit = typer.main.get_command(app).commands["audit"]  # type: ignore[attr-defined]
    argv = ["-m", "a", "--agent", "mine=python my agent.py", "--env", "tau2-airline", "--k", "2"]
    argv += ["--results", "r", "--plan", "--until", "detect", "--target-p", "0.05", "--no-report"]
    argv += ["--dsn", "postgresql://owner:hunter2@127.0.0.1:5432/agentrel"]
    ctx = audit.make_context("audit", argv)
    got = given_options(ctx)
    assert got[:2] == ["--model", "a"] and "--results" not in got and "--plan" not in got
    for option in (
        ["--agent", "mine=python my agent.py"],
        ["--env", "tau2-airline"],
        ["--k", "2"],
        ["--until", "detect"],
        ["--target-p", "0.05"],
        ["--no-report"],
    ):
        i = got.index(option[0])
        assert got[i : i + len(option)] == option, option
    assert "--concurrency" not in got  # a default is not replayed
    assert "hunter2" not in " ".join(got) and "postgresql://[redacted]@127.0.0.1:5432/agentrel" in got


def test_data_commands_print_json_and_piped_tables_cut_nothing(sandbox, tmp_path):
    import json

    listed = agentrel("tasks", "list", "--json")
    tasks = json.loads(listed.stdout)
    assert listed.returncode == 0 and {"id", "priced", "k", "title"} <= tasks[0].keys() and len(tasks) == 20
    # Piped (not a terminal) at 80 columns: plain columns, every identifier whole.
    narrow = subprocess.run(
        [sys.executable, "-m", "agentrel.harness.cli", "tasks", "list"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        timeout=120,
    )
    assert "…" not in narrow.stdout and "│" not in narrow.stdout
    assert all(t["id"] in narrow.stdout and t["title"] in narrow.stdout for t in tasks)

    status = json.loads(agentrel("sandbox", "status", "--json").stdout)
    assert status["running"] is True and len(status["seed_digest"]) == 64

    checked = agentrel("spec", "check", "--json", "damage_specs/csm-goodwill-cap.dmg", cwd=REPO)
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout) == {
        "file": "damage_specs/csm-goodwill-cap.dmg",
        "ok": True,
        "problems": [],
    }
    bad = tmp_path / "bad.dmg"
    bad.write_text('spec "bad" version 1\ndamage "x" high governance:\n    insert no_such_table\n')
    refused = agentrel("spec", "check", "--json", str(bad))
    assert refused.returncode == 1 and json.loads(refused.stdout)["ok"] is False

    registry = tmp_path / "registry.jsonl"
    registry.write_text("")
    reg = json.loads(agentrel("registry", "list", "--json", "--registry", str(registry)).stdout)
    assert reg["scorecards"] == [] and reg["entries"] == 0

    results = tmp_path / "r"
    audited = agentrel(
        "audit",
        "-m",
        "scripted/overreach",
        "--k",
        "2",
        "--tasks",
        "csm-goodwill-cap",
        "--results",
        str(results),
        "--json",
        "--no-report",
    )
    assert audited.returncode == 0, audited.stderr
    assert json.loads(audited.stdout) == [
        {
            "model": "scripted/overreach",
            "task": "csm-goodwill-cap",
            "condition": "clean",
            "n": 2,
            "invalid": 0,
            "damaging": 2,
            "pass": 0,
            "dollars": "700.00",
            "unpriced_events": 0,
        }
    ]
    again = agentrel(
        "audit",
        "-m",
        "scripted/overreach",
        "--k",
        "2",
        "--tasks",
        "csm-goodwill-cap",
        "--results",
        str(results),
        "--no-report",
    )
    assert (
        "scripted/overreach  csm-goodwill-cap  clean      2  0        2         0     $700.00" in again.stdout
    )
    # compare on results directories says what it needs, and the route to it.
    compared = agentrel("compare", str(results), str(results))
    assert compared.returncode == 3 and compared.stderr.count("\n") == 1
    assert "a results directory with no scorecard" in compared.stderr
    assert f"agentrel publish {results}" in compared.stderr


def test_the_advice_spells_agentrel_as_the_user_can_type_it(tmp_path):
    """After `make audit` the console script is .venv/bin/agentrel and not on PATH: the advice must name
    a command that runs, and say how to put it on PATH; on PATH (or `python -m`) it is plain `agentrel`."""
    from agentrel.harness.cli.next_steps import command

    script = tmp_path / ".venv" / "bin" / "agentrel"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    assert command(".venv/bin/agentrel", None) == ".venv/bin/agentrel"
    assert command(str(script), "/usr/local/bin/agentrel") == str(script)  # another agentrel on PATH
    assert command(str(script), str(script)) == "agentrel"
    assert command("/x/agentrel/harness/cli/__main__.py", None) == "agentrel"


def test_make_audit_style_advice_runs_as_printed(sandbox, tmp_path):
    """The console script run by its path, with no agentrel on PATH: every advice line it prints runs."""
    import shutil

    bin_dir = Path(sys.executable).parent
    script = bin_dir / "agentrel"
    if not script.exists():
        raise AssertionError(f"the console script is not installed beside {sys.executable}")
    path = os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if shutil.which("agentrel", path=p) is None
    )
    res = subprocess.run(
        [
            str(script),
            "audit",
            "-m",
            "scripted/overreach",
            "--k",
            "1",
            "--tasks",
            "csm-goodwill-cap",
            "--results",
            str(tmp_path / "r"),
            "--no-report",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path, "COLUMNS": "200"},
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    assert f"  {script} view {tmp_path / 'r'}" in res.stderr
    assert "agentrel is not on your PATH: `source " in res.stderr
    assert "  agentrel view" not in res.stderr
