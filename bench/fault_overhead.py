"""What a witnessed fault costs: the reference suite under the `standard` schedule, each fault run beside
its clean twin (same agent, task and seed) from the same audit, side by side.

Every task gets one run per fault whose trigger can fire on it (restart on the first write call;
lost response, kill and partition on the first irreversible call) and its clean twin, at k = 1, one run
at a time so a run's seconds are its own. A fault run pays for the process path (a tool-server process,
the proxy) and for the fault itself: a lost response or a partition is waited out for one transport
timeout (`--fault-timeout`, here FAULT_TIMEOUT_S), a kill for the server's restart.

Runs on the user's own sandbox (AGENTREL_HOME or .agentrel/).
Last line: fault_runs=<n> witnessed=<w>/<n> seconds_per_fault_run=<a> clean_seconds=<b>
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.run.audit import audit
from agentrel.sandbox.sandbox import Sandbox

FAULT_TIMEOUT_S = 1.0  # loopback answers take milliseconds; one second is far past any of them


def main() -> None:
    sandbox = Sandbox.open()
    with tempfile.TemporaryDirectory() as tmp:
        audit(
            models=["reference/stochastic"],
            k=1,
            concurrency=1,
            results=Path(tmp) / "r",
            sandbox=sandbox,
            faults="standard",
            fault_timeout_s=FAULT_TIMEOUT_S,
            show_progress=False,
        )
        records = ResultsDir(Path(tmp) / "r").records()
    twins = {(r.task, r.run_index): r for r in records if r.condition == "clean"}
    faults = [r for r in records if r.fault is not None]
    witnessed = [r for r in faults if r.status == "valid"]
    by_kind: dict[str, list[float]] = defaultdict(list)
    extra = []
    for r in faults:
        twin = twins[(r.task, r.run_index)]
        delta = r.timings.total_s - twin.timings.total_s
        assert r.fault is not None
        by_kind[r.fault.kind].append(delta)
        extra.append(delta)
    print(f"{'fault kind':<14} {'runs':>5} {'extra s (mean)':>15} {'extra s (max)':>14}")
    for kind, deltas in sorted(by_kind.items()):
        print(f"{kind:<14} {len(deltas):>5} {statistics.mean(deltas):>15.2f} {max(deltas):>14.2f}")
    not_witnessed = [f"{r.run_id}: {r.status}" for r in faults if r.status != "valid"]
    for line in not_witnessed:
        print(f"not witnessed: {line}")
    fault_s = statistics.mean(r.timings.total_s for r in faults)
    clean_s = statistics.mean(t.timings.total_s for t in twins.values())
    print(f"mean extra seconds per fault run: {statistics.mean(extra):.2f} (target < 1.5)")
    print(
        f"fault_runs={len(faults)} witnessed={len(witnessed)}/{len(faults)} "
        f"seconds_per_fault_run={fault_s:.2f} clean_seconds={clean_s:.2f}"
    )


if __name__ == "__main__":
    main()
