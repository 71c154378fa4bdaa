"""Per-run overhead of an external agent program (process start, MCP session over loopback HTTP,
teardown) beside the in-process scripted agent making the same oracle calls, side by side in one run.

Both audit the same task K times at concurrency 1 on the same sandbox; the external agent is the tiny MCP
SDK client of the tests (`tests/harness/mcp_agent_program.py`, plan mode) replaying the task's oracle.
Per-run time is the record's total (clone to judge); the probe before the external audit is left out.

The agent program's own start (a Python process importing the MCP SDK client, which AgentRel does not
control and which costs seconds on a loaded machine) is measured alone, K times, and shown beside it:
`harness_s` is the overhead left once it is subtracted (AgentRel's MCP face, process spawn and teardown).

Last line: scripted_s=<mean per run> external_s=<mean per run> overhead_s=<difference>
program_start_s=<mean start of the program alone> harness_s=<overhead - program start>
ratio=<external / scripted> load1=<1-minute load average> target_met=<overhead under 1.5 s>
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


def per_run(results: Path, model: str) -> list[float]:
    return [r.timings.total_s for r in ResultsDir(results).records() if r.model == model and r.valid]


IMPORTS = (
    "import anyio; from mcp.client.session import ClientSession;"
    " from mcp.client.streamable_http import streamable_http_client"
)


def program_start() -> list[float]:
    """The agent program's own floor: interpreter start plus the MCP SDK client's imports."""
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
        plan.write_text(json.dumps({"steps": [[s.tool, s.args] for s in task.oracle.steps]}))
        program = ROOT / "tests" / "harness" / "mcp_agent_program.py"
        spec = ExternalSpec(name="bench", command=[sys.executable, str(program), str(plan), "plan"])
        common = {"k": K, "task_patterns": [TASK], "concurrency": 1, "sandbox": sb, "show_progress": False}
        audit(models=["scripted/oracle"], results=Path(tmp) / "scripted", **common)  # type: ignore[arg-type]
        audit(models=[], external=[spec], results=Path(tmp) / "external", **common)  # type: ignore[arg-type]
        scripted = per_run(Path(tmp) / "scripted", "scripted/oracle")
        external = per_run(Path(tmp) / "external", "agent/bench")
    assert len(scripted) == len(external) == K, (len(scripted), len(external))
    start = program_start()
    s, e, p = statistics.mean(scripted), statistics.mean(external), statistics.mean(start)
    print(f"{'agent':<18}{'runs':>6}{'mean s':>10}{'median s':>10}{'max s':>8}")
    for name, xs in (
        ("scripted/oracle", scripted),
        ("agent/bench (MCP)", external),
        ("program start", start),
    ):
        print(
            f"{name:<18}{len(xs):>6}{statistics.mean(xs):>10.3f}{statistics.median(xs):>10.3f}{max(xs):>8.3f}"
        )
    print(
        f"scripted_s={s:.3f} external_s={e:.3f} overhead_s={e - s:.3f} program_start_s={p:.3f}"
        f" harness_s={e - s - p:.3f} ratio={e / s:.2f} load1={os.getloadavg()[0]:.1f}"
        f" target_met={str(e - s < TARGET_S).lower()}"
    )


if __name__ == "__main__":
    main()
