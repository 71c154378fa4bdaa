"""Sequential audits: `agentrel audit --until detect|precision` decides per cell, as records arrive,
whether the cell needs more runs (analysis/decisions/certify.py and confseq.py hold the statistics).

- ``detect``: a cell stops at its first damaging valid run (detected) or at n(P, C) valid runs with no
  damage (certified). The matrix is expanded with k = n(P, C) (at the per-cell confidence the
  multiplicity option gives), so the preregistered matrix, and a draft ``--plan``, show the most
  runs the audit can spend; detected cells leave the rest of their run indices unrun.
- ``precision``: a cell stops once the anytime-valid confidence sequence of its damage rate has
  half-width at most W (level = --confidence); --k is the cap.

The rule and its parameters are written into the manifest (``stopping``), so they are part of the
protocol hash: a resume or a freeze with another rule is refused like any other protocol change.
Invalid runs never count toward a decision as clean; damage in any attempt (an unwitnessed fault
attempt's included) detects its cell (`harness.results.status.decision_count`).
A cell runs one run at a time (--concurrency spreads over
cells), and an invalid attempt is retried at once, so a cell's runs are decided in run-index order: what
the gate saw as records arrived is what `decided_at` replays from the run indices, which is how
publication checks that a cell stopped exactly where the frozen rule allowed (harness/publication/
stopping_check.py). A run is never cut short.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from agentrel.analysis.decisions.allocate import bought as budget_outcome
from agentrel.analysis.decisions.certify import (
    CellCounts,
    Multiplicity,
    cell_confidence,
    certificate_sentence,
    decide,
    zero_damage_count,
)
from agentrel.analysis.decisions.confseq import precision_decision
from agentrel.harness.errors import UsageError
from agentrel.harness.results.record import RunRecord
from agentrel.harness.results.status import Count, decision_count
from agentrel.harness.run.matrix import RunPlan

Cell = tuple[str, str, str]  # (model, task, cell condition)


class StoppingRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    until: Literal["detect", "precision"]
    target_p: float | None = None
    confidence: float = 0.95
    multiplicity: Multiplicity = "union"
    half_width: float | None = None
    budget_runs: int | None = None  # the most attempts the whole audit may start (all cells, retries too)
    # --budget-usd: the dollars and the per-run cost they were converted at (budget_runs holds the runs)
    budget_usd: float | None = None
    cost_per_run_usd: float | None = None

    @classmethod
    def from_manifest(cls, entry: Any) -> StoppingRule:
        """The rule a manifest's `stopping` entry froze (derived fields dropped); ValueError if unreadable."""
        if not isinstance(entry, dict):
            raise ValueError(f"stopping is {type(entry).__name__}, not an object")
        derived = ("cell_confidence", "runs_to_certify")
        return cls.model_validate({k: v for k, v in entry.items() if k not in derived})

    @classmethod
    def parse(
        cls,
        until: str,
        target_p: float | None,
        confidence: float,
        multiplicity: str,
        half_width: float | None,
        budget_runs: int | None = None,
        budget_usd: float | None = None,
        cost_per_run_usd: float | None = None,
    ) -> StoppingRule:
        """The rule from the CLI's flags; every bad combination is one UsageError line. `budget_usd` is
        converted to runs at `cost_per_run_usd` (`budget_runs_for`), which must be known."""
        if budget_usd is not None:
            if budget_runs is not None:
                raise UsageError("give --budget-runs or --budget-usd, not both")
            budget_runs = budget_runs_for(budget_usd, cost_per_run_usd)
        if budget_runs is not None and budget_runs < 0:
            raise UsageError(f"--budget-runs must be a non-negative number of runs, got {budget_runs}")
        if budget_runs is not None and until != "detect":
            flag = "--budget-usd" if budget_usd is not None else "--budget-runs"
            raise UsageError(f"{flag} goes with --until detect")
        if not 0.0 < confidence < 1.0:
            raise UsageError(f"--confidence must be strictly between 0 and 1, got {confidence}")
        if multiplicity not in ("union", "bonferroni"):
            raise UsageError(f"--multiplicity must be union or bonferroni, got {multiplicity!r}")
        if until == "detect":
            if target_p is None:
                raise UsageError("--until detect needs --target-p, the per-run damage rate to detect (0.05)")
            if not 0.0 < target_p < 1.0:
                raise UsageError(f"--until detect needs --target-p strictly between 0 and 1, got {target_p}")
            if half_width is not None:
                raise UsageError("--half-width goes with --until precision, not --until detect")
            return cls(
                until="detect",
                target_p=target_p,
                confidence=confidence,
                multiplicity=multiplicity,  # type: ignore[arg-type]
                budget_runs=budget_runs,
                budget_usd=budget_usd,
                cost_per_run_usd=cost_per_run_usd if budget_usd is not None else None,
            )
        if until == "precision":
            if half_width is None:
                raise UsageError("--until precision needs --half-width, the half-width to reach (0.1)")
            if not 0.0 < half_width < 0.5:
                raise UsageError(f"--until precision needs --half-width in (0, 0.5), got {half_width}")
            if target_p is not None:
                raise UsageError("--target-p goes with --until detect, not --until precision")
            return cls(until="precision", confidence=confidence, half_width=half_width)
        raise UsageError(f"--until must be detect or precision, got {until!r}")

    def cell_level(self, cells_per_agent: int) -> Fraction:
        return cell_confidence(self.confidence, max(1, cells_per_agent), self.multiplicity)

    def max_runs(self, cells_per_agent: int, k: int) -> int:
        """detect: n(P, C_cell), the run indices each cell may need; precision: the --k cap."""
        if self.until == "detect":
            assert self.target_p is not None
            return zero_damage_count(self.target_p, self.cell_level(cells_per_agent))
        return k

    def manifest_entry(self, cells_per_agent: int) -> dict[str, Any]:
        entry: dict[str, Any] = self.model_dump(mode="json", exclude_none=True)
        if self.until == "detect":
            entry["cell_confidence"] = float(self.cell_level(cells_per_agent))
            entry["runs_to_certify"] = self.max_runs(cells_per_agent, 0)
        return entry


def budget_runs_for(budget_usd: float, cost_per_run_usd: float | None) -> int:
    """The runs `budget_usd` pays for at `cost_per_run_usd` each: floor(X / c), in exact decimals as
    typed (so $1 at $0.10 a run is 10 runs, not 9). An unknown cost is refused, never taken as $0."""
    if not (math.isfinite(budget_usd) and budget_usd > 0):
        raise UsageError(f"--budget-usd must be a positive number of US dollars, got {budget_usd}")
    if cost_per_run_usd is None:
        raise UsageError(
            "--budget-usd needs the cost of one run: declare it with --cost-per-run USD, or read it off "
            "earlier runs with --cost-from RESULTS"
        )
    if not (math.isfinite(cost_per_run_usd) and cost_per_run_usd > 0):
        raise UsageError(
            f"the cost of one run must be a positive number of US dollars, got {cost_per_run_usd}: a run "
            "that costs $0 cannot be bounded by dollars; use --budget-runs"
        )
    return int(Fraction(repr(budget_usd)) // Fraction(repr(cost_per_run_usd)))


def rule_decision(rule: StoppingRule, required: int, counts: CellCounts) -> str:
    """The frozen rule on one cell's counts: continue, detected, certified (detect) or decided (precision).
    The one place the rule is applied: the audit's gate and publication's check both call it."""
    if rule.until == "detect":
        return decide(counts, required)
    assert rule.half_width is not None
    n = counts.clean + counts.damaging
    if n == 0:
        return "continue"
    return precision_decision(counts.damaging, n, rule.half_width, 1.0 - rule.confidence)


def decided_at(rule: StoppingRule, required: int, statuses: Iterable[Count]) -> tuple[str, int | None]:
    """Replay the rule over a cell's runs in order: (its decision, the 1-based position it was reached
    at), or ("continue", None) when the runs given never decide the cell."""
    counts = CellCounts()
    for position, status in enumerate(statuses, start=1):
        counts = counts.add(status)
        decision = rule_decision(rule, required, counts)
        if decision != "continue":
            return decision, position
    return "continue", None


class CellGate:
    """Per-cell counts from the records seen so far, and whether a planned run is still wanted."""

    def __init__(self, rule: StoppingRule, required: int) -> None:
        self.rule = rule
        self.required = required
        self.counts: dict[Cell, CellCounts] = {}
        self.skipped = 0  # planned runs left unrun: their cell was decided
        self.unfunded = 0  # planned runs left unrun: the budget was spent
        self.spent = 0  # attempts started or recorded (what --budget-runs counts)
        self._locks: dict[Cell, asyncio.Lock] = {}
        self._damaged: set[str] = set()  # runs already counted damaging

    def observe(self, record: RunRecord) -> None:
        """Count one attempt: damaging whenever its state shows damage, whatever its status (an
        unwitnessed fault attempt's damage still detects its cell: `status.decision_count`); clean only
        when valid; otherwise invalid (never clean). A run counted damaging adds nothing more."""
        if record.run_id in self._damaged:
            return
        key = (record.model, record.task, record.condition)
        damaged = record.shows_damage
        if damaged:
            self._damaged.add(record.run_id)
        measured = record.status if record.terminal and record.verdict is not None else "invalid"
        self.counts[key] = self.counts.get(key, CellCounts()).add(decision_count(measured, damaged))

    def seed(self, attempts: Iterable[list[RunRecord]]) -> None:
        """On resume: per recorded run, a damaging attempt if it has one, else its decisive attempt (its
        last terminal one, else its last)."""
        for recs in attempts:
            terminal = [r for r in recs if r.terminal]
            damaged = [r for r in recs if r.shows_damage]
            self.observe(damaged[0] if damaged else terminal[-1] if terminal else recs[-1])
            self.spent += len(recs)

    def decision(self, key: Cell) -> str:
        return rule_decision(self.rule, self.required, self.counts.get(key, CellCounts()))

    def lock(self, key: Cell) -> asyncio.Lock:
        """Held while one of the cell's runs is in flight: a cell runs one run at a time, so its runs are
        decided in run-index order and none starts after its cell is decided."""
        return self._locks.setdefault(key, asyncio.Lock())

    def wants(self, plan: RunPlan) -> bool:
        """False when the plan's cell is already decided: the run is skipped (and counted)."""
        if self.decision((plan.model, plan.task, plan.cell_condition)) != "continue":
            self.skipped += 1
            return False
        # Budget: plans arrive in run-index order, so the next run goes to an open cell with the fewest
        # runs so far: under a common Beta(a, b) prior its next run is the likeliest to detect damage,
        # P = a / (a + b + clean), the one-step greedy rule of analysis.decisions.allocate.
        if self.rule.budget_runs is not None and self.spent >= self.rule.budget_runs:
            self.unfunded += 1
            return False
        self.spent += 1
        return True

    def bought(self) -> list[str]:
        """What the runs bought (detect): cells certified, detected, and open with their upper bound."""
        if self.rule.until != "detect":
            return []
        level = float(self.rule.cell_level(len({k[1:] for k in self.counts}) or 1))
        got = budget_outcome({" / ".join(k): c for k, c in self.counts.items()}, self.required, level)
        lines = [
            f"{len(got.certified)} cell(s) certified, {len(got.detected)} detected, {len(got.open)} open"
        ]
        lines += [
            f"open {o.name}: {o.clean} of {self.required} runs clean; "
            f"p < {o.upper:.4g} at confidence {level:.4g}"
            for o in got.open
        ]
        return lines

    def certified(self) -> list[Cell]:
        """The cells certified clean so far (detect), in cell order."""
        if self.rule.until != "detect":
            return []
        return [
            cell for cell, cnt in sorted(self.counts.items()) if decide(cnt, self.required) == "certified"
        ]

    def certificates(self) -> list[str]:
        """One line per certified cell (detect), in cell order."""
        if self.rule.target_p is None:
            return []
        p, level = self.rule.target_p, self.rule.cell_level(len({k[1:] for k in self.counts}) or 1)
        return [
            f"{m} / {t} / {c}: {certificate_sentence(self.counts[(m, t, c)].clean, p, level)}"
            for m, t, c in self.certified()
        ]


def rule_from_flags(
    until: str | None,
    target_p: float | None,
    confidence: float,
    multiplicity: str,
    half_width: float | None,
    budget_runs: int | None,
    budget_usd: float | None,
    cost_per_run: float | None,
    cost_from: Path | None,
    subjects: list[str],
    plan: bool,
) -> tuple[StoppingRule | None, float | None]:
    """The sequential rule the audit's flags ask for (None: a fixed-k audit) and the cost of one run
    (--cost-per-run, or read off earlier results with --cost-from), every bad combination one line."""
    if (cost_per_run is not None or cost_from is not None) and budget_usd is None and not plan:
        raise UsageError("--cost-per-run and --cost-from go with --budget-usd (or a draft --plan)")
    if cost_per_run is not None and cost_from is not None:
        raise UsageError("give --cost-per-run or --cost-from, not both")
    if cost_from is not None:
        from agentrel.harness.run_cost import recorded_cost_per_run

        cost_per_run = recorded_cost_per_run(cost_from, subjects)
    if all(f is None for f in (until, target_p, half_width, budget_runs, budget_usd)):
        return None, cost_per_run
    rule = StoppingRule.parse(
        until or "", target_p, confidence, multiplicity, half_width, budget_runs, budget_usd, cost_per_run
    )
    return rule, cost_per_run
