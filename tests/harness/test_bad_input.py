"""Every bad input a user can give the harness ends in one `agentrel: error:` line, a named exit code, and
no traceback; none of them loses a recorded run or spends one.

Each case builds what it needs under tmp_path (a results directory, a copy of part of the suite) and runs
the real CLI in a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TASK = "itsm-cab-window"
USAGE, BAD_INPUT, ENVIRONMENT = 2, 3, 4

Case = tuple[Callable[[Path], tuple[list[str], dict[str, str]]], int, str]


def audit(*extra: str) -> Callable[[Path], tuple[list[str], dict[str, str]]]:
    def setup(tmp: Path) -> tuple[list[str], dict[str, str]]:
        return ["audit", "--k", "1", "--tasks", TASK, "--results", str(tmp / "r"), *extra], {}

    return setup


def results_with(lines: list[bytes] | None = None, manifest: bytes | None = None):
    """A copy of a finished results directory whose runs.jsonl or manifest.json was then damaged."""

    def setup(tmp: Path) -> tuple[list[str], dict[str, str]]:
        results = tmp / "r"
        shutil.copytree(FINISHED[0], results)
        if lines is not None:
            good = (results / "runs.jsonl").read_bytes().splitlines(keepends=True)
            (results / "runs.jsonl").write_bytes(good[0] + b"".join(lines) + b"".join(good[1:]))
        if manifest is not None:
            (results / "manifest.json").write_bytes(manifest)
        return [*FINISHED_ARGS, "--results", str(results), "--no-report"], {}

    return setup


FINISHED: list[Path] = []
FINISHED_ARGS = ["audit", "-m", "scripted/oracle", "--k", "3", "--tasks", TASK]


@pytest.fixture(scope="module", autouse=True)
def finished_results(sandbox, tmp_path_factory):
    """One finished audit, copied by the cases that damage a results directory."""
    ENV.update({k: v for k, v in os.environ.items() if k.startswith("AGENTREL_")})
    path = tmp_path_factory.mktemp("finished") / "r"
    args = [*AGENTREL, *FINISHED_ARGS, "--results", str(path), "--no-report"]
    done = subprocess.run(args, capture_output=True, env=ENV, timeout=300)
    assert done.returncode == 0, done.stderr
    FINISHED[:] = [path]


def suite_with(mutate: Callable[[Path], None]):
    """A copy of one task and its spec, changed by `mutate`, read through AGENTREL_SUITE_DIR."""

    def setup(tmp: Path) -> tuple[list[str], dict[str, str]]:
        suite = tmp / "suite"
        (suite / "tasks" / "itsm").mkdir(parents=True)
        shutil.copytree(REPO / "damage_specs", suite / "damage_specs")
        shutil.copy(REPO / "tasks" / "itsm" / f"{TASK}.yaml", suite / "tasks" / "itsm")
        mutate(suite)
        args = ["audit", "--k", "1", "--tasks", TASK, "--results", str(tmp / "r")]
        return args, {"AGENTREL_SUITE_DIR": str(suite)}

    return setup


def task_file(suite: Path) -> Path:
    return suite / "tasks" / "itsm" / f"{TASK}.yaml"


def edit_task(old: str, new: str) -> Callable[[Path], None]:
    def mutate(suite: Path) -> None:
        path = task_file(suite)
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new, 1))

    return mutate


def spec_is(kind: str) -> Callable[[Path], None]:
    def mutate(suite: Path) -> None:
        spec = suite / "damage_specs" / f"{TASK}.dmg"
        spec.unlink()
        if kind == "directory":
            spec.mkdir()

    return mutate


def twice(suite: Path) -> None:
    (suite / "tasks" / "csm").mkdir()
    text = task_file(suite).read_text().replace("vertical: itsm", "vertical: csm")
    (suite / "tasks" / "csm" / f"{TASK}.yaml").write_text(text)


def command(*args: str, env: dict[str, str] | None = None):
    def setup(tmp: Path) -> tuple[list[str], dict[str, str]]:
        return [a.replace("{tmp}", str(tmp)) for a in args], env or {}

    return setup


def a_file(tmp: Path) -> tuple[list[str], dict[str, str]]:
    (tmp / "a-file").write_text("x")
    return ["audit", "--k", "1", "--tasks", TASK, "--results", str(tmp / "a-file")], {}


NO_KEYS = {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": "", "ANTHROPIC_API_KEY": ""}
CASES: dict[str, Case] = {
    "k zero": (audit("--k", "0"), USAGE, "--k"),
    "unknown flag": (audit("--kk", "1"), USAGE, "No such option: --kk"),
    "concurrency zero": (audit("-j", "0"), USAGE, "--concurrency"),
    "max attempts zero": (audit("--max-attempts", "0"), USAGE, "--max-attempts"),
    "temperature nan": (audit("--temperature", "nan"), USAGE, "--temperature must lie in [0, 2]"),
    "temperature inf": (audit("--temperature", "inf"), USAGE, "--temperature must lie in [0, 2]"),
    "temperature negative": (audit("--temperature", "-5"), USAGE, "--temperature must lie in [0, 2]"),
    "temperature text": (audit("--temperature", "warm"), USAGE, "--temperature"),
    "unknown prefix": (audit("-m", "mistral/large"), USAGE, "unknown agent prefix 'mistral'"),
    "no prefix": (audit("-m", "gpt-4o"), USAGE, "has no prefix"),
    "unknown reference": (audit("-m", "reference/other"), USAGE, "reference/stochastic"),
    "openai without key": (command("audit", "-m", "openai/gpt-4o", env=NO_KEYS), USAGE, "set OPENAI_API_KEY"),
    "anthropic without key": (command("audit", "-m", "anthropic/x", env=NO_KEYS), USAGE, "ANTHROPIC_API_KEY"),
    "unreachable provider": (
        command(
            "audit", "-m", "openai/x", env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "k"}
        ),
        ENVIRONMENT,
        "cannot reach",
    ),
    "no task matches": (command("audit", "--tasks", "no-such-task"), USAGE, "no task matches"),
    "results is a file": (a_file, USAGE, "is a file"),
    "prices missing": (audit("--prices", "/nonexistent/prices.yaml"), BAD_INPUT, "prices.yaml"),
    "garbage middle line": (
        results_with(lines=[b"this is not json\n"]),
        BAD_INPUT,
        "runs.jsonl:2: not a run record",
    ),
    "wrong-schema middle line": (
        results_with(lines=[b'{"run_id": 5}\n']),
        BAD_INPUT,
        "runs.jsonl:2: not a run record",
    ),
    "NUL-filled middle line": (
        results_with(lines=[b"\0" * 300 + b"\n"]),
        BAD_INPUT,
        "runs.jsonl:2: not a run record",
    ),
    "manifest is a list": (results_with(manifest=b"[1, 2]"), BAD_INPUT, "manifest.json: not a manifest"),
    "manifest is garbage": (results_with(manifest=b"\xff\xfe{"), BAD_INPUT, "manifest.json: not a manifest"),
    "spec missing": (suite_with(spec_is("missing")), BAD_INPUT, "no such spec file"),
    "spec is a directory": (suite_with(spec_is("directory")), BAD_INPUT, "cannot read spec file"),
    "task not UTF-8": (
        suite_with(
            lambda s: task_file(s).write_bytes(
                task_file(s).read_bytes().replace(b"title:", b"title: \xff", 1)
            )
        ),
        BAD_INPUT,
        "not UTF-8 text",
    ),
    "duplicate YAML key": (suite_with(edit_task("lever:", "title: twice\nlever:")), BAD_INPUT, "given twice"),
    "empty tool list": (
        suite_with(lambda s: task_file(s).write_text(_empty_tools(task_file(s).read_text()))),
        BAD_INPUT,
        "field tools",
    ),
    "vertical disagrees": (suite_with(edit_task("vertical: itsm", "vertical: csm")), BAD_INPUT, "disagrees"),
    "task id twice": (suite_with(twice), BAD_INPUT, "defined twice"),
    "bad fixture SQL": (
        suite_with(edit_task("fixture_sql: |", "fixture_sql: |\n  INSERT INTO no_such_table VALUES (1);")),
        BAD_INPUT,
        "field fixture_sql: fixture SQL failed",
    ),
    "unknown tool": (suite_with(edit_task("tools: [", "tools: [drop_database, ")), BAD_INPUT, "unknown tool"),
    "unknown acting user": (
        suite_with(edit_task("spec:", "acting_user: nobody\nspec:")),
        BAD_INPUT,
        "acting_user",
    ),
    "spec with unknown table": (
        suite_with(
            lambda s: (s / "damage_specs" / f"{TASK}.dmg").write_text(
                (REPO / "damage_specs" / f"{TASK}.dmg")
                .read_text()
                .replace("insert cab_approvals", "insert nope")
            )
        ),
        BAD_INPUT,
        "nope",
    ),
    "suite dir missing": (
        command("tasks", "list", env={"AGENTREL_SUITE_DIR": "/nonexistent/suite"}),
        BAD_INPUT,
        "no such tasks folder",
    ),
    "tasks show unknown": (command("tasks", "show", "no-such-task"), USAGE, "no task matches"),
    "mcp task pattern": (command("mcp", "serve", "--task", "itsm-*"), USAGE, "one task id"),
    "mcp verdict-out dir": (
        command("mcp", "serve", "--task", TASK, "--verdict-out", "{tmp}"),
        USAGE,
        "--verdict-out",
    ),
    "bad dsn": (command("sandbox", "status", "--dsn", "x"), ENVIRONMENT, "AGENTREL_DSN"),
    "no such command": (command("nosuch"), USAGE, "No such command"),
    "required-k alpha nan": (command("required-k", "--p", "0.1", "--alpha", "nan"), USAGE, "--alpha must be"),
    "required-k target inf": (
        command("required-k", "--p", "0.1", "--target", "inf"),
        USAGE,
        "--target must be",
    ),
    "required-k p nan": (command("required-k", "--p", "nan"), USAGE, "--p must lie in [0, 1]"),
}


def _empty_tools(text: str) -> str:
    start = text.index("tools:")
    return text[:start] + "tools: []\n" + text[text.index("fixture_sql:") :]


AGENTREL = [sys.executable, "-m", "harness.cli"]
ENV = dict(os.environ)


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_one_line_with_its_exit_code(tmp_path, name):
    setup, code, fragment = CASES[name]
    args, env = setup(tmp_path)
    runs = tmp_path / "r" / "runs.jsonl"
    before = runs.read_bytes() if runs.exists() else None
    proc = subprocess.run([*AGENTREL, *args], capture_output=True, text=True, env={**ENV, **env}, timeout=300)
    lines = [line for line in proc.stderr.strip().splitlines() if not line.startswith("audit ")]
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("agentrel: error: "), proc.stderr
    assert fragment in lines[0], lines[0]
    # Recorded runs are never lost or rewritten by a refused invocation.
    assert (runs.read_bytes() if runs.exists() else None) == before


def test_the_corpus_is_large():
    assert len(CASES) >= 35
    assert json.dumps(sorted(CASES))  # names are plain text, for the test ids
