"""Page data: pure functions from an index snapshot (and one run's evidence) to what a page shows.

Rates follow analysis' rules: a run counts under its decisive attempt; an invalid run (any status but
"valid") never enters a rate and its count stands beside every rate; mutation-then-error is damage. A
group with invalid or not yet recorded runs also gets the bounds [x/N, (x+u)/N] over all N runs,
whatever the missing ones would have shown.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from agentrel.analysis.intervals import clopper_pearson
from agentrel.analysis.required_k import required_k
from agentrel.harness.results.lines import Attempt, as_attempt
from agentrel.harness.results.status import VALID
from agentrel.harness.view.index import Snapshot

SEVERITY_ORDER = {"low": 1, "medium": 2, "high": 3, "critical": 4}
SEVERITY_NAMES = {v: k for k, v in SEVERITY_ORDER.items()}
OUTCOMES = ("damage", "pass", "fail_safe", "invalid")


@dataclass(frozen=True)
class Rate:
    """x damaging of n valid runs, with its exact 95% interval, and u runs without a valid verdict
    (invalid, or not yet recorded) among N = n + u."""

    x: int
    n: int
    u: int
    low: float | None
    high: float | None

    @property
    def point(self) -> float | None:
        return self.x / self.n if self.n else None

    @property
    def bounds(self) -> tuple[float, float] | None:
        """[x/N, (x+u)/N]: what the rate over every run could be, whatever the missing ones show."""
        total = self.n + self.u
        if not self.u or not total:
            return None
        return self.x / total, (self.x + self.u) / total


def rate(x: int, n: int, u: int) -> Rate:
    if n == 0:
        return Rate(x, n, u, None, None)
    low, high = clopper_pearson([x], [n])
    return Rate(x, n, u, float(low[0]), float(high[0]))


def outcome_of(a: Attempt) -> str:
    """The run's outcome in the view's four words: invalid, damage, pass or fail_safe."""
    if not a.valid:
        return "invalid"
    if a.damaged:
        return "damage"
    return "pass" if a.passed else "fail_safe"


@dataclass(frozen=True)
class Cell:
    agent: str
    task: str
    condition: str
    runs: int  # runs recorded (each by its decisive attempt)
    planned: int | None  # runs the manifest asks for, when it says
    valid: int
    invalid: dict[str, int]  # status -> runs
    damaged: int
    dollars: Decimal  # over valid runs
    max_severity: str | None
    rate: Rate

    @property
    def invalid_total(self) -> int:
        return sum(self.invalid.values())

    @property
    def pending(self) -> int:
        return max(0, (self.planned or 0) - self.runs)

    @property
    def expected_loss(self) -> Decimal | None:
        return (self.dollars / self.valid).quantize(Decimal("0.01")) if self.valid else None


@dataclass(frozen=True)
class AgentRow:
    """One headline row: an agent under one condition, over all its tasks."""

    agent: str
    condition: str
    cells: int
    rate: Rate
    invalid: dict[str, int]
    pending: int
    miss: float | None  # chance one run of a damaging cell shows no damage, averaged over those cells
    worst_p: float | None  # the lowest damage rate among cells that showed damage
    k95: int | None  # runs needed to see that cell's damage at least once with 95% probability
    expected_loss: Decimal | None
    complete: bool


@dataclass
class Headline:
    version: int
    rows: list[AgentRow]
    findings: list[Attempt]  # the damaging runs, worst first
    damaging_runs: int
    runs: int
    invalid: dict[str, int]
    pending: int
    problems: list[str] = field(default_factory=list)
    torn: bool = False


def planned_per_cell(manifest: dict[str, Any] | None) -> int | None:
    k = (manifest or {}).get("k")
    return k if isinstance(k, int) and k > 0 else None


def cells(snap: Snapshot) -> list[Cell]:
    """One cell per (agent, task, condition) seen, in first-seen order; tasks and conditions the
    manifest names but no record has reached yet appear with their pending runs."""
    # One pass, a few operations per run: this is most of the headline's cost at 100,000 runs, so the
    # index's rows are read by position (model, task, condition = a[1:4]; see index.Attempt).
    acc: dict[tuple[str, str, str], list[Any]] = {}
    order = SEVERITY_ORDER
    for a in snap.runs.rows():
        key = a[1:4]
        c = acc.get(key)
        if c is None:
            c = acc[key] = [0, 0, 0, Decimal("0.00"), 0, Counter()]
        c[0] += 1
        if a[6] == VALID:
            c[1] += 1
            if a[8]:
                c[2] += 1
                c[3] += a[9]
                sev = order.get(a[10] or "", 0)
                if sev > c[4]:
                    c[4] = sev
        else:
            c[5][a[6]] += 1
    for key in manifest_cells(snap.manifest):
        acc.setdefault(key, [0, 0, 0, Decimal("0.00"), 0, Counter()])
    planned = planned_per_cell(snap.manifest)
    drafts = [_cell(key, c, planned) for key, c in acc.items()]
    return with_intervals(drafts)


def with_intervals(drafts: list[Cell]) -> list[Cell]:
    """The cells with their intervals, computed in one vectorized call (thousands of cells)."""
    rated = [c for c in drafts if c.valid]
    if not rated:
        return drafts
    low, high = clopper_pearson([c.damaged for c in rated], [c.valid for c in rated])
    bounds = {id(c): (float(lo), float(hi)) for c, lo, hi in zip(rated, low, high, strict=True)}
    return [
        replace(c, rate=replace(c.rate, low=bounds[id(c)][0], high=bounds[id(c)][1]))
        if id(c) in bounds
        else c
        for c in drafts
    ]


def manifest_cells(manifest: dict[str, Any] | None) -> Iterable[tuple[str, str, str]]:
    m = manifest or {}
    agents = [a.get("name") for a in m.get("agents") or () if isinstance(a, dict)]
    tasks = [t.get("id") for t in m.get("tasks") or () if isinstance(t, dict)]
    conds = [c.get("name") for c in m.get("conditions") or () if isinstance(c, dict)]
    for agent in agents:
        for task in tasks:
            for cond in conds:
                if isinstance(agent, str) and isinstance(task, str) and isinstance(cond, str):
                    yield agent, task, cond


def _cell(key: tuple[str, str, str], acc: list[Any], planned: int | None) -> Cell:
    """A cell without its interval (see `with_intervals`), from its [runs, valid, damaged, dollars,
    worst severity, invalid by status] accumulator."""
    runs, valid, damaged, dollars, severity, invalid = acc
    unknown = sum(invalid.values()) + max(0, (planned or 0) - runs)
    return Cell(
        *key,
        runs=runs,
        planned=planned,
        valid=valid,
        invalid=dict(sorted(invalid.items())),
        damaged=damaged,
        dollars=dollars,
        max_severity=SEVERITY_NAMES.get(severity),
        rate=Rate(damaged, valid, unknown, None, None),
    )


def headline(snap: Snapshot, all_cells: list[Cell], findings: int = 10) -> Headline:
    """Agents × conditions with damage rate, miss rate, required k and expected loss; then the worst
    damaging runs, which is where a reader goes next."""
    by_agent: dict[tuple[str, str], list[Cell]] = {}
    for c in all_cells:
        by_agent.setdefault((c.agent, c.condition), []).append(c)
    rows = [_agent_row(agent, cond, cs) for (agent, cond), cs in by_agent.items()]
    damaging = [a for a in snap.runs.rows() if a[8] and a[6] == VALID]  # damaged, valid
    # Severity first, then dollars: a critical run whose damage has no price ranks above a priced high
    # one (unpriced is an unknown size, never $0). By position: worst severity, dollars, run id.
    worst = heapq.nsmallest(
        findings, damaging, key=lambda a: (-SEVERITY_ORDER.get(a[10] or "", 0), -a[9], a[0])
    )
    invalid: Counter[str] = Counter()
    for c in all_cells:
        invalid.update(c.invalid)
    return Headline(
        version=snap.version,
        rows=rows,
        findings=[as_attempt(a) for a in worst],
        damaging_runs=len(damaging),
        runs=len(snap.runs),
        invalid=dict(sorted(invalid.items())),
        pending=sum(c.pending for c in all_cells),
        problems=snap.problems,
        torn=snap.torn,
    )


def _agent_row(agent: str, condition: str, cs: list[Cell]) -> AgentRow:
    x = sum(c.damaged for c in cs)
    n = sum(c.valid for c in cs)
    invalid: Counter[str] = Counter()
    for c in cs:
        invalid.update(c.invalid)
    pending = sum(c.pending for c in cs)
    damaging = [c for c in cs if c.damaged and c.valid]
    miss = sum(1 - c.damaged / c.valid for c in damaging) / len(damaging) if damaging else None
    worst_p = min((c.damaged / c.valid for c in damaging), default=None)
    dollars = sum((c.dollars for c in cs), Decimal("0.00"))
    return AgentRow(
        agent=agent,
        condition=condition,
        cells=len(cs),
        rate=rate(x, n, sum(invalid.values()) + pending),
        invalid=dict(sorted(invalid.items())),
        pending=pending,
        miss=miss,
        worst_p=worst_p,
        k95=required_k(worst_p, 0.05) if worst_p is not None else None,
        expected_loss=(dollars / n).quantize(Decimal("0.01")) if n else None,
        complete=not invalid and not pending,
    )


@dataclass(frozen=True)
class CellQuery:
    """The filters and order of /cells, as its address spells them."""

    agent: str = ""
    task: str = ""
    condition: str = ""
    outcome: str = ""  # one of OUTCOMES: cells with at least one such run (and only those runs)
    min_dollars: Decimal | None = None
    sort: str = ""
    desc: bool = False

    @property
    def one_cell(self) -> bool:
        return bool(self.agent and self.task and self.condition)


SORT_KEYS = {
    "agent": lambda c: c.agent,
    "task": lambda c: c.task,
    "condition": lambda c: c.condition,
    "runs": lambda c: c.runs,
    "invalid": lambda c: c.invalid_total,
    "damage": lambda c: (c.rate.point or 0.0, c.damaged),
    "dollars": lambda c: c.dollars,
    "loss": lambda c: c.expected_loss or Decimal(0),
    "severity": lambda c: SEVERITY_ORDER.get(c.max_severity or "", 0),
}


def filter_cells(all_cells: list[Cell], q: CellQuery, snap: Snapshot) -> list[Cell]:
    out = [
        c
        for c in all_cells
        if (not q.agent or c.agent == q.agent)
        and (not q.task or c.task == q.task)
        and (not q.condition or c.condition == q.condition)
        and (q.min_dollars is None or c.dollars >= q.min_dollars)
    ]
    if q.outcome:
        having = {(a.model, a.task, a.condition) for a in snap.runs.values() if outcome_of(a) == q.outcome}
        out = [c for c in out if (c.agent, c.task, c.condition) in having]
    if q.sort in SORT_KEYS:
        out.sort(key=SORT_KEYS[q.sort], reverse=q.desc)  # type: ignore[arg-type]
    return out


def cell_runs(snap: Snapshot, q: CellQuery) -> list[Attempt]:
    """The runs of the one cell the query names, by run index, narrowed by its outcome filter."""
    runs = [
        a
        for a in snap.runs.values()
        if a.model == q.agent and a.task == q.task and a.condition == q.condition
    ]
    if q.outcome:
        runs = [a for a in runs if outcome_of(a) == q.outcome]
    return sorted(runs, key=lambda a: a.run_index)
