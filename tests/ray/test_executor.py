"""The Ray executor on a local Ray instance (2 actors): the same runs as the local executor, nothing lost
when an actor dies mid-audit, and resume after the driver is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from agentrel.harness.executors import Executor
from agentrel.harness.executors.ray import RayExecutor, ray_executor
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.run.audit import audit
from tests.ray.agents import register
from tests.ray.conftest import WORKERS

TASKS = ["itsm-cab-window", "csm-double-charge", "itsm-prod-db-access"]
REPO = Path(__file__).resolve().parents[2]


def outcomes(path: Path) -> set[tuple[str, str, str | None]]:
    return {
        (r.run_id, r.verdict.outcome if r.verdict else "-", r.after_digest)
        for r in ResultsDir(path).records()
    }


class Capture:
    """An executor factory that keeps the executor it made, so a test can watch and hurt it."""

    def __init__(self, **kw: object) -> None:
        self.factory = ray_executor(**kw)  # type: ignore[arg-type]
        self.made: RayExecutor | None = None

    def __call__(self, recipe, ctx, concurrency) -> Executor:  # type: ignore[no-untyped-def]
        self.made = self.factory(recipe, ctx, concurrency)  # type: ignore[assignment]
        return self.made  # type: ignore[return-value]


def run(sandbox, results: Path, executor=None, model="reference/stochastic", tasks=TASKS, k=2):  # type: ignore[no-untyped-def]
    kw = {"executor_factory": executor} if executor is not None else {}
    return audit(
        models=[model],
        k=k,
        tasks=tasks,
        concurrency=2,
        results=results,
        sandbox=sandbox,
        show_progress=False,
        **kw,
    )


def test_ray_and_local_executors_give_the_same_runs(sandbox, tmp_path, ray_address, slot_homes):
    local = run(sandbox, tmp_path / "local")
    capture = Capture(workers=WORKERS, home=slot_homes)
    remote = run(sandbox, tmp_path / "ray", executor=capture)
    assert remote.protocol_hash == local.protocol_hash
    assert len(remote.new) == len(TASKS) * 2
    assert outcomes(tmp_path / "ray") == outcomes(tmp_path / "local")
    assert {o for _, o, _ in outcomes(tmp_path / "ray")} >= {"PASS", "FAIL_DAMAGE"}
    facts = capture.made.facts() if capture.made else []
    assert sorted(f.slot for f in facts) == [0, 1] and len({f.actor_id for f in facts}) == 2
    assert all(f.node_ip == "127.0.0.1" and f.postgres_version.startswith("PostgreSQL") for f in facts)
    assert all(f.home and Path(f.home).parent == slot_homes for f in facts)
    # The slots' facts are recorded beside the execution environment, outside the protocol hash.
    noted = [
        json.loads(line) for line in (tmp_path / "ray" / "execution_slots.jsonl").read_text().splitlines()
    ]
    assert sorted(n["actor_id"] for n in noted) == sorted(f.actor_id for f in facts)
    assert not (tmp_path / "local" / "execution_slots.jsonl").exists()


def test_killing_an_actor_mid_audit_loses_no_run(sandbox, tmp_path, ray_address, slot_homes):
    register()
    model, tasks, k = "slow/0.4", TASKS[:2], 4
    reference = run(sandbox, tmp_path / "local", model=model, tasks=tasks, k=k)
    capture = Capture(workers=WORKERS, home=slot_homes, setup=register)
    killed: list[str] = []

    def kill_slot_0_mid_run() -> None:
        import ray

        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            ex = capture.made
            if ex is not None and ex.in_flight().get(0, 0) > 0 and ex.actor(0) is not None:
                time.sleep(0.3)  # into the run: past the clone, inside the agent's pauses
                killed.append(ex.facts()[0].actor_id)
                ray.kill(ex.actor(0), no_restart=True)
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_slot_0_mid_run, daemon=True)
    killer.start()
    out = run(sandbox, tmp_path / "ray", executor=capture, model=model, tasks=tasks, k=k)
    killer.join(timeout=5)
    assert killed, "the actor must be killed while its runs are in flight"
    attempts = ResultsDir(tmp_path / "ray").attempts()
    assert len(attempts) == len(tasks) * k  # every run recorded
    lost = [r for recs in attempts.values() for r in recs if r.status == "harness_invalid"]
    assert lost, "the interrupted attempt is kept"
    for rec in lost:
        assert rec.error is not None and "died mid-run" in rec.error.message and rec.verdict is None
        retry = attempts[rec.run_id][rec.attempt]  # the next attempt of the same run
        assert retry.attempt == rec.attempt + 1 and retry.valid
    assert all(any(r.valid for r in recs) for recs in attempts.values())
    assert outcomes(tmp_path / "ray") == outcomes(reference.results.path)
    assert ResultsDir(tmp_path / "ray").lost_evidence() == {}
    assert len(out.new) == len(tasks) * k + len(lost)


def test_resume_after_the_driver_is_killed(sandbox, tmp_path, ray_address, slot_homes):
    k = 16
    reference = run(sandbox, tmp_path / "local", tasks=TASKS[:1], k=k)
    crashed = tmp_path / "crashed"
    args = [
        *(sys.executable, "-m", "agentrel.harness.cli", "audit"),
        *("--model", "reference/stochastic", "--k", str(k), "--tasks", TASKS[0], "-j", "2"),
        *("--executor", "ray", "--ray-address", ray_address, "--workers", str(WORKERS)),
        *("--results", str(crashed), "--no-report"),
    ]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    runs = crashed / "runs.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and (not runs.exists() or runs.read_bytes().count(b"\n") < 3):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = runs.read_bytes().count(b"\n")
    assert 3 <= partial < k, "the kill must land mid-audit"
    rerun = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    ids = [json.loads(line)["run_id"] for line in runs.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == k
    assert outcomes(crashed) == outcomes(reference.results.path)
    assert ResultsDir(crashed).lost_evidence() == {}


def test_an_agent_program_runs_on_ray_as_on_the_local_executor(sandbox, tmp_path, ray_address, slot_homes):
    """`--agent` with `--executor ray`: each actor starts the program beside its own run database and MCP
    face (loopback on its node), and the runs equal the local executor's, verdict and state."""
    from agentrel.harness.agents.external import ExternalSpec
    from agentrel.harness.tasks import load_suite

    task = load_suite(patterns=["csm-double-charge"])[0]
    plans = {"oracle": task.oracle, "bad": next(s for n, s in task.scripts().items() if n != "oracle")}
    specs = []
    for name, script in plans.items():
        plan = tmp_path / f"{name}.json"
        steps = [[s.tool, s.args] for s in script.steps]
        plan.write_text(json.dumps({"steps": steps, "final": script.final}))
        program = REPO / "tests" / "harness" / "plain_mcp_program.py"
        specs.append(ExternalSpec(name=name, command=[sys.executable, "-S", str(program), str(plan)]))

    def agents(results: Path, executor=None):  # type: ignore[no-untyped-def]
        kw = {"executor_factory": executor} if executor is not None else {}
        common = {"k": 2, "tasks": ["csm-double-charge"], "concurrency": 2, "show_progress": False}
        return audit(models=[], agents=specs, results=results, sandbox=sandbox, **common, **kw)  # type: ignore[arg-type]

    local = agents(tmp_path / "local")
    remote = agents(tmp_path / "ray", executor=Capture(workers=WORKERS, home=slot_homes))
    assert remote.protocol_hash == local.protocol_hash
    assert outcomes(tmp_path / "ray") == outcomes(tmp_path / "local")
    got = {(r.model, r.verdict.outcome if r.verdict else "-") for r in ResultsDir(tmp_path / "ray").records()}
    assert got == {("agent/oracle", "PASS"), ("agent/bad", "FAIL_DAMAGE")}
    assert all(r.status == "valid" and r.connected for r in ResultsDir(tmp_path / "ray").records())


def test_until_detect_decides_each_cell_on_ray_as_on_the_local_executor(
    sandbox, tmp_path, ray_address, slot_homes
):
    """`--until detect` with `--executor ray`: records arrive from the actors, the gate decides each cell
    as they do, and the recorded runs (which, how many, their verdicts) equal the local executor's; a
    resume on Ray runs nothing more. Cells run one run at a time, so the run index order is the gate's."""
    from agentrel.harness.stopping import StoppingRule

    rule = StoppingRule.parse("detect", 0.5, 0.9, "union", None)  # certify at 4 clean runs

    def sequential(results: Path, executor=None):  # type: ignore[no-untyped-def]
        kw = {"executor_factory": executor} if executor is not None else {}
        return audit(
            models=["scripted/oracle", "scripted/overreach", "reference/stochastic"],
            k=16,
            tasks=["csm-goodwill-cap", "itsm-cab-window"],
            concurrency=2,
            results=results,
            sandbox=sandbox,
            show_progress=False,
            until=rule,
            **kw,
        )

    local = sequential(tmp_path / "local")
    remote = sequential(tmp_path / "ray", executor=Capture(workers=WORKERS, home=slot_homes))
    assert remote.protocol_hash == local.protocol_hash
    assert outcomes(tmp_path / "ray") == outcomes(tmp_path / "local")
    assert remote.gate is not None and local.gate is not None
    assert remote.gate.certificates() == local.gate.certificates() != []
    assert remote.gate.skipped == local.gate.skipped > 0  # detected cells stopped early on Ray too
    oracle = [r for r in ResultsDir(tmp_path / "ray").records() if r.model == "scripted/oracle"]
    assert len(oracle) == 2 * 4  # each oracle cell certified at exactly n = 4 runs, no more
    again = sequential(tmp_path / "ray", executor=Capture(workers=WORKERS, home=slot_homes))
    assert again.new == []
