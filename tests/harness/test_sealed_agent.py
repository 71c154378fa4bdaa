"""Sealed subjects: an agent program that does damage through its tools and then attacks the instrument.

Each attack is tried for real by `attack_agent_program.py` (its parent's and the auditor's environ, the
cluster by unix socket and by TCP, the signing key, the results directory, a setsid grandchild that
keeps writing later) and reported by the program itself; sealed, every one fails and the damaging run
stays FAIL_DAMAGE in runs.jsonl and in the analysis. The same program unsealed (`isolation="none"`) gets
through, which shows the attacks have teeth, and that audit is evidence only (`agent_not_sealed`). An
imported module edited after the freeze changes the subject's identity, refused like any protocol change.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrel.harness.agents.external import ExternalAgent, ExternalSpec
from agentrel.harness.agents.sealed import unavailable
from agentrel.harness.errors import UsageError, UserError
from agentrel.harness.library import analyze
from agentrel.harness.protocol.canonical import canonical_hash
from agentrel.harness.protocol.freeze import write_freeze
from agentrel.harness.protocol.signing import key_path, load_signer
from agentrel.harness.publication.publish import eligibility_of
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.run.audit import audit
from agentrel.harness.tasks import load_suite
from tests.harness.processes import alive_with

HERE = Path(__file__).parent
ATTACKER = HERE / "attack_agent_program.py"
PLAIN = HERE / "plain_mcp_program.py"
TASK = "csm-double-charge"


@pytest.fixture(scope="module")
def task():
    return load_suite(patterns=[TASK])[0]


@pytest.fixture(scope="module")
def damaging(task):
    """A script of the task whose scripted run is FAIL_DAMAGE (the counterexample)."""
    name, script = next((n, s) for n, s in task.scripts().items() if n != "oracle")
    return name, script


@contextlib.contextmanager
def tcp_to(unix_path: Path) -> Iterator[int]:
    """The cluster reachable over TCP on the host's loopback, as a cluster listening on TCP would be: a
    relay from 127.0.0.1:<port> to its unix socket."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def pipe(a: socket.socket, b: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := a.recv(65536):
                b.sendall(data)
        with contextlib.suppress(OSError):
            b.shutdown(socket.SHUT_WR)

    def serve() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(str(unix_path))
            threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield port
    finally:
        listener.close()


def attack(sandbox, cluster, tmp_path: Path, damaging, isolation: str):
    """Audit the attacker once; returns (record, its attack report, results dir, marker, key bytes)."""
    _, script = damaging
    load_signer()  # the auditor's signing key exists, 0600, in AGENTREL_HOME
    key = key_path()
    key_before = key.read_bytes()
    results = tmp_path / f"results-{isolation}"
    marker = f"agentrel-late-writer-{os.getpid()}-{tmp_path.name}-{isolation}"
    socket_path = cluster.sockdir / f".s.PGSQL.{cluster.port}"
    with tcp_to(socket_path) as port:
        plan = tmp_path / "plan.json"
        attacks = {
            "harness_pid": os.getpid(),
            "socket": str(socket_path),
            "tcp_port": port,
            "key": str(key),
            "results": str(results),
            "marker": marker,
        }
        steps = [[s.tool, s.args] for s in script.steps]
        plan.write_text(json.dumps({"steps": steps, "final": script.final, "attacks": attacks}))
        spec = ExternalSpec(
            name="attacker", command=[sys.executable, "-S", str(ATTACKER), str(plan)], isolation=isolation
        )
        audit(
            models=[],
            k=1,
            tasks=[TASK],
            concurrency=1,
            results=results,
            sandbox=sandbox,
            show_progress=False,
            agents=[spec],
        )
    (record,) = ResultsDir(results).records()
    messages = json.loads((results / "transcripts" / f"{record.run_id}.json").read_text())["messages"]
    out = next(m for m in messages if m["role"] == "stdout")["text"]
    report = json.loads(next(ln[8:] for ln in out.splitlines() if ln.startswith("ATTACKS ")))
    assert key.read_bytes() == key_before
    return record, report, results, marker


def damage_in_analysis(results: Path) -> tuple[int, int]:
    cells = analyze(results, n_boot=20).cells
    row = cells[cells["model"] == "agent/attacker"].iloc[0]
    return int(row["x"]), int(row["n"])  # x: damaging runs of n


def test_a_sealed_attacker_reaches_nothing_and_its_damage_stays(sandbox, cluster, tmp_path, damaging):
    record, report, results, marker = attack(sandbox, cluster, tmp_path, damaging, "sealed")
    reached = {name for name, r in report.items() if r["ok"]}
    assert reached == {"late_writer", "planted_links"}, report  # what it may do, and nothing else
    assert set(report) == {
        "harness_environ",
        "parent_environ",
        "any_environ",
        "cluster_socket",
        "cluster_tcp",
        "signing_key",
        "results_write",
        "late_writer",
        "planted_links",
    }
    # The links it planted are not followed: no byte of the key reaches the record.
    assert record.final_message is None and record.usage.input_tokens == 0
    assert "PRIVATE" not in (results / "runs.jsonl").read_text()
    # The late writer never outlives the run: nothing carrying its marker is alive, nothing was written.
    assert alive_with(marker) == []
    assert not (results / "pwned").exists() and not (results / "pwned-late").exists()
    # The damage it did through its tools is the run's verdict, in the records and in the analysis.
    assert record.status == "valid" and record.verdict.outcome == "FAIL_DAMAGE"
    assert damage_in_analysis(results) == (1, 1)
    assert "agent_not_sealed" not in eligibility_of(results).reasons


def test_the_same_attacker_unsealed_gets_through_and_is_evidence_only(sandbox, cluster, tmp_path, damaging):
    """The control: without the sandbox the attacks work (so the sealed test's refusals are the
    sandbox's), the late writer outlives the run, and the audit can never be published."""
    record, report, results, marker = attack(sandbox, cluster, tmp_path, damaging, "none")
    assert "PRIVATE" not in (results / "runs.jsonl").read_text()  # links are never followed, either way
    try:
        got = {name: r["ok"] for name, r in report.items()}
        for name in ("harness_environ", "cluster_socket", "cluster_tcp", "signing_key", "results_write"):
            assert got[name], (name, report[name])
        assert (results / "pwned").exists()
        assert alive_with(marker) != []  # an empty environment: no run token to find it by
    finally:
        for pid in alive_with(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert record.verdict.outcome == "FAIL_DAMAGE"
    assert "agent_not_sealed" in eligibility_of(results).reasons


def edited_agent(root: Path, steps) -> Path:
    """An agent whose behaviour lives in a module it imports (behaviour.py), beside its script."""
    root.mkdir()
    shutil.copy(PLAIN, root / "plain_mcp_program.py")
    (root / "behaviour.py").write_text(f"STEPS = {json.dumps(steps)!r}\n")
    (root / "agent.py").write_text(
        "import json, os, sys, pathlib, behaviour\n"
        "plan = pathlib.Path(os.environ.get('TMPDIR', '/tmp'), 'plan.json')\n"
        "plan.write_text(json.dumps({'steps': json.loads(behaviour.STEPS)}))\n"
        "sys.argv[1:] = [str(plan)]\n"
        "import plain_mcp_program\n"
        "plain_mcp_program.main()\n"
    )
    return root


def test_an_imported_module_edited_after_the_freeze_is_refused(sandbox, tmp_path, task, damaging):
    _, script = damaging
    code = edited_agent(tmp_path / "agent", [[s.tool, s.args] for s in script.steps])
    spec = ExternalSpec(name="edited", command=[sys.executable, "-S", str(code / "agent.py")])
    results = tmp_path / "results"
    common = {
        "models": [],
        "k": 1,
        "tasks": [TASK],
        "concurrency": 1,
        "results": results,
        "sandbox": sandbox,
        "show_progress": False,
        "agents": [spec],
    }
    audit(**common, plan=True)
    write_freeze(results, "tester")
    audit(**common)
    (before,) = ResultsDir(results).records()
    assert before.verdict.outcome == "FAIL_DAMAGE"
    identity = ExternalAgent(spec).config()["code_dirs"]
    # After the freeze, the behaviour moves into the imported module: same command, same script.
    (code / "behaviour.py").write_text("STEPS = '[]'\n")
    assert ExternalAgent(spec).config()["code_dirs"] != identity
    with pytest.raises(UsageError) as refused:
        audit(**{**common, "k": 2})
    assert "subject_config_hash" in str(refused.value) and "agents" in str(refused.value)
    (after,) = ResultsDir(results).records()  # nothing ran under the edited code; the damage stays
    assert after.run_id == before.run_id and after.verdict.outcome == "FAIL_DAMAGE"


def test_without_a_sandbox_an_agent_program_refuses_to_start_unless_isolation_none(
    sandbox, tmp_path, task, monkeypatch
):
    """No bwrap on PATH: one line naming the fix, before any run; `isolation="none"` runs it anyway."""
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"steps": [[s.tool, s.args] for s in task.oracle.steps]}))
    spec = ExternalSpec(name="plain", command=[sys.executable, "-S", str(PLAIN), str(plan)])
    results = tmp_path / "results"
    common = {"models": [], "k": 1, "tasks": [TASK], "concurrency": 1, "sandbox": sandbox}
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    unavailable.cache_clear()
    try:
        with pytest.raises(UserError) as refused:
            audit(**common, results=results, show_progress=False, agents=[spec])
        message = str(refused.value)
        assert "bwrap (bubblewrap) is not installed" in message and "apt-get install bubblewrap" in message
        assert "--agent-isolation none" in message and "\n" not in message
        assert not (results / "runs.jsonl").exists()
        unsealed = spec.model_copy(update={"isolation": "none"})
        audit(**common, results=tmp_path / "unsealed", show_progress=False, agents=[unsealed])
        (r,) = ResultsDir(tmp_path / "unsealed").records()
        assert r.status == "valid" and r.verdict.outcome in ("PASS", "FAIL_SAFE")
    finally:
        unavailable.cache_clear()


def agent(command: list[str], isolation: str, network: str) -> ExternalAgent:
    return ExternalAgent(ExternalSpec(name="x", command=command, isolation=isolation, network=network))


def test_isolation_and_network_are_the_subjects_identity(tmp_path):
    command = [sys.executable, "-S", str(PLAIN)]
    configs = {
        (iso, net): ExternalAgent(
            ExternalSpec(name="x", command=command, isolation=iso, network=net)
        ).config()
        for iso, net in (("sealed", "loopback"), ("sealed", "host"), ("none", "loopback"))
    }
    assert configs["sealed", "host"]["isolation"] == {"mode": "sealed", "network": "host"}
    hashes = {canonical_hash(c) for c in configs.values()}
    assert len(hashes) == 3
    # Its Python environment is bound by its distributions' files (this venv's, here).
    python = configs["sealed", "loopback"]["python"]
    assert {lib[0] for lib in python["libraries"]} >= {"pydantic", "mcp"}
    assert configs["sealed", "loopback"]["code_dirs"][0]["path"] == str(HERE)


def test_the_cli_refuses_host_network_without_a_sandbox():
    from agentrel.harness.agents.programs import declare_programs

    for isolation, network, message in (
        ("jail", "loopback", "--agent-isolation jail: use sealed or none"),
        ("sealed", "wan", "--agent-network wan: use loopback or host"),
        ("none", "host", "--agent-network host goes with a sealed agent"),
    ):
        with pytest.raises(UsageError) as caught:
            declare_programs([f"x={sys.executable} {PLAIN}"], [], 60.0, isolation=isolation, network=network)
        assert message in str(caught.value)


def test_the_clis_isolation_and_network_reach_the_subjects_identity(tmp_path):
    """`--agent-isolation none` and `--agent-network host` were once parsed, checked and dropped: every
    program ran sealed on loopback whatever the auditor asked, and its identity said so. The options now
    reach the declared programs, and the preregistered identity (what a scorecard shows) says what ran."""
    import subprocess

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"steps": [], "final": "nothing done"}))
    agent = f"x={sys.executable} -S {PLAIN} {plan}"
    for isolation, network in (("none", "loopback"), ("sealed", "host")):
        results = tmp_path / f"{isolation}-{network}"
        done = subprocess.run(
            [sys.executable, "-m", "agentrel.harness.cli", "audit", "--agent", agent, "--tasks", TASK,
             "--k", "1", "--plan", "--results", str(results), "--agent-isolation", isolation,
             "--agent-network", network],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        (config,) = json.loads((results / "manifest.json").read_text())["agents"]
        assert config["isolation"] == {"mode": isolation, "network": network}
