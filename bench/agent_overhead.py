"""Per-run overhead of an external agent program (process start, MCP session over loopback HTTP,
teardown) beside the in-process scripted agent making the same oracle calls, side by side in one run.

All audit the same task K times at concurrency 1 on the same sandbox, replaying the task's oracle:
- the in-process scripted agent (no process, no MCP): the baseline;
- `plain`: an agent program with no MCP library, standard library only (`tests/harness/plain_mcp_program.py`):
  the external-agent path itself (process start, MCP session over loopback HTTP, teardown);
- `sdk`: the official MCP SDK client of the tests (`tests/harness/mcp_agent_program.py`), whose imports
  (anyio, httpx, pydantic) the agent pays, not AgentRel; they are also timed alone (`sdk_import_s`).
- `plain` unsealed (`isolation="none"`, a plain child process) beside the sealed default: the sealed
  launch's extra time per run (bubblewrap's namespaces and mounts, the forwarder, the relays, waiting for
  the sandbox's processes to end), whose target is under 100 ms.
Per-run time is the record's total (clone to judge); the probe before each external audit is left out.
The target (under 1.5 s extra per run on 2 cores) is the path's: `overhead_s`, the plain agent's.

Last line: scripted_s=<mean per run> plain_s=<mean> sdk_s=<mean> overhead_s=<plain - scripted>
sdk_overhead_s=<sdk - scripted> sdk_import_s=<the SDK client's imports alone> ratio=<plain / scripted>
load1=<1-minute load average> target_met=<overhead_s under 1.5 s> unsealed_s=<plain unsealed, mean>
sealed_extra_ms=<plain sealed - plain unsealed, median per run> sealed_target_met=<under 100 ms>
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentrel.harness.agents.external import ExternalSpec
from agentrel.harness.audit import audit
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.tasks import load_suite
from agentrel.sandbox.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[1]
TASK = "csm-double-charge"
K = 8
TARGET_S = 1.5
SEALED_TARGET_MS = 100.0


def per_run(results: Path, model: str) -> list[float]:
    return [r.timings.total_s for r in ResultsDir(results).records() if r.model == model and r.valid]


IMPORTS = (
    "import anyio; from mcp.client.session import ClientSession;"
    " from mcp.client.streamable_http import streamable_http_client"
)


def sdk_import() -> list[float]:
    """The SDK agent program's own floor: interpreter start plus the MCP SDK client's imports."""
    times = []
    for _ in range(K):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", IMPORTS], check=True)
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    sb = Sandbox.open()
    task = load_suite(patterns=[TASK])[0]
    with tempfile.TemporaryDirectory(prefix="agentrel-bench-") as tmp:
        plan = Path(tmp) / "plan.json"
        oracle = {"steps": [[s.tool, s.args] for s in task.oracle.steps], "final": task.oracle.final}
        plan.write_text(json.dumps(oracle))
        tests = ROOT / "tests" / "harness"
        plain = ExternalSpec(
            name="plain", command=[sys.executable, "-S", str(tests / "plain_mcp_program.py"), str(plan)]
        )
        sdk = ExternalSpec(
            name="sdk", command=[sys.executable, str(tests / "mcp_agent_program.py"), str(plan), "plan"]
        )
        unsealed = plain.model_copy(update={"name": "unsealed", "isolation": "none"})
        common = {"k": K, "task_patterns": [TASK], "concurrency": 1, "sandbox": sb, "show_progress": False}
        audit(models=["scripted/oracle"], results=Path(tmp) / "scripted", **common)  # type: ignore[arg-type]
        for spec in (plain, sdk, unsealed):
            audit(models=[], external=[spec], results=Path(tmp) / spec.name, **common)  # type: ignore[arg-type]
        runs = {
            "scripted/oracle": per_run(Path(tmp) / "scripted", "scripted/oracle"),
            "agent/plain": per_run(Path(tmp) / "plain", "agent/plain"),
            "agent/sdk": per_run(Path(tmp) / "sdk", "agent/sdk"),
        }
        unsealed_runs = per_run(Path(tmp) / "unsealed", "agent/unsealed")
    assert all(len(xs) == K for xs in runs.values()), {m: len(xs) for m, xs in runs.items()}
    assert len(unsealed_runs) == K
    runs["sdk import alone"] = sdk_import()
    s, p, d, i = (statistics.mean(xs) for xs in runs.values())
    runs["plain unsealed"] = unsealed_runs
    u = statistics.mean(unsealed_runs)
    # Medians: one slow run on a shared machine should not decide a difference of milliseconds.
    extra_ms = (statistics.median(runs["agent/plain"]) - statistics.median(unsealed_runs)) * 1000
    print(f"{'agent':<18}{'runs':>6}{'mean s':>10}{'median s':>10}{'max s':>8}")
    for name, xs in runs.items():
        print(
            f"{name:<18}{len(xs):>6}{statistics.mean(xs):>10.3f}{statistics.median(xs):>10.3f}{max(xs):>8.3f}"
        )
    print(
        f"scripted_s={s:.3f} plain_s={p:.3f} sdk_s={d:.3f} overhead_s={p - s:.3f} sdk_overhead_s={d - s:.3f}"
        f" sdk_import_s={i:.3f} ratio={p / s:.2f} load1={os.getloadavg()[0]:.1f}"
        f" target_met={str(p - s < TARGET_S).lower()} unsealed_s={u:.3f} sealed_extra_ms={extra_ms:.0f}"
        f" sealed_target_met={str(extra_ms < SEALED_TARGET_MS).lower()}"
    )


if __name__ == "__main__":
    main()
