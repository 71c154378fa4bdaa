"""The audit end to end: determinism, resume after kill -9, protocol guard, one-line config errors."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.run.audit import audit

TASK = "itsm-cab-window"
REPO = Path(__file__).resolve().parents[2]
K_CRASH = 40  # enough runs that a kill after the third record always lands mid-audit


def said_beside_progress(stderr: str) -> list[str]:
    """Stderr's lines but the audit's first notice (where the results and state are), said before the
    protocol is checked: a refusal found after that slow work still gets one line of its own."""
    return [line for line in stderr.strip().splitlines() if not line.startswith("agentrel: auditing into ")]


def agentrel(*args, env=None, **kw):
    return subprocess.run(
        [sys.executable, "-m", "agentrel.harness.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
        **kw,
    )


def audit_task(sandbox, results, k, model="reference/stochastic", concurrency=2):
    return audit(
        models=[model],
        k=k,
        tasks=[TASK],
        concurrency=concurrency,
        results=results,
        sandbox=sandbox,
        show_progress=False,
    )


def verdicts(path):
    return {
        r.run_id: (r.verdict.outcome, r.verdict.sub_label, r.script, r.after_digest)
        for r in ResultsDir(path).records()
    }


def test_reference_agent_audits_are_deterministic_and_resume_skips_finished_runs(sandbox, tmp_path):
    first = audit_task(sandbox, tmp_path / "a", k=6, concurrency=3)
    second = audit_task(sandbox, tmp_path / "b", k=6, concurrency=3)
    assert first.protocol_hash == second.protocol_hash
    assert verdicts(tmp_path / "a") == verdicts(tmp_path / "b")
    assert len(verdicts(tmp_path / "a")) == 6
    again = audit_task(sandbox, tmp_path / "a", k=6, concurrency=3)
    assert again.skipped == 6 and again.new == []
    scripts = {v[2] for v in verdicts(tmp_path / "a").values()}
    assert "oracle" in scripts  # the reference agent mixes scripts by seed


def test_kill_minus_9_mid_audit_then_rerun_loses_and_duplicates_nothing(sandbox, tmp_path):
    reference = tmp_path / "uninterrupted"
    audit_task(sandbox, reference, k=K_CRASH)
    crashed = tmp_path / "crashed"
    args = [
        "audit",
        "--model",
        "reference/stochastic",
        "--k",
        str(K_CRASH),
        "--tasks",
        TASK,
        "-j",
        "2",
        "--results",
        str(crashed),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentrel.harness.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    )
    runs = crashed / "runs.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not runs.exists() or runs.read_bytes().count(b"\n") < 3):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = runs.read_bytes().count(b"\n")
    assert 3 <= partial < K_CRASH, "the kill must land mid-audit"
    # A torn tail, as a crash mid-write could leave, must not survive the resume either.
    with open(runs, "ab") as fh:
        fh.write(b'{"run_id": "torn')
    rerun = agentrel(*args)
    assert rerun.returncode == 0, rerun.stderr
    lines = [json.loads(line) for line in runs.read_text().splitlines()]
    ids = [line["run_id"] for line in lines]
    assert len(ids) == len(set(ids)) == K_CRASH
    assert verdicts(crashed) == verdicts(reference)
    assert not [n for n in sandbox.dbs.names("agentrel_run_") if f"_{proc.pid}_" in n]
    # Each transcript is written before its record: every record's transcript is there, byte for byte.
    for record in ResultsDir(crashed).records():
        data = (crashed / "transcripts" / f"{record.run_id}.json").read_bytes()
        assert hashlib.sha256(data).hexdigest() == record.transcript_digest


def test_tasks_and_models_repeat_and_take_comma_lists(sandbox, tmp_path):
    results = tmp_path / "r"
    r = agentrel(
        "audit",
        "-m",
        "scripted/oracle",
        "-m",
        "scripted/noop,scripted/oracle",
        "--k",
        "1",
        "--tasks",
        TASK,
        "--tasks",
        "csm-goodwill-cap,itsm-cab-window",
        "--results",
        str(results),
        "--no-report",
    )
    assert r.returncode == 0, r.stderr
    cells = {(rec.model, rec.task) for rec in ResultsDir(results).records()}
    assert cells == {(m, t) for m in ("scripted/oracle", "scripted/noop") for t in (TASK, "csm-goodwill-cap")}


def test_changed_protocol_is_refused_with_one_line(sandbox, tmp_path):
    results = tmp_path / "r"
    audit_task(sandbox, results, k=1, model="scripted/oracle")
    result = agentrel(
        "audit", "--model", "scripted/oracle", "--k", "2", "--tasks", TASK, "--results", str(results)
    )
    assert result.returncode == 2
    assert (
        len(said_beside_progress(result.stderr)) == 1 and "the manifest it was planned with" in result.stderr
    )
    assert "changed: k" in result.stderr
    assert result.stderr.count("use another --results directory") == 1  # the advice, once


def test_records_carry_the_protocol_root_and_other_code_may_not_add_to_them(sandbox, tmp_path):
    """protocol.json names the identity the runs were recorded under; a resume under another evaluator
    (or a directory from before the file) is refused in one line, and the recorded runs stay."""
    from agentrel.harness.protocol.identity import identity_of

    results = tmp_path / "r"
    outcome = audit_task(sandbox, results, k=1, model="scripted/oracle")
    identity = identity_of(json.loads((results / "manifest.json").read_bytes()))
    bound = json.loads((results / "protocol.json").read_bytes())
    assert bound["protocol_hash"] == identity.protocol_hash == outcome.protocol_hash
    assert {r.protocol_hash for r in ResultsDir(results).records()} == {identity.protocol_hash}
    runs = (results / "runs.jsonl").read_bytes()

    other_code = dict(bound, evaluator_digest="e" * 64, protocol_hash="f" * 64)
    (results / "protocol.json").write_text(json.dumps(other_code))
    args = ("audit", "--model", "scripted/oracle", "--k", "1", "--tasks", TASK, "--results", str(results))
    refused = agentrel(*args)
    assert refused.returncode == 2 and len(said_beside_progress(refused.stderr)) == 1, refused.stderr
    assert "differs: evaluator_digest" in refused.stderr
    (results / "protocol.json").unlink()
    refused = agentrel(*args)
    assert refused.returncode == 2 and "recorded without a protocol.json" in refused.stderr
    assert (results / "runs.jsonl").read_bytes() == runs

    planned = tmp_path / "planned"  # no runs yet: planning again under other code rebinds it
    plan = dict(models=["scripted/oracle"], k=1, tasks=[TASK], concurrency=1, show_progress=False)
    audit(**plan, results=planned, sandbox=sandbox, plan=True)
    (planned / "protocol.json").write_text(json.dumps(other_code))
    audit_task(sandbox, planned, k=1, model="scripted/oracle")
    assert json.loads((planned / "protocol.json").read_bytes())["protocol_hash"] == identity.protocol_hash


def test_config_errors_stop_before_any_run(sandbox, tmp_path):
    env = {k: "" for k in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY")}
    cases = [
        (["--model", "openai/gpt-4o"], env, "set OPENAI_API_KEY"),
        (["--model", "anthropic/claude-x"], env, "set ANTHROPIC_API_KEY"),
        (["--model", "mistral/large"], {}, "unknown agent prefix"),
        (
            ["--model", "openai/x"],
            {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "k"},
            "cannot reach",
        ),
    ]
    for extra, e, fragment in cases:
        results = tmp_path / fragment.replace(" ", "_")
        r = agentrel("audit", *extra, "--k", "1", "--tasks", TASK, "--results", str(results), env=e)
        assert r.returncode != 0
        assert len(r.stderr.strip().splitlines()) == 1 and fragment in r.stderr, r.stderr
        assert not (results / "runs.jsonl").exists()


def test_ctrl_c_stops_cleanly_with_whole_records_and_no_run_databases(sandbox, tmp_path):
    results = tmp_path / "interrupted"
    args = [
        "audit",
        "--model",
        "reference/stochastic",
        "--k",
        "400",
        "--tasks",
        TASK,
        "-j",
        "3",
        "--results",
        str(results),
        "--no-report",
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentrel.harness.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
        # A test run started in the background (a CI step, `make test &`) inherits SIGINT ignored, as
        # every background job of a shell does, and the audit rightly keeps an ignored SIGINT ignored:
        # the signal was then lost and the audit ran to its end (exit 0, the flake). The child gets the
        # default disposition, as a foreground audit has.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    runs = results / "runs.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not runs.exists() or runs.read_bytes().count(b"\n") < 5):
        time.sleep(0.05)
    # 400 runs cannot finish before five are recorded: the signal meets a running audit.
    assert proc.poll() is None, "the audit ended before the signal"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "interrupted" in stderr and "Traceback" not in stderr
    data = runs.read_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") < 400
    assert all(json.loads(line)["verdict"] for line in data.splitlines())
    assert not [n for n in sandbox.dbs.names("agentrel_run_") if f"_{proc.pid}_" in n]


def test_a_spec_naming_an_unknown_table_stops_the_audit_before_any_run(sandbox, tmp_path):
    import shutil

    suite = tmp_path / "suite"
    (suite / "tasks" / "itsm").mkdir(parents=True)
    (suite / "damage_specs").mkdir()
    shutil.copy(REPO / "tasks" / "itsm" / f"{TASK}.yaml", suite / "tasks" / "itsm")
    spec = (REPO / "damage_specs" / f"{TASK}.dmg").read_text()
    (suite / "damage_specs" / f"{TASK}.dmg").write_text(
        spec.replace("insert cab_approvals", "insert cab_aprovals")
    )
    results = tmp_path / "r"
    r = agentrel(
        "audit",
        "--k",
        "2",
        "--tasks",
        TASK,
        "--results",
        str(results),
        env={"AGENTREL_SUITE_DIR": str(suite)},
    )
    assert r.returncode == 3, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "cab_aprovals" in lines[0] and f"tasks/itsm/{TASK}.yaml" in lines[0], lines
    assert not (results / "runs.jsonl").exists()


def test_the_same_audit_on_two_environments_gets_two_default_directories():
    """The README's two τ² audits, run one after the other without --results, once shared a directory
    and the second was refused as a changed protocol."""
    from agentrel.harness.run.request import AuditRequest

    asked = AuditRequest(models=("reference/stochastic",), k=8)
    assert asked.results_dir("agentrel-enterprise") == Path("results/reference_stochastic-k8")
    dirs = {asked.results_dir(env) for env in ("tau2-airline", "tau2-retail")}
    # The request's own environment wins over the sandbox's it is given.
    assert AuditRequest(environment="tau2-airline", models=("reference/stochastic",), k=8).results_dir(
        "agentrel-enterprise"
    ) == Path("results/tau2-airline-reference_stochastic-k8")
    assert dirs == {
        Path("results/tau2-airline-reference_stochastic-k8"),
        Path("results/tau2-retail-reference_stochastic-k8"),
    }
