"""Every bad input a user can give the harness ends in one `agentrel: error:` line, a named exit code, and
no traceback; none of them loses a recorded run or spends one.

Each case builds what it needs under tmp_path (a results directory, a copy of part of the suite) and runs
the real CLI in a subprocess.
"""

from __future__ import annotations

import gzip
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


FAULT = "name: s\nfaults:\n  - id: f\n    kind: {kind}\n    trigger: {{when: {on}}}\n"
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


def files(**contents: bytes | str):
    """Write files under tmp (name -> content; `__` stands for `.`) and run a command naming them as {0},
    {1}, ... in that order."""

    def with_args(*args: str, env: dict[str, str] | None = None):
        def setup(tmp: Path) -> tuple[list[str], dict[str, str]]:
            for name, content in contents.items():
                path = tmp / name.replace("__", ".")
                path.parent.mkdir(parents=True, exist_ok=True)
                data = content.encode() if isinstance(content, str) else content
                path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
            paths = [str(tmp / name.replace("__", ".")) for name in contents]
            return [a.format(*paths, tmp=tmp) for a in args], env or {}

        return setup

    return with_args


CSV_HEAD = "model,task,run,damaged\n"
TABLE = '{"columns":["id","x"],"primary_key":["id"],"kinds":["int","text"]}'
DUMP_HEAD = '{"format":"agentrel-dump/1","tables":{"t":' + TABLE + "}}"
GOOD_DUMP = DUMP_HEAD + '\n["t",[1],[1,"a"]]\n'
SPEC = 'spec "s" version 1\nallow "any": update t\nrequire "x": exists t where after.id == 1\n'


def label_case(before: str) -> Callable[[Path], tuple[list[str], dict[str, str]]]:
    return files(before__jsonl__gz=before, after__jsonl__gz=GOOD_DUMP, spec__dmg=SPEC)(
        "label", "{2}", "{0}", "{1}"
    )


CASES.update(
    {
        # analyze / export inputs
        "analyze: not a results dir": (command("analyze", "{tmp}"), BAD_INPUT, "no runs.jsonl here"),
        "analyze: missing path": (command("analyze", "{tmp}/nope"), BAD_INPUT, "nope"),
        "analyze: garbage first line": (
            files(**{"r/runs.jsonl": "garbage\n"})("analyze", "{tmp}/r"),
            BAD_INPUT,
            "runs.jsonl:1",
        ),
        "analyze: manifest a list": (
            files(**{"r/runs.jsonl": "\n", "r/manifest.json": "[1]"})("analyze", "{tmp}/r"),
            BAD_INPUT,
            "manifest.json",
        ),
        "analyze: CSV missing column": (
            files(**{"o__csv": "model,task,run\nm,t,1\n"})("analyze", "{0}"),
            BAD_INPUT,
            "damaged",
        ),
        "analyze: CSV bad boolean": (
            files(**{"o__csv": CSV_HEAD + "m,t,1,perhaps\n"})("analyze", "{0}"),
            BAD_INPUT,
            "o.csv:2",
        ),
        "analyze: CSV empty": (files(**{"o__csv": CSV_HEAD})("analyze", "{0}"), BAD_INPUT, "o.csv"),
        "analyze: CSV not UTF-8": (
            files(**{"o__csv": b"model,task,run,damaged\n\xff\xfe,t,1,true\n"})("analyze", "{0}"),
            BAD_INPUT,
            "o.csv",
        ),
        "analyze: negative bootstrap": (
            command("analyze", "{tmp}", "--bootstrap", "-1"),
            USAGE,
            "--bootstrap",
        ),
        "export: not a results dir": (
            command("export", "damages", "{tmp}", "-o", "{tmp}/d.csv"),
            BAD_INPUT,
            "no runs.jsonl here",
        ),
        "export: no output named": (command("export", "damages", "{tmp}"), USAGE, "--output"),
        "export: unknown table": (command("export", "everything", "{tmp}"), USAGE, "everything"),
        # required-k
        "required-k: p above 1": (command("required-k", "--p", "2"), USAGE, "--p must lie in [0, 1]"),
        "required-k: x above n": (command("required-k", "--x", "3", "--n", "2"), USAGE, "0 <= x <= n"),
        "required-k: alpha above 1": (
            command("required-k", "--p", "0.1", "--alpha", "1.5"),
            USAGE,
            "strictly",
        ),
        "required-k: alpha and target": (
            command("required-k", "--p", "0.1", "--alpha", "0.1", "--target", "0.9"),
            USAGE,
            "not both",
        ),
        "required-k: nothing given": (command("required-k"), USAGE, "give exactly one of"),
        "required-k: confidence 1": (
            command("required-k", "--p", "0.1", "--confidence", "1"),
            USAGE,
            "strictly",
        ),
        # label and spec
        "label: dump missing": (
            command("label", "{tmp}/s.dmg", "{tmp}/a.gz", "{tmp}/b.gz"),
            BAD_INPUT,
            "no such",
        ),
        "label: header without tables": (
            label_case('{"format":"agentrel-dump/1"}\n'),
            BAD_INPUT,
            "no 'tables' mapping",
        ),
        "label: kinds shorter than columns": (
            label_case(GOOD_DUMP.replace('"kinds":["int","text"]', '"kinds":["int"]')),
            BAD_INPUT,
            "before.jsonl.gz:1",
        ),
        "label: key names a missing column": (
            label_case(GOOD_DUMP.replace('"primary_key":["id"]', '"primary_key":["nope"]')),
            BAD_INPUT,
            "before.jsonl.gz:1",
        ),
        "label: key disagrees with its row": (
            label_case(DUMP_HEAD + '\n["t",[2],[1,"a"]]\n'),
            BAD_INPUT,
            "before.jsonl.gz:2",
        ),
        "label: a key twice": (
            label_case(DUMP_HEAD + '\n["t",[1],[1,"a"]]\n["t",[1],[1,"b"]]\n'),
            BAD_INPUT,
            "before.jsonl.gz:3",
        ),
        "label: not gzip": (
            files(b__jsonl__gz="x", a__jsonl__gz=GOOD_DUMP, s__dmg=SPEC)("label", "{2}", "{0}", "{1}"),
            BAD_INPUT,
            "b.jsonl.gz",
        ),
        "label: bad param": (
            files(a__jsonl__gz=GOOD_DUMP, s__dmg=SPEC)("label", "{1}", "{0}", "{0}", "--param", "nope"),
            USAGE,
            "expected NAME=VALUE",
        ),
        # sandbox
        "sandbox: unknown backend": (
            command("sandbox", "status", "--backend", "cloud"),
            ENVIRONMENT,
            "cloud",
        ),
        "sandbox: scale zero": (command("sandbox", "up", "--scale", "0"), USAGE, "--scale"),
        "sandbox: destroy docker": (
            command("sandbox", "destroy", "--backend", "docker"),
            USAGE,
            "local cluster",
        ),
        "sandbox: unknown command": (command("sandbox", "explode"), USAGE, "No such command"),
        # mcp serve
        "mcp: port out of range": (
            command("mcp", "serve", "--task", TASK, "--port", "70000"),
            USAGE,
            "--port",
        ),
        "mcp: unknown transport": (
            command("mcp", "serve", "--task", TASK, "--transport", "pigeon"),
            USAGE,
            "pigeon",
        ),
        "mcp: remote host": (
            command("mcp", "serve", "--task", TASK, "--transport", "http", "--host", "0.0.0.0"),
            USAGE,
            "is not loopback",
        ),
        "mcp: remote without token": (
            command(
                "mcp", "serve", "--task", TASK, "--transport", "http", "--host", "0.0.0.0", "--allow-remote"
            ),
            USAGE,
            "token",
        ),
        "mcp: unknown task": (command("mcp", "serve", "--task", "no-such-task"), USAGE, "no task matches"),
        "mcp: adversarial": (
            command("mcp", "serve", "--task", TASK, "--condition", "adversarial"),
            USAGE,
            "adversarial",
        ),
        # fault schedules: one line, exit 3, before any run
        "faults unknown schedule": (audit("--faults", "chaos"), BAD_INPUT, "not a built-in schedule"),
        "faults file missing": (audit("--faults", "{tmp}/s.yaml"), BAD_INPUT, "no such file"),
        **{
            f"faults {name}": (
                files(s__yaml=text)(
                    "audit", "--k", "1", "--tasks", TASK, "--faults", "{0}", "--results", "{tmp}/r"
                ),
                BAD_INPUT,
                fragment,
            )
            for name, text, fragment in [
                ("not yaml", "name: s\nfaults: [\n", "not valid YAML"),
                ("unknown kind", FAULT.format(kind="meteor", on="call, n: 1"), "field faults[0].kind"),
                ("unknown trigger", FAULT.format(kind="kill", on="sometime"), "field faults[0].trigger.when"),
                ("call without n", FAULT.format(kind="kill", on="call"), "field faults[0].trigger"),
                (
                    "n without call",
                    FAULT.format(kind="kill", on="first_irreversible_call, n: 2"),
                    "field faults[0].trigger",
                ),
                (
                    "trigger never fires",
                    FAULT.format(kind="lost_response", on="first_irreversible_call"),
                    "can fire on none of this audit's tasks",
                ),
                (
                    "trigger never fires on a named task",
                    FAULT.format(kind="lost_response", on="first_irreversible_call")
                    + f"    tasks: [{TASK}]\n",
                    f"can never fire on task {TASK}",
                ),
                (
                    "duplicate ids",
                    "name: s\nfaults:\n  - {id: a, kind: kill, trigger: {when: call, n: 1}}\n"
                    "  - {id: a, kind: restart, trigger: {when: call, n: 2}}\n",
                    "fault ids must be unique",
                ),
                (
                    "seconds on a kill",
                    FAULT.format(kind="kill", on="call, n: 1") + "    seconds: 2\n",
                    "partition only",
                ),
            ]
        },
        # audit conditions and prices
        "condition unknown": (audit("--condition", "stormy"), USAGE, "not a built-in condition"),
        "condition file missing": (audit("--condition", "{tmp}/c.yaml"), USAGE, "no such file"),
        "condition rate above 1": (
            files(**{"c__yaml": "name: x\nnoisy: {failure_rate: 2}\n"})(
                "audit", "--k", "1", "--tasks", TASK, "--condition", "{0}", "--results", "{tmp}/r"
            ),
            BAD_INPUT,
            "field noisy.failure_rate",
        ),
        "condition unknown fault": (
            files(**{"c__yaml": "name: x\nnoisy: {faults: [meteor]}\n"})(
                "audit", "--k", "1", "--tasks", TASK, "--condition", "{0}", "--results", "{tmp}/r"
            ),
            BAD_INPUT,
            "field noisy.faults[0]",
        ),
        "condition names clash": (
            files(**{"c__yaml": "name: x\n", "d__yaml": "name: x\nnoisy: {failure_rate: 0.1}\n"})(
                "audit",
                "--k",
                "1",
                "--tasks",
                TASK,
                "-c",
                "{0}",
                "-c",
                "{1}",
                "--results",
                "{tmp}/r",
            ),
            USAGE,
            "same name",
        ),
        "prices not YAML": (
            files(**{"p__yaml": "a: [b\n"})("audit", "--k", "1", "--tasks", TASK, "--prices", "{0}"),
            BAD_INPUT,
            "p.yaml",
        ),
        "prices a list": (
            files(p__yaml="- openai/x\n")("audit", "--k", "1", "--tasks", TASK, "--prices", "{0}"),
            BAD_INPUT,
            "expected a mapping of model name",
        ),
        "prices bad entry": (
            files(**{"p__yaml": "openai/x: {input_per_mtok: cheap}\n"})(
                "audit", "--k", "1", "--tasks", TASK, "--prices", "{0}"
            ),
            BAD_INPUT,
            "p.yaml",
        ),
        # tasks
        "tasks prove unknown": (command("tasks", "prove", "no-such-task"), USAGE, "no task matches"),
        "tasks validate unknown": (command("tasks", "validate", "no-such-task"), USAGE, "no task matches"),
        # task files read through a suite copy
        "task: unknown lever": (
            suite_with(edit_task("lever: ", "lever: vibes\nx_lever: ")),
            BAD_INPUT,
            "field",
        ),
        "task: optimal steps zero": (
            suite_with(lambda s: _sub(task_file(s), r"optimal_steps: \d+", "optimal_steps: 0")),
            BAD_INPUT,
            "field optimal_steps",
        ),
        "task: unknown field": (
            suite_with(edit_task("lever:", "surprise: 1\nlever:")),
            BAD_INPUT,
            "surprise",
        ),
        "task: reference unknown script": (
            suite_with(lambda s: _sub(task_file(s), r"reference: \{", "reference: {ghost: 0.1, ")),
            BAD_INPUT,
            "unknown script",
        ),
        "task: reference above 1": (
            suite_with(lambda s: _sub(task_file(s), r"reference: \{", "reference: {oracle: 0.99, ")),
            BAD_INPUT,
            "sum to at most 1",
        ),
        "task: id not the file name": (
            suite_with(edit_task(f"id: {TASK}", "id: other-id")),
            BAD_INPUT,
            "file name",
        ),
        "task: not YAML": (suite_with(edit_task("lever:", "lever: [\nx:")), BAD_INPUT, "not valid YAML"),
        "task: not a mapping": (
            suite_with(lambda s: task_file(s).write_text("- a\n- b\n")),
            BAD_INPUT,
            "mapping",
        ),
        "task: blind retry above 1": (
            suite_with(edit_task("lever:", "reference_blind_retry: 1.5\nlever:")),
            BAD_INPUT,
            "reference_blind_retry",
        ),
        "task: bad id shape": (
            suite_with(edit_task(f"id: {TASK}", "id: Itsm_Cab")),
            BAD_INPUT,
            "lower-case",
        ),
    }
)


def _sub(path: Path, pattern: str, replacement: str) -> None:
    import re

    text = path.read_text()
    changed = re.sub(pattern, replacement, text, count=1)
    assert changed != text, pattern
    path.write_text(changed)


def _empty_tools(text: str) -> str:
    start = text.index("tools:")
    return text[:start] + "tools: []\n" + text[text.index("fixture_sql:") :]


AGENTREL = [sys.executable, "-m", "agentrel.harness.cli"]
ENV = dict(os.environ)


def run_cli(args: list[str], env: dict[str, str], monkeypatch, capsys) -> tuple[int, str]:
    """The real entry point, in-process (the corpus is large): exit code and stderr."""
    from agentrel.harness.cli.main import main

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(sys, "argv", ["agentrel", *args])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main()
    code = exited.value.code
    return (code if isinstance(code, int) else 1), capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_one_line_with_its_exit_code(tmp_path, monkeypatch, capsys, name):
    setup, code, fragment = CASES[name]
    args, env = setup(tmp_path)
    runs = tmp_path / "r" / "runs.jsonl"
    before = runs.read_bytes() if runs.exists() else None
    got, stderr = run_cli(args, env, monkeypatch, capsys)
    lines = [line for line in stderr.strip().splitlines() if not line.startswith("audit ")]
    assert "Traceback" not in stderr, stderr
    assert got == code, (got, stderr)
    # One error line, the last; before it only progress notices of slow work already under way (a
    # template being built when its fixture turns out bad), never a second error or a traceback.
    errors = [line for line in lines if line.startswith("agentrel: error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], stderr
    assert all(" error" not in line.lower() for line in lines[:-1]), stderr
    assert fragment in " ".join(errors[0].split()), errors[0]
    # Recorded runs are never lost or rewritten by a refused invocation.
    assert (runs.read_bytes() if runs.exists() else None) == before


def test_the_corpus_holds_at_least_the_probes_93_inputs():
    assert len(CASES) >= 93


def test_one_case_through_a_real_process(tmp_path):
    """The in-process corpus and the installed entry point agree."""
    proc = subprocess.run(
        [*AGENTREL, "audit", "--temperature", "nan"], capture_output=True, text=True, env=ENV, timeout=120
    )
    assert proc.returncode == USAGE and proc.stderr.count("\n") == 1 and "--temperature" in proc.stderr
