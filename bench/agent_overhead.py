"""Per-run overhead of an external agent program (process start, MCP session over loopback HTTP,
teardown) beside the in-process scripted agent making the same oracle calls, side by side in one run.

All audit the same task K times at concurrency 1 on the same sandbox, replaying the task's oracle:
- the in-process scripted agent (no process, no MCP): the baseline;
- `plain`: an agent program with no MCP library, standard library only (`tests/harness/plain_mcp_program.py`):
  the external-agent path itself (process start, MCP session over loopback HTTP, teardown);
- `sdk`: the official MCP SDK client of the tests (`tests/harness/mcp_agent_program.py`), whose imports
  (anyio, httpx, pydantic) the agent pays, not AgentRel; they are also timed alone (`sdk_import_s`).
- `plain` unsealed (`isolation="none"`, a plain child process) beside the sealed default, one run of each
  in turn (a shared machine's load drifts; alternating keeps it out of the difference): the sealed
  launch's extra time per run (bubblewrap's namespaces and mounts, the forwarder, the relays, waiting for
  the sandbox's processes to end), median of the pairs, whose target is under 100 ms; and the launch
  alone (`python -S -c pass` sealed and not, in turn: `launch_extra_ms`).
Per-run time is the record's total (clone to judge); the probe before each external audit is left out.
The target (under 1.5 s extra per run on 2 cores) is the path's: `overhead_s`, the plain agent's.
The model proxy's own cost (`proxy_call_ms`, target under 5 ms): the median of CALLS Chat Completions
calls through it minus the median of the same calls straight to the same loopback fake upstream.

Last line: scripted_s=<mean per run> plain_s=<mean> sdk_s=<mean> overhead_s=<plain - scripted>
sdk_overhead_s=<sdk - scripted> sdk_import_s=<the SDK client's imports alone> ratio=<plain / scripted>
load1=<1-minute load average> target_met=<overhead_s under 1.5 s> unsealed_s=<plain unsealed, mean>
sealed_extra_ms=<plain sealed - plain unsealed, median of the alternating pairs> launch_extra_ms=<the
launch alone, median of pairs> sealed_target_met=<sealed_extra_ms under 100 ms> proxy_call_ms=<per-call
overhead of the model proxy>
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentrel.harness.agents.external import ExternalSpec
from agentrel.harness.agents.process import run_process
from agentrel.harness.agents.sealed import RunDirs, SealPlan, run_sealed
from agentrel.harness.results.directory import ResultsDir
from agentrel.harness.run.audit import audit
from agentrel.harness.tasks import load_suite
from agentrel.sandbox.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[1]
TASK = "csm-double-charge"
K = 8
TARGET_S = 1.5
CALLS = 200  # model calls each way for proxy_call_ms
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


# A loopback fake upstream in its own process (as a provider is): answers every call the same.
UPSTREAM = """
import sys
sys.path.insert(0, sys.argv[1])
from tests.harness.fake_provider import FakeProvider, openai_text
with FakeProvider() as fake:
    for _ in range(int(sys.argv[2])):
        fake.queue(200, openai_text("ok"))
    print(fake.url, flush=True)
    sys.stdin.read()
"""


def proxy_call_ms() -> float:
    """The model proxy's per-call overhead in ms: through it minus straight to the same upstream."""
    import asyncio

    import httpx

    from agentrel.harness.agents.model_proxy import ModelProxy
    from agentrel.harness.agents.model_upstream import Upstream

    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

    async def timed(client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> float:
        t0 = time.perf_counter()
        (await client.post(url, json=body, headers=headers)).raise_for_status()
        return time.perf_counter() - t0

    async def both(url: str) -> tuple[list[float], list[float]]:
        """Alternating, so a busy machine slows both sides alike."""
        key = {"Authorization": "Bearer sk-bench-upstream-key"}
        upstream = Upstream("openai/m", "openai", "m", url + "/v1", key, ("sk-bench-upstream-key",))
        direct, proxied = [], []
        async with ModelProxy(upstream, "bench") as proxy, httpx.AsyncClient() as client:
            token = {"Authorization": f"Bearer {proxy.token}"}
            for _ in range(CALLS):
                direct.append(await timed(client, url + "/v1/chat/completions", key))
                proxied.append(await timed(client, proxy.base_url + "/chat/completions", token))
        return direct, proxied

    argv = [sys.executable, "-c", UPSTREAM, str(ROOT), str(2 * CALLS)]
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as fake:
        assert fake.stdout is not None and fake.stdin is not None
        url = fake.stdout.readline().strip()
        try:
            direct, proxied = asyncio.run(both(url))
        finally:
            fake.stdin.close()
    return (statistics.median(proxied) - statistics.median(direct)) * 1000


def sealed_pairs(tmp: Path, plain: ExternalSpec, common: dict[str, Any]) -> list[tuple[float, float]]:
    """One sealed run, then one unsealed, K times (each an audit of k=1 in its own directory)."""
    pairs = []
    for i in range(K):
        times = []
        for isolation in ("sealed", "none"):
            spec = plain.model_copy(update={"name": f"pair-{isolation}", "isolation": isolation})
            results = tmp / f"pair-{isolation}-{i}"
            audit(models=[], agents=[spec], results=results, **{**common, "k": 1})
            times += per_run(results, spec.subject)
        pairs.append((times[0], times[1]))
    return pairs


async def launch_pairs() -> float:
    """The launch alone: `python -S -c pass` sealed, then as a plain child, in turn; median difference."""
    command = [sys.executable, "-S", "-c", "pass"]
    diffs = []
    for _ in range(4 * K):
        with tempfile.TemporaryDirectory(prefix="agentrel-bench-") as tmp:
            dirs = RunDirs(Path(tmp))
            plan = SealPlan(command=command, io_dir=dirs.io, net_dir=dirs.net, cwd=Path(tmp), ports=[])
            t0 = time.perf_counter()
            await run_sealed(plan, dict(os.environ), 30)
            t1 = time.perf_counter()
            await run_process(command, dict(os.environ), 30)
            diffs.append((t1 - t0) - (time.perf_counter() - t1))
    return statistics.median(diffs)


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
        common = {"k": K, "tasks": [TASK], "concurrency": 1, "sandbox": sb, "show_progress": False}
        audit(models=["scripted/oracle"], results=Path(tmp) / "scripted", **common)  # type: ignore[arg-type]
        for spec in (plain, sdk):
            audit(models=[], agents=[spec], results=Path(tmp) / spec.name, **common)  # type: ignore[arg-type]
        runs = {
            "scripted/oracle": per_run(Path(tmp) / "scripted", "scripted/oracle"),
            "agent/plain": per_run(Path(tmp) / "plain", "agent/plain"),
            "agent/sdk": per_run(Path(tmp) / "sdk", "agent/sdk"),
        }
        pairs = sealed_pairs(Path(tmp), plain, common)
    assert all(len(xs) == K for xs in runs.values()), {m: len(xs) for m, xs in runs.items()}
    runs["sdk import alone"] = sdk_import()
    s, p, d, i = (statistics.mean(xs) for xs in runs.values())
    runs["plain, paired sealed"] = [a for a, _ in pairs]
    runs["plain, paired none"] = [b for _, b in pairs]
    u = statistics.mean(b for _, b in pairs)
    # Medians of paired differences: one slow run on a shared machine does not decide milliseconds.
    extra_ms = statistics.median(a - b for a, b in pairs) * 1000
    launch_ms = asyncio.run(launch_pairs()) * 1000
    proxy_ms = proxy_call_ms()
    print(f"{'agent':<18}{'runs':>6}{'mean s':>10}{'median s':>10}{'max s':>8}")
    for name, xs in runs.items():
        print(
            f"{name:<18}{len(xs):>6}{statistics.mean(xs):>10.3f}{statistics.median(xs):>10.3f}{max(xs):>8.3f}"
        )
    print(
        f"scripted_s={s:.3f} plain_s={p:.3f} sdk_s={d:.3f} overhead_s={p - s:.3f} sdk_overhead_s={d - s:.3f}"
        f" sdk_import_s={i:.3f} ratio={p / s:.2f} load1={os.getloadavg()[0]:.1f}"
        f" target_met={str(p - s < TARGET_S).lower()} unsealed_s={u:.3f} sealed_extra_ms={extra_ms:.0f}"
        f" launch_extra_ms={launch_ms:.0f}"
        f" sealed_target_met={str(extra_ms < SEALED_TARGET_MS).lower()}"
        f" proxy_call_ms={proxy_ms:.2f}"
    )


if __name__ == "__main__":
    main()
