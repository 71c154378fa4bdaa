"""The library's front door: what `agentrel.audit`, `agentrel.analyze` and the rest do.

Each function is the one the CLI command of the same name calls, with the same defaults
(`harness.defaults`), so a notebook and a terminal audit the same way. `audit` is synchronous and works
inside a running event loop (Jupyter): the audit owns an event loop of its own, so when the calling
thread already runs one, the audit runs on a worker thread and this call waits for it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentrel.analysis.normalized import LoadedInput
    from agentrel.analysis.pipeline import Analysis
    from agentrel.dsl.api import Verdict
    from agentrel.harness.publication.compare import Comparison
    from agentrel.harness.publication.publish import PublishOutcome
    from agentrel.harness.results.directory import ResultsDir
    from agentrel.harness.results.record import Attempts, RunRecord
    from agentrel.harness.run.audit import AuditOutcome
    from agentrel.harness.run.request import AuditRequest

__all__ = ["Results", "analyze", "audit", "audit_async", "compare", "label", "load_results", "publish"]


def audit(
    request: AuditRequest | Sequence[str] | None = None, /, *, progress: bool = False, **fields: Any
) -> AuditOutcome:
    """Run an audit: `request` (an `AuditRequest`), or the request its keyword fields build, with the
    models as the first argument if you like: `audit(["openai/gpt-4o"], k=16, tasks=["itsm-*"])`.

    Every capability of `agentrel audit` is a field of `AuditRequest` (environment, agent programs,
    conditions, faults, `until`, budgets, prices, the executor, `plan`, ...), with the CLI's defaults and
    its checks: bad input raises `agentrel.UserError` with the CLI's one-line message. Resumable as the CLI
    is: the same request into the same results directory runs only what is pending."""
    from agentrel.harness.run.audit import audit as run_audit
    from agentrel.harness.run.request import AuditRequest

    if request is None or isinstance(request, AuditRequest):
        asked = request if request is not None else AuditRequest.of(**fields)
        if request is not None and fields:
            raise TypeError(f"audit() takes a request or its fields, not both: {', '.join(fields)}")
    else:
        asked = AuditRequest.of(models=tuple(request), **fields)
    run = functools.partial(run_audit, asked, show_progress=progress)
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop in this thread: the audit may start its own here
        return run()
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="agentrel-audit") as pool:
        return pool.submit(run).result()


async def audit_async(*args: Any, **kwargs: Any) -> AuditOutcome:
    """`audit` for async code: the same arguments, awaited without blocking the caller's loop."""
    return await asyncio.to_thread(lambda: audit(*args, **kwargs))


@dataclass(frozen=True)
class Results:
    """A results directory, read: every attempt as a typed record, each run's decisive attempt, and the
    same runs as data frames (valid runs, damage events, invalid runs, superseded attempts)."""

    path: Path
    attempts: Attempts  # run id -> its attempts, in file order
    runs: list[RunRecord]  # each run's decisive attempt (`harness.results.attempts`)
    frames: LoadedInput

    @property
    def directory(self) -> ResultsDir:
        from agentrel.harness.results.directory import ResultsDir

        return ResultsDir(self.path)


def load_results(path: str | Path) -> Results:
    """Read a results directory through its owner (`harness.results`) into typed records and frames."""
    from agentrel.analysis.inputs import load_input
    from agentrel.harness.results.directory import ResultsDir

    where = Path(path)
    directory = ResultsDir(where)
    attempts = directory.attempts()
    return Results(where, attempts, directory.records(attempts), load_input(where))


def analyze(
    source: str | Path | Results, *, n_boot: int = 2000, seed: int = 0, alpha: float = 0.05
) -> Analysis:
    """Every estimate the report shows, from a results directory, an outcomes CSV, or loaded `Results`."""
    from agentrel.analysis.inputs import load_input
    from agentrel.analysis.pipeline import analyze as run_analysis

    loaded = source.frames if isinstance(source, Results) else load_input(Path(source))
    return run_analysis(loaded, n_boot=n_boot, seed=seed, alpha=alpha)


def label(
    spec: str | Path,
    before: str | Path,
    after: str | Path,
    *,
    params: dict[str, Any] | None = None,
    final_message: str | None = None,
    errored: bool = False,
    stalled: bool = False,
) -> Verdict:
    """The verdict of a damage spec on two state dumps (`agentrel label`), with no database."""
    from agentrel.dsl.api import RunFacts, load_spec
    from agentrel.dsl.api import label as label_run
    from agentrel.dsl.state import load

    facts = RunFacts(final_message=final_message, errored=errored, stalled=stalled)
    return label_run(load_spec(spec), params, load(Path(before)), load(Path(after)), facts)


def publish(results: str | Path, out: str | Path | None = None) -> PublishOutcome:
    """Validate a frozen results directory; write and register its scorecard, or its evidence report."""
    from agentrel.harness.publication.publish import publish as run_publish

    return run_publish(Path(results), Path(out) if out is not None else None)


def compare(*scorecards: str | Path) -> Comparison:
    """Compare publishable scorecards on one protocol, paired on shared seeds; raises when refused."""
    from agentrel.harness.protocol.registry import default_registry_path
    from agentrel.harness.publication.compare import compare_scorecards

    return compare_scorecards([Path(s) for s in scorecards], default_registry_path())
