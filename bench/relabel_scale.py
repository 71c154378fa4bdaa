"""Scale benchmark for publication's re-derivation: label every decisive run of 10,000 again from its dumps.

A real audit on the local cluster (three agents, three tasks, K=8, 72 runs with real dumps, transcripts
and verdicts) is replicated to 10,000 runs: each copy is a new run index of the same cell with the same
stored dumps, as K=10,000/72 would store them (dumps are content-addressed, so runs that leave the same
state share one file). `rederive` then labels each decisive run again.

Side by side in the same run:
  relabel_seconds   `rederive` over the 10,000 runs, as stored (states labelled once each, in parallel);
  label_ms          one run labelled from its dumps as `rederive` does it, the template already read (the
                    median of the 72): reading the after-state's delta, rebuilding it, labelling;
  worst_seconds     what 10,000 runs would take if every run had left a state of its own:
                    10,000 x label_ms / workers (the cost a model that never repeats itself could reach).

Last line: runs=<n> distinct_states=<d> relabel_seconds=<a> label_ms=<b> worst_seconds=<c>
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentrel.dsl.api import RunFacts, label, load_spec  # noqa: E402
from agentrel.dsl.state import State  # noqa: E402
from agentrel.harness.publication.rederive import rederive  # noqa: E402
from agentrel.harness.results import layout  # noqa: E402
from agentrel.harness.results.directory import ResultsDir  # noqa: E402
from agentrel.harness.results.manifest import read_manifest  # noqa: E402
from agentrel.harness.results.record import run_id  # noqa: E402
from agentrel.harness.run.audit import audit  # noqa: E402
from agentrel.harness.tasks import load_suite  # noqa: E402
from agentrel.sandbox.sandbox import Sandbox  # noqa: E402

RUNS = 10_000
MODELS = ["scripted/oracle", "scripted/overreach", "reference/stochastic"]
TASKS = ["itsm-cab-window", "csm-double-charge", "csm-goodwill-cap"]
K = 8


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("AGENTREL_HOME", str(Path(tmp) / "home"))
        sandbox = Sandbox.open()
        results = Path(tmp) / "r"
        suite = {t.id for t in load_suite()}
        tasks = [t for t in TASKS if t in suite]
        audit(
            models=MODELS,
            k=K,
            tasks=tasks,
            concurrency=2,
            results=results,
            sandbox=sandbox,
            show_progress=False,
        )
        rd = ResultsDir(results)
        real = rd.records()
        manifest = read_manifest(results) or {}
        label_ms = _label_each(rd, real, manifest)
        _replicate(results, real, RUNS)
        t0 = time.perf_counter()
        problems = rederive(results, manifest)
        relabel = time.perf_counter() - t0
        assert problems == [], problems[:3]
        workers = len(os.sched_getaffinity(0))
        distinct = len({(r.task, r.after_digest, r.final_message, r.stalled) for r in real})
        print(f"real audit: {len(real)} runs, {distinct} distinct (task, state, facts); workers={workers}")
        print(f"rederive {RUNS} runs: {relabel:.2f} s; one label from two dumps: {label_ms:.1f} ms")
        worst = RUNS * label_ms / 1000 / workers
        print(
            f"runs={RUNS} distinct_states={distinct} relabel_seconds={relabel:.2f} "
            f"label_ms={label_ms:.1f} worst_seconds={worst:.1f}"
        )
        sandbox.server.destroy()


def _label_each(rd: ResultsDir, runs: list, manifest: dict) -> float:  # type: ignore[type-arg]
    """The median time of one run's label with its template read: read the after-state, label."""
    specs = {t.id: load_spec(t.spec_path) for t in load_suite()}
    params = {t["id"]: t.get("params") or {} for t in manifest["tasks"]}
    bases: dict[str, State] = {}
    for rec in runs:
        rd.load_dump(rec.before_digest, bases)
    times = []
    for rec in runs:
        t0 = time.perf_counter()
        before, after = rd.load_dump(rec.before_digest, bases), rd.load_dump(rec.after_digest, bases)
        facts = RunFacts(final_message=rec.final_message, errored=rec.error is not None, stalled=rec.stalled)
        label(specs[rec.task], params[rec.task], before, after, facts)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def _replicate(results: Path, runs: list, total: int) -> None:  # type: ignore[type-arg]
    """More runs of the same cells, each naming the same stored dumps and transcript digest."""
    lines = []
    index = K
    while len(runs) + len(lines) < total:
        for rec in runs:
            if len(runs) + len(lines) >= total:
                break
            rid = run_id(rec.model, rec.task, rec.condition, index)
            lines.append(rec.model_copy(update={"run_id": rid, "run_index": index}).model_dump_json() + "\n")
        index += 1
    with (results / layout.RUNS).open("a") as fh:
        fh.writelines(lines)


if __name__ == "__main__":
    main()
