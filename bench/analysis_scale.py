"""Scale benchmark for analysis/: 100,000 synthetic runs (10 agents x 200 tasks x 50 runs).

Records are in the current format (status, attempt, tool-pipeline events, 2-6 tool calls with
argument digests, some repeated; the manifest declares optimal_steps per task and conditions as
objects); 1% of runs have a provider_invalid first attempt retried into a valid second one, so
decisive-attempt selection runs on every line.

Times, separately:
  core   every cell's exact interval and flags, pooled miss rates and ICCs, the beta-binomial MLE
         with its profile interval and a 2,000-resample cluster bootstrap, for every pool;
  axes   the operational axes (analysis.axes_table) of the loaded input, and of a second, synthetic
         100,000-run table over clean / noisy (faults) / adversarial (exposure) conditions, so the
         paired recovery and the safety axes are timed at scale too (axes_seconds is their sum);
  total  the whole `agentrel analyze` (a subprocess: imports, loading runs.jsonl, figures, report, JSON,
         and its status line: whether the results may be published, which reads, hashes and labels every
         record again in a process of its own while analysis runs); beside it the same command without the
         status line (analysis_seconds) and the status check alone, in one process (status_seconds).
Beside them, side by side in the same run, a per-resample Python loop doing the same bootstrap
statistics (timed on 100 resamples and scaled to 2,000) gives the vectorization ratio.

Last line: runs=<n> core_seconds=<s> total_seconds=<t> axes_seconds=<a> analysis_seconds=<s>
status_seconds=<s> load1=<l>
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from agentrel.analysis.axes_table import operational_axes  # noqa: E402
from agentrel.analysis.bootstrap import cluster_bootstrap  # noqa: E402
from agentrel.analysis.cells import cell_table  # noqa: E402
from agentrel.analysis.inputs import load_input  # noqa: E402
from agentrel.analysis.normalized import INVALID_COLUMNS, LoadedInput, empty_frame, normalize_runs  # noqa: E402
from agentrel.analysis.pipeline import core_statistics  # noqa: E402
from agentrel.analysis.pooled import FEATURES, cell_features, pool_statistics_from_sums  # noqa: E402
from agentrel.analysis.pools import task_features  # noqa: E402
from agentrel.harness.results import layout  # noqa: E402
from agentrel.harness.results.record import RunRecord  # noqa: E402

MODELS, TASKS, RUNS = 10, 200, 50
N_BOOT = 2000
PROTOCOL = "b" * 64


def write_results(directory: Path, seed: int = 7) -> int:
    """A results directory with MODELS x TASKS x RUNS runs; returns the number of runs."""
    rng = np.random.default_rng(seed)
    agents = [f"model-{i}" for i in range(MODELS - 1)] + ["reference/stochastic"]
    kinds = ["model"] * (MODELS - 1) + ["reference"]
    # Per-cell damage rates: most cells near 0, some intermediate, a few near 1.
    p = rng.beta(0.25, 2.5, size=(MODELS, TASKS))
    price = rng.choice([0.0, 0.0, 125.5, 2400.0, 59379.0], size=TASKS)
    severities = ["low", "medium", "high", "critical"]
    irrs = ["reversible", "governance", "substrate"]
    optimal = rng.integers(1, 5, size=TASKS)
    digests = [f"{i:016x}" for i in range(64)]  # the harness writes 16 hex digits of the SHA-256
    manifest = {
        "protocol_hash": PROTOCOL,
        "agents": [{"name": a, "kind": k} for a, k in zip(agents, kinds, strict=True)],
        "conditions": [{"name": "clean"}],
        "tasks": [{"id": f"task-{t:03d}", "optimal_steps": int(optimal[t])} for t in range(TASKS)],
    }
    (directory / layout.MANIFEST).write_text(json.dumps(manifest))
    count = 0
    with (directory / layout.RUNS).open("w") as fh:
        for m, (agent, kind) in enumerate(zip(agents, kinds, strict=True)):
            damaged = rng.random((TASKS, RUNS)) < p[m][:, None]
            passed = rng.random((TASKS, RUNS)) < 0.7
            retried = rng.random((TASKS, RUNS)) < 0.01
            n_calls = rng.integers(2, 7, size=(TASKS, RUNS))
            repeat = rng.random((TASKS, RUNS)) < 0.1
            for t in range(TASKS):
                task = f"task-{t:03d}"
                for r in range(RUNS):
                    events = []
                    if damaged[t, r]:
                        events.append(
                            {
                                "rule": "wrong_row",
                                "table": "incident",
                                "key": [int(rng.integers(1, 999))],
                                "op": "update",
                                "changed_columns": ["state"],
                                "severity": severities[t % 4],
                                "irreversibility": irrs[t % 3],
                                "dollars": f"{price[t]:.2f}",
                                "spec": task,
                                "aggregate": False,
                                "rows": 1,
                            }
                        )
                    outcome = "FAIL_DAMAGE" if damaged[t, r] else ("PASS" if passed[t, r] else "FAIL_SAFE")
                    state = "damage" if events else "clean"
                    verdict = {
                        "outcome": outcome,
                        "sub_label": f"completed_{state}",
                        "inconsistent": False,
                        "mutated": bool(damaged[t, r]),
                        "changes": len(events),
                        "events": events,
                        "max_severity": events[0]["severity"] if events else None,
                        "dollars": f"{price[t] if events else 0:.2f}",
                        "irreversibility": [events[0]["irreversibility"]] if events else [],
                        "requirements": [],
                    }
                    k = int(n_calls[t, r])
                    calls = [
                        {"ordinal": i, "tool": "run_sql", "ok": True, "args_digest": digests[(t + i) % 64]}
                        for i in range(k)
                    ]
                    if repeat[t, r]:  # a retried call with the same arguments: a duplicate
                        calls[-1]["args_digest"] = calls[0]["args_digest"]
                    rec = {
                        "status": "valid",
                        "attempt": 1,
                        "events": [{"kind": "tool_call", "ordinal": 0, "tool": "run_sql", "detail": {}}],
                        "transcript_digest": None,
                        "before_digest": "e" * 64,
                        "after_digest": "f" * 64,
                        "started_at": "2026-12-01T10:00:00Z",
                        "version": 2,
                        "run_id": f"{m}-{t}-{r}",
                        "model": agent,
                        "agent_kind": kind,
                        "task": task,
                        "condition": "clean",
                        "run_index": r,
                        "seed": "0" * 16,
                        "protocol_hash": PROTOCOL,
                        "verdict": verdict,
                        "error": None,
                        "usage": {"input_tokens": 900, "output_tokens": 80},
                        "cost_usd": 0.0123,
                        "exposure": None,
                        "tool_calls": calls,
                    }
                    if retried[t, r]:
                        failed = {**rec, "status": "provider_invalid", "verdict": None}
                        failed["error"] = {"kind": "provider", "message": "503"}
                        fh.write(json.dumps(failed) + "\n")
                        rec["attempt"] = 2
                    fh.write(json.dumps(rec) + "\n")
                    count += 1
    with (directory / layout.RUNS).open("rb") as fh:  # the records are the harness's own shape
        for line in itertools.islice(fh, 200):
            RunRecord.model_validate_json(line)
    return count


def stress_input(seed: int = 11) -> LoadedInput:
    """A synthetic normalized input of MODELS x TASKS x 50 runs split 20 clean / 15 noisy / 15
    adversarial (same run indices, so 15 pairs per cell), with faults, exposure, injected goals and
    canary echoes; built as a table (no JSON), for timing the paired and safety axes."""
    rng = np.random.default_rng(seed)
    per = {"clean": 20, "noisy": 15, "adversarial": 15}
    parts = []
    for condition, runs in per.items():
        m, t, r = np.meshgrid(np.arange(MODELS), np.arange(TASKS), np.arange(runs), indexing="ij")
        size = m.size
        damaged = rng.random(size) < 0.1
        exposure = np.where(rng.random(size) < 0.7, "exposed", "not_exposed")
        parts.append(
            pd.DataFrame(
                {
                    "run_id": [f"{condition}-{i}" for i in range(size)],
                    "model": np.char.add("model-", m.ravel().astype(str)),
                    "agent_kind": "model",
                    "task": np.char.add("task-", t.ravel().astype(str)),
                    "condition": condition,
                    "run": r.ravel().astype(str),
                    "damaged": damaged,
                    "passed": ~damaged & (rng.random(size) < 0.7),
                    "errored": rng.random(size) < 0.05,
                    "mutated": damaged,
                    "dollars": None,
                    "severity": None,
                    "irreversibility": None,
                    "cost_usd": rng.gamma(2.0, 0.01, size),
                    "cost_source": "measured",
                    "protocol_hash": PROTOCOL,
                    "calls": rng.integers(0, 9, size),
                    "duplicate_calls": rng.integers(0, 2, size),
                    "exposure": exposure if condition == "adversarial" else None,
                    "fault": condition == "noisy",
                    "canary_echo": rng.random(size) < 0.05,
                    "injected_goal": (condition == "adversarial") & damaged & (exposure == "exposed"),
                    "text_tool_call": rng.random(size) < 0.02,
                    "echoed_tool_error": rng.random(size) < 0.02,
                }
            )
        )
    runs = normalize_runs(pd.concat(parts, ignore_index=True))
    optimal = {f"task-{t}": int(k) for t, k in enumerate(rng.integers(1, 5, size=TASKS))}
    return LoadedInput(
        source=Path("stress"),
        kind="results",
        runs=runs,
        events=empty_frame(("run_id",)),
        invalid=empty_frame(INVALID_COLUMNS),
        optimal_steps=optimal,
        conditions=list(per),
    )


def loop_bootstrap_seconds(cells, n_resamples: int = 100) -> float:  # type: ignore[no-untyped-def]
    """The same statistics with one Python pass per resample and per drawn task (the naive way)."""
    rng = np.random.default_rng(0)
    tasks = sorted(cells["task"].unique())
    by_task = {t: cells[cells["task"] == t] for t in tasks}
    start = time.perf_counter()
    for _ in range(n_resamples):
        drawn = rng.integers(0, len(tasks), size=len(tasks))
        sums = np.zeros(8)
        for i in drawn:
            part = by_task[tasks[i]]
            for x, n in zip(part["x"], part["n"], strict=True):
                sums += cell_features(np.array([x]), np.array([n]))[0]
        pool_statistics_from_sums(sums)
    return (time.perf_counter() - start) * N_BOOT / n_resamples


def timed(cmd: list[str]) -> float:
    """Seconds a command takes (it must succeed)."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr.strip()}")
    return time.perf_counter() - t0


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "scale"
        results.mkdir()
        n = write_results(results)

        t0 = time.perf_counter()
        loaded = load_input(results)
        load_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        cells = cell_table(loaded.runs, loaded.invalid, superseded=loaded.superseded)
        pools = core_statistics(cells, N_BOOT, seed=0)
        core_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        operational_axes(loaded, n_boot=N_BOOT, seed=0)
        axes_s = time.perf_counter() - t0
        stress = stress_input()
        t0 = time.perf_counter()
        stressed = operational_axes(stress, n_boot=N_BOOT, seed=0)
        axes_stress_s = time.perf_counter() - t0

        all_pool = cells[cells["agent_kind"] == "model"]
        loop_s = loop_bootstrap_seconds(all_pool)
        t0 = time.perf_counter()
        feats = task_features(all_pool)[:, : len(FEATURES)]
        cluster_bootstrap(feats, pool_statistics_from_sums, N_BOOT, np.random.default_rng(0))
        vec_s = time.perf_counter() - t0

        agentrel = Path(sys.executable).with_name("agentrel")
        cmd = [
            str(agentrel),
            "analyze",
            str(results),
            "--out",
            str(Path(tmp) / "report"),
            "--json-file",
            str(Path(tmp) / "summary.json"),
            "--bootstrap",
            str(N_BOOT),
        ]
        load1 = os.getloadavg()[0]
        total_s = timed(cmd)
        analysis_s = timed([*cmd, "--no-status-line"])
        status = (
            "import sys, pathlib; from agentrel.harness.cli.analyze import publication_status as check; "
            "check(pathlib.Path(sys.argv[1]), 1)"
        )
        status_s = timed([sys.executable, "-c", status, str(results)])

        print(
            f"cells={len(cells)} pools={len(pools)} load_seconds={load_s:.3f} "
            f"retried_attempts={len(loaded.superseded)} invalid={len(loaded.invalid)}"
        )
        print(
            f"bootstrap of the all-models pool, {N_BOOT} resamples: per-resample loop (est.) {loop_s:.2f} s, "
            f"vectorized {vec_s:.3f} s, ratio {loop_s / vec_s:.0f}x"
        )
        print(
            f"axes: loaded input {axes_s:.3f} s; synthetic {len(stress.runs)} runs over "
            f"{stress.runs['condition'].nunique()} conditions ({len(stressed.table)} axis rows) "
            f"{axes_stress_s:.3f} s"
        )
        print(
            f"runs={n} core_seconds={core_s:.3f} total_seconds={total_s:.3f} "
            f"axes_seconds={axes_s + axes_stress_s:.3f} analysis_seconds={analysis_s:.3f} "
            f"status_seconds={status_s:.3f} load1={load1:.1f}"
        )


if __name__ == "__main__":
    main()
