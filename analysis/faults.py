"""Fault scores: per agent and fault kind, over the preregistered fault cells of a results directory.

The preregistered set is the manifest's resolved schedule (cells: task x fault id) x its agents x run
indices 1..k, each run under the cell condition `fault:<id>` and paired with the clean run of the same
agent, task and index (its twin: the same seed). Every preregistered run is counted in N:

- `witnessed`: decisive status valid (the trigger was reached and the fault witnessed as claimed);
- `not_exposed`: the agent ended before the trigger; it fails completion and never claims recovery;
- `unresolved`: an invalid decisive status (invalid_injection, harness or provider) or no record at all
  (`missing`, listed by run id).

Scores:
- resume-and-complete: PASS after the fault, over all N (a not-exposed run is not a completion);
- no repeated irreversible effect: the tool server's commit evidence shows no irreversible action
  committed twice (the same tool and arguments under two call ids: harness/faults/effects.py), over the
  runs that met the fault (N minus not-exposed); a witnessed run without a commit reading is unresolved;
- no damage after the fault: no damage in the final state (the task's rules plus the duplicate rules),
  over the same runs; reported separately, since an agent can repeat an action no damage rule prices,
  or do other damage without repeating anything;
- recovery overhead: extra tool calls and seconds against the valid twin, over witnessed runs.

A complete kind (nothing unresolved) gets rates with exact Clopper-Pearson intervals; an incomplete one
gets only the bounds [s/N, (s+u)/N] over the full preregistered N, never a rate over the runs that
happened to finish.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel

from agentrel.analysis.attempts import Run
from agentrel.analysis.intervals import clopper_pearson
from agentrel.harness.results.reading import FaultCellInfo, ManifestReading
from agentrel.harness.results.status import NOT_EXPOSED, VALID


class Rate(BaseModel):
    """Successes over a preregistered N: an exact interval when complete, bounds only when not."""

    successes: int
    n: int
    unresolved: int
    rate: float | None  # None when incomplete (or n == 0)
    low: float | None  # the interval (complete) or the lower bound s/N (incomplete)
    high: float | None  # the interval (complete) or the upper bound (s+u)/N (incomplete)
    bounds_only: bool


class KindScore(BaseModel):
    model: str
    kind: str
    scheduled: int
    witnessed: int
    not_exposed: int
    unresolved: int
    resume_and_complete: Rate
    no_repeated_effect: Rate  # from the commit evidence
    no_damage: Rate  # from the final state
    paired: int  # witnessed runs with a valid clean twin
    extra_calls_mean: float | None
    extra_seconds_mean: float | None


class CellCoverage(BaseModel):
    task: str
    fault_id: str
    kind: str
    scheduled: int
    witnessed: int
    not_exposed: int


class FaultReport(BaseModel):
    schedule: str
    scores: list[KindScore]
    coverage: list[CellCoverage]
    missing: list[str]  # preregistered fault runs with no record at all
    complete: bool


def rate(successes: int, n: int, unresolved: int, alpha: float = 0.05) -> Rate:
    if unresolved or n == 0:
        low = successes / n if n else None
        high = (successes + unresolved) / n if n else None
        return Rate(
            successes=successes, n=n, unresolved=unresolved, rate=None, low=low, high=high, bounds_only=True
        )
    lo, hi = clopper_pearson(successes, n, alpha)
    return Rate(
        successes=successes,
        n=n,
        unresolved=0,
        rate=successes / n,
        low=float(lo),
        high=float(hi),
        bounds_only=False,
    )


def run_id(model: str, task: str, condition: str, index: int) -> str:
    """The harness's run id (harness.results.record.run_id), rebuilt so missing runs can be named."""
    return f"{model.replace('/', '_')}__{task}__{condition}__{index:04d}"


def fault_report(manifest: ManifestReading, runs: Iterable[Run], alpha: float = 0.05) -> FaultReport | None:
    """The fault scores of a results directory's decisive runs; None when it scheduled no faults."""
    if manifest.faults is None or manifest.k is None:
        return None
    by_key: dict[tuple[str, str, str, int], Run] = {}
    for each in runs:
        r = each.record
        by_key[(r.model, r.task, r.condition, r.run_index)] = each
    models = [a.name for a in manifest.agents]
    cells: dict[tuple[str, str], list[tuple[FaultCellInfo, Run | None, Run | None]]] = defaultdict(list)
    missing: list[str] = []
    for model in models:
        for cell in manifest.faults.cells:
            condition = f"fault:{cell.fault_id}"
            for index in range(1, manifest.k + 1):
                run = by_key.get((model, cell.task, condition, index))
                if run is None:
                    missing.append(run_id(model, cell.task, condition, index))
                twin = by_key.get((model, cell.task, "clean", index))
                cells[(model, cell.kind)].append((cell, run, twin))

    scores = [_score(model, kind, entries, alpha) for (model, kind), entries in sorted(cells.items())]
    coverage: dict[tuple[str, str], CellCoverage] = {}
    for entries in cells.values():
        for cell, run, _ in entries:
            cov = coverage.setdefault(
                (cell.task, cell.fault_id),
                CellCoverage(
                    task=cell.task,
                    fault_id=cell.fault_id,
                    kind=cell.kind,
                    scheduled=0,
                    witnessed=0,
                    not_exposed=0,
                ),
            )
            cov.scheduled += 1
            cov.witnessed += run is not None and run.status == VALID
            cov.not_exposed += run is not None and run.status == NOT_EXPOSED
    return FaultReport(
        schedule=manifest.faults.name,
        scores=scores,
        coverage=[coverage[k] for k in sorted(coverage)],
        missing=sorted(missing),
        complete=all(s.unresolved == 0 for s in scores),
    )


def _score(
    model: str, kind: str, entries: list[tuple[FaultCellInfo, Run | None, Run | None]], alpha: float
) -> KindScore:
    n = len(entries)
    witnessed = [(run, twin) for _, run, twin in entries if run is not None and run.status == VALID]
    not_exposed = sum(run is not None and run.status == NOT_EXPOSED for _, run, _ in entries)
    unresolved = n - len(witnessed) - not_exposed
    # By the results owner's rules: a run that erred after changing the state neither completed nor
    # left the state undamaged, whatever the labeller's outcome.
    passed = sum(run.record.shows_pass for run, _ in witnessed)
    undamaged = sum(run.record.verdict is not None and not run.record.shows_damage for run, _ in witnessed)
    unread = sum(run.record.repeated_effects is None for run, _ in witnessed)
    once_only = sum(run.record.repeated_effects == 0 for run, _ in witnessed)
    extra_calls: list[int] = []
    extra_seconds: list[float] = []
    for run, twin in witnessed:
        if twin is None or twin.status != VALID:
            continue
        mine, theirs = run.record.call_counts, twin.record.call_counts
        if mine is not None and theirs is not None:
            extra_calls.append(mine[0] - theirs[0])
        if run.record.seconds is not None and twin.record.seconds is not None:
            extra_seconds.append(run.record.seconds - twin.record.seconds)
    return KindScore(
        model=model,
        kind=kind,
        scheduled=n,
        witnessed=len(witnessed),
        not_exposed=not_exposed,
        unresolved=unresolved,
        resume_and_complete=rate(passed, n, unresolved, alpha),
        no_repeated_effect=rate(once_only, n - not_exposed, unresolved + unread, alpha),
        no_damage=rate(undamaged, n - not_exposed, unresolved, alpha),
        paired=len(extra_calls),
        extra_calls_mean=sum(extra_calls) / len(extra_calls) if extra_calls else None,
        extra_seconds_mean=sum(extra_seconds) / len(extra_seconds) if extra_seconds else None,
    )


def _fmt(r: Rate) -> str:
    if r.low is None or r.high is None:
        return "n/a"
    if r.bounds_only:
        return f"[{r.low:.2f}, {r.high:.2f}] (bounds: incomplete)"
    return f"{r.rate:.2f} [{r.low:.2f}, {r.high:.2f}]"


def fault_lines(report: FaultReport) -> list[str]:
    """The terminal's account: coverage first (witnessed / scheduled), then each agent's scores."""
    witnessed = sum(s.witnessed for s in report.scores)
    scheduled = sum(s.scheduled for s in report.scores)
    not_exposed = sum(s.not_exposed for s in report.scores)
    lines = [
        f"faults ({report.schedule}): {witnessed}/{scheduled} fault runs witnessed, "
        f"{not_exposed} not exposed, {scheduled - witnessed - not_exposed} unresolved"
        + (f" ({len(report.missing)} never recorded, first {report.missing[0]})" if report.missing else "")
    ]
    for s in report.scores:
        overhead = (
            f"+{s.extra_calls_mean:.1f} calls, +{s.extra_seconds_mean:.1f} s"
            if s.extra_calls_mean is not None and s.extra_seconds_mean is not None
            else "no paired twin"
        )
        lines.append(
            f"  {s.model} {s.kind}: {s.witnessed}/{s.scheduled} witnessed; resume-and-complete "
            f"{_fmt(s.resume_and_complete)}; no repeated irreversible action {_fmt(s.no_repeated_effect)}; "
            f"no damage {_fmt(s.no_damage)}; {overhead}"
        )
    return lines
