"""`audit --executor ray --ray-address` across hosts: a Ray head and two worker nodes, each in a network
namespace of its own (tests/ray_cluster/netns.py), each slot actor with its own sandbox (a private
Postgres cluster under the driver's AGENTREL_HOME/ray/slot-<i>, started on the node the actor lands on).

The subject is `openai/loopback`: the loopback provider (bench/loopback_provider.py) in the head's
namespace, answering each task's oracle calls after a set latency, reached by every node over the
namespaces' network, so runs are model-bound and deterministic. The driver runs on the head, as a user's
would. Then:

1. throughput: the same matrix on 1 worker and on 2;
2. one worker node is killed mid-audit (its raylet, its actors, their Postgres: every process in its
   namespace): the audit completes on the other node, every planned run is recorded exactly once as
   decided, each lost attempt is kept, the dumps are in the driver's results, and the verdicts equal the
   local executor's on the same matrix;
3. the driver is killed mid-audit and the same command run again: nothing recorded before is lost, and
   nothing is recorded twice.

`make test-ray-cluster` runs it (root: it makes network namespaces); it prints its numbers as one
key=value line.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.results.record import RunRecord
from tests.ray_cluster.netns import Host, leftovers, network

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TASKS = ["itsm-cab-window", "csm-double-charge", "itsm-prod-db-access", "itsm-alert-storm"]
LATENCY_S = 0.4  # per model call: runs of 3-10 calls last 1.2-4 s
PER_WORKER = 6  # --concurrency: runs in flight on each actor
NUMBERS: dict[str, str] = {}


@dataclass
class Cluster:
    head: Host
    workers: list[Host]
    address: str  # the head's GCS, as --ray-address
    env: dict[str, str]  # what the driver and every node see: the provider's URL, the token, no proxy


def token_auth(token_file: Path) -> dict[str, str]:
    """Ray's token authentication, on: a fresh 256-bit token in a file only this user reads.

    Named explicitly for every node and the driver because Ray (2.59 on) otherwise decides per process:
    `ray start --head` turns token mode on by itself when a token exists in ~/.ray/auth_token (any
    earlier local `ray.init()` writes one there), while `ray start --address` never does, so the workers
    were refused as InvalidAuthToken on any machine where Ray had once run locally. The cluster's token
    is the test's own, never the user's home one."""
    token_file.write_text(secrets.token_hex(32))
    token_file.chmod(0o600)
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_file)}


def _ray_start(host: Host, env: dict[str, str], temp: Path, *args: str) -> None:
    done = host.run(
        [str(BIN / "ray"), "start", f"--node-ip-address={host.address}", "--disable-usage-stats",
         f"--temp-dir={temp / host.name}", "--object-store-memory=100000000", *args],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, f"ray start on {host.name}: {done.stderr[-2000:]}"


@pytest.fixture(scope="module")
def ray_cluster(
    agentrel_home: Path, sandbox: object, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """The head, two workers (2 CPUs each, so a lost node's slot can be replaced on the other), and the
    provider; everything killed and every namespace deleted at the end, whatever happened."""
    if os.geteuid() != 0:
        pytest.fail("the Ray cluster test makes network namespaces: run it as root (make test-ray-cluster)")
    from agentrel.harness.tasks import load_suite
    from bench.loopback_provider import plans_of

    tmp = tmp_path_factory.mktemp("ray-cluster")
    temp = Path("/tmp") / f"agentrel-ray-{os.getpid()}"  # Ray's socket paths must stay short
    plans = tmp / "plans.json"
    plans.write_text(json.dumps(plans_of(load_suite(patterns=TASKS))))
    with network(["head", "w1", "w2"]) as net:
        head, *workers = net.hosts
        provider = head.popen(
            [sys.executable, str(REPO / "bench" / "loopback_provider.py"), "--plans", str(plans),
             "--latency", str(LATENCY_S), "--host", head.address],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        line = provider.stdout.readline() if provider.stdout else ""
        assert line.startswith("port="), line
        env = {
            **os.environ,
            "RAY_USAGE_STATS_ENABLED": "0",
            "OPENAI_BASE_URL": f"http://{head.address}:{line.strip().split('=')[1]}/v1",
            # A base URL off loopback needs a key; the provider takes any.
            "OPENAI_API_KEY": "loopback-test-key",
            "PYTHONPATH": str(REPO),
            **token_auth(tmp / "ray-auth-token"),
        }
        env.pop("RAY_AUTH_TOKEN", None)  # it would take precedence over the file
        for proxy in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
            env.pop(proxy, None)
        try:
            _ray_start(head, env, temp, "--head", "--port=6379", "--num-cpus=0", "--include-dashboard=false")
            for w in workers:
                _ray_start(w, env, temp, f"--address={head.address}:6379", "--num-cpus=2")
            yield Cluster(head, workers, f"{head.address}:6379", env)
        finally:
            for w in [*workers, head]:
                w.kill()
            from agentrel.sandbox.servers.local import LocalCluster

            for home in sorted((agentrel_home / "ray").glob("slot-*")):
                LocalCluster(home).destroy()
            subprocess.run(["rm", "-rf", str(temp)])
    assert leftovers(net.tag) == [], "every namespace is deleted"
    print("\n" + " ".join(f"{k}={v}" for k, v in NUMBERS.items()), flush=True)


def audit_args(c: Cluster, results: Path, k: int, workers: int | None, tasks: list[str] = TASKS) -> list[str]:
    args = [str(BIN / "agentrel"), "audit", "--model", "openai/loopback", "--k", str(k)]
    args += ["--tasks", ",".join(tasks)]
    args += ["-j", str(PER_WORKER), "--results", str(results), "--no-report"]
    if workers is not None:
        args += ["--executor", "ray", "--ray-address", c.address, "--workers", str(workers)]
    return args


class Watch:
    """When each record line appeared in runs.jsonl, seen from outside the driver."""

    def __init__(self, results: Path) -> None:
        self.runs = results / "runs.jsonl"
        self.times: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            n = self.count()
            while len(self.times) < n:
                self.times.append(time.monotonic())
            time.sleep(0.02)

    def count(self) -> int:
        return self.runs.read_bytes().count(b"\n") if self.runs.exists() else 0

    def wait_for(self, n: int, proc: subprocess.Popen, timeout_s: float = 600) -> None:
        deadline = time.monotonic() + timeout_s
        while self.count() < n:
            assert proc.poll() is None, "the audit ended before it was hurt"
            assert time.monotonic() < deadline, f"{self.runs}: fewer than {n} records in time"
            time.sleep(0.02)

    def stop(self) -> float:
        """Runs per second between the first record and the last (the run phase, past the start)."""
        self._stop.set()
        self._thread.join()
        assert len(self.times) >= 2
        return (len(self.times) - 1) / (self.times[-1] - self.times[0])


def drive(c: Cluster, args: list[str]) -> subprocess.Popen:
    return c.head.popen(args, env=c.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, timeout_s: float = 900) -> str:
    _out, err = proc.communicate(timeout=timeout_s)
    assert proc.returncode == 0, f"exit {proc.returncode}: {err[-3000:]}"
    return err


def decided(path: Path) -> dict[str, tuple[str, str | None]]:
    """run id -> (verdict, dump digest) of its decisive attempt."""
    attempts = ResultsDir(path).attempts()
    out = {}
    for rid, recs in attempts.items():
        final = [r for r in recs if r.terminal]
        assert len(final) == 1, f"{rid}: {len(final)} decisive attempts"
        out[rid] = (final[0].verdict.outcome if final[0].verdict else "-", final[0].after_digest)
    return out


def every_attempt(path: Path) -> list[RunRecord]:
    return [r for recs in ResultsDir(path).attempts().values() for r in recs]


def check_exactly_once(path: Path, planned: int) -> dict[str, int]:
    """Every planned run recorded, each attempt once, numbered 1..n, the last one decisive and valid,
    its dump in the driver's results; returns the counts the line reports."""
    rd = ResultsDir(path)
    records = every_attempt(path)
    keys = [(r.run_id, r.attempt) for r in records]
    duplicated = len(keys) - len(set(keys))
    attempts = rd.attempts()
    for rid, recs in attempts.items():
        assert [r.attempt for r in sorted(recs, key=lambda r: r.attempt)] == list(range(1, len(recs) + 1)), (
            rid
        )
        last = max(recs, key=lambda r: r.attempt)
        assert last.terminal and last.valid, f"{rid}: its last attempt is {last.status}"
        assert last.after_digest is not None
        rd.load_dump(last.after_digest)  # the dump reached the driver and reads back
    assert rd.lost_evidence(attempts) == {}
    return {
        "lost": planned - len(attempts),
        "duplicated": duplicated,
        "retried": len(records) - len(attempts),
    }


def test_two_workers_and_one_record_every_run(ray_cluster: Cluster, tmp_path: Path) -> None:
    rates = {}
    for workers in (1, 2):
        results = tmp_path / f"ray{workers}"
        watch = Watch(results)
        proc = drive(ray_cluster, audit_args(ray_cluster, results, k=8, workers=workers))
        finish(proc)
        rates[workers] = watch.stop()
        check_exactly_once(results, len(TASKS) * 8)
    NUMBERS["ray1_runs_per_s"] = f"{rates[1]:.2f}"
    NUMBERS["ray2_runs_per_s"] = f"{rates[2]:.2f}"
    NUMBERS["ray2_over_ray1"] = f"{rates[2] / rates[1]:.2f}"
    # Reported, not asserted: speed is measured, never tested (on a shared 2-core machine the ratio says
    # as much about the neighbours' load as about the executor); the load is printed beside it.
    NUMBERS["load1"] = f"{os.getloadavg()[0]:.1f}"


def test_losing_a_worker_node_mid_audit_loses_no_run(ray_cluster: Cluster, tmp_path: Path) -> None:
    k = 10
    planned = len(TASKS) * k
    local = tmp_path / "local"
    finish(drive(ray_cluster, audit_args(ray_cluster, local, k=k, workers=None)))
    results = tmp_path / "ray"
    watch = Watch(results)
    proc = drive(ray_cluster, audit_args(ray_cluster, results, k=k, workers=2))
    watch.wait_for(planned // 4, proc)
    victim = ray_cluster.workers[0]
    killed = victim.kill()
    err = finish(proc)
    watch.stop()
    counts = check_exactly_once(results, planned)
    assert counts["lost"] == 0 and counts["duplicated"] == 0
    assert counts["retried"] > 0, f"the attempts in flight on {victim.name} are kept: {err[-2000:]}"
    lost = [r for r in every_attempt(results) if r.status == "harness_invalid"]
    assert lost and all(r.error and "died mid-run" in r.error.message for r in lost)
    assert decided(results) == decided(local), "verdicts and dumps equal the local executor's"
    slots = [json.loads(line) for line in (results / "execution_slots.jsonl").read_text().splitlines()]
    assert {s["node_ip"] for s in slots} >= {w.address for w in ray_cluster.workers}, "both nodes held a slot"
    # The lost slot is reopened on the surviving node, but whether it opens before the survivor has run
    # what was left is a race with the machine's load (Ray must first see the node dead, then a sandbox
    # start on the other node): counted, never required. Wherever one opened, it is on a live node.
    replaced = [s for s in slots if s["incarnation"] > 1]
    assert all(s["node_ip"] == ray_cluster.workers[1].address for s in replaced), replaced
    NUMBERS.update(
        node_kill_runs=str(planned),
        node_kill_processes=str(killed),
        node_kill_retried=str(counts["retried"]),
        node_kill_slots_reopened=str(len(replaced)),
        runs_lost=str(counts["lost"]),
        runs_duplicated=str(counts["duplicated"]),
    )


def test_killing_the_driver_and_resuming_loses_nothing(ray_cluster: Cluster, tmp_path: Path) -> None:
    k = 8
    planned = len(TASKS) * k
    results = tmp_path / "ray"
    args = audit_args(ray_cluster, results, k=k, workers=1)  # the surviving node alone
    watch = Watch(results)
    proc = drive(ray_cluster, args)
    watch.wait_for(planned // 4, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    watch.stop()
    before = {(r.run_id, r.attempt): r.model_dump_json() for r in every_attempt(results)}
    assert 0 < len(before) < planned, "the kill lands mid-audit"
    finish(drive(ray_cluster, args))
    after = {(r.run_id, r.attempt): r.model_dump_json() for r in every_attempt(results)}
    assert before.items() <= after.items(), "every record written before the kill is kept as it was"
    counts = check_exactly_once(results, planned)
    assert counts["lost"] == 0 and counts["duplicated"] == 0
    NUMBERS.update(driver_kill_recorded_before=str(len(before)), driver_kill_lost=str(counts["lost"]))


@pytest.mark.parametrize("presented", ["no token", "another token"])
def test_a_driver_without_the_clusters_token_runs_nothing_on_it(
    ray_cluster: Cluster, tmp_path: Path, presented: str
) -> None:
    """The attack: someone on the cluster's network drives an audit on its nodes without its token."""
    env = dict(ray_cluster.env)
    if presented == "no token":
        env["RAY_AUTH_MODE"] = "disabled"
        del env["RAY_AUTH_TOKEN_PATH"]
    else:
        env.update(token_auth(tmp_path / "another-token"))
    results = tmp_path / "ray"
    proc = ray_cluster.head.popen(
        audit_args(ray_cluster, results, k=1, workers=1),
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _out, err = proc.communicate(timeout=600)
    assert proc.returncode == 4, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert err.strip().splitlines()[-1] == (
        f"agentrel: error: --ray-address {ray_cluster.address}: the Ray cluster refused this driver's "
        "token: set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH to the file holding the cluster's token "
        "(as on its nodes)"
    )
    assert not (results / "runs.jsonl").exists() or (results / "runs.jsonl").read_text() == ""
