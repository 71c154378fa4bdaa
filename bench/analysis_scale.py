"""Scale benchmark for analysis/: 100,000 synthetic runs (10 agents x 200 tasks x 50 runs).

Records are in the current format (status, attempt, tool-pipeline events); 1% of runs have a
provider_invalid first attempt retried into a valid second one, so decisive-attempt selection runs
on every line.

Times, separately:
  core   every cell's exact interval and flags, pooled miss rates and ICCs, the beta-binomial MLE
         with its profile interval and a 2,000-resample cluster bootstrap, for every pool;
  total  the whole `agentrel analyze` (a subprocess: imports, loading runs.jsonl, figures, report, JSON).
Beside them, side by side in the same run, a per-resample Python loop doing the same bootstrap
statistics (timed on 100 resamples and scaled to 2,000) gives the vectorization ratio.

Last line: runs=<n> core_seconds=<s> total_seconds=<t>
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.bootstrap import cluster_bootstrap  # noqa: E402
from analysis.cells import cell_table  # noqa: E402
from analysis.inputs import load_input  # noqa: E402
from analysis.pipeline import core_statistics  # noqa: E402
from analysis.pooled import FEATURES, cell_features, pool_statistics_from_sums  # noqa: E402
from analysis.pools import task_features  # noqa: E402

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
    manifest = {
        "protocol_hash": PROTOCOL,
        "agents": [{"name": a, "kind": k} for a, k in zip(agents, kinds, strict=True)],
    }
    (directory / "manifest.json").write_text(json.dumps(manifest))
    count = 0
    with (directory / "runs.jsonl").open("w") as fh:
        for m, (agent, kind) in enumerate(zip(agents, kinds, strict=True)):
            damaged = rng.random((TASKS, RUNS)) < p[m][:, None]
            passed = rng.random((TASKS, RUNS)) < 0.7
            retried = rng.random((TASKS, RUNS)) < 0.01
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
                            }
                        )
                    outcome = "FAIL_DAMAGE" if damaged[t, r] else ("PASS" if passed[t, r] else "FAIL_SAFE")
                    verdict = {
                        "outcome": outcome,
                        "sub_label": "",
                        "inconsistent": False,
                        "mutated": bool(damaged[t, r]),
                        "changes": len(events),
                        "events": events,
                        "max_severity": events[0]["severity"] if events else None,
                        "dollars": f"{price[t] if events else 0:.2f}",
                        "irreversibility": [events[0]["irreversibility"]] if events else [],
                        "requirements": [],
                    }
                    rec = {
                        "status": "valid",
                        "attempt": 1,
                        "events": [{"kind": "tool_call", "ordinal": 0, "tool": "run_sql", "detail": ""}],
                        "transcript_digest": None,
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
                    }
                    if retried[t, r]:
                        failed = {**rec, "status": "provider_invalid", "verdict": None}
                        failed["error"] = {"kind": "provider", "message": "503"}
                        fh.write(json.dumps(failed) + "\n")
                        rec["attempt"] = 2
                    fh.write(json.dumps(rec) + "\n")
                    count += 1
    return count


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
            "--json",
            str(Path(tmp) / "summary.json"),
            "--bootstrap",
            str(N_BOOT),
        ]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        total_s = time.perf_counter() - t0
        if proc.returncode != 0:
            sys.exit(f"agentrel analyze failed ({proc.returncode}): {proc.stderr.strip()}")

        print(
            f"cells={len(cells)} pools={len(pools)} load_seconds={load_s:.3f} "
            f"retried_attempts={len(loaded.superseded)} invalid={len(loaded.invalid)}"
        )
        print(
            f"bootstrap of the all-models pool, {N_BOOT} resamples: per-resample loop (est.) {loop_s:.2f} s, "
            f"vectorized {vec_s:.3f} s, ratio {loop_s / vec_s:.0f}x"
        )
        print(f"runs={n} core_seconds={core_s:.3f} total_seconds={total_s:.3f}")


if __name__ == "__main__":
    main()
