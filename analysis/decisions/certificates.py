"""The certificate section of a report: per agent, its certified, detected and open cells and the
agent-level statement, from per-cell counts (pure; `agentrel certify` and `agentrel analyze` both
render this one object, so the two never disagree).

Each agent's cells are audited at the per-cell confidence its multiplicity option gives
(``certify.cell_confidence``: C under ``union``, 1 - (1 - C)/m under ``bonferroni``, m = the agent's
cells), so its zero-damage count is n(P, C_cell). A cell is sorted by the stopping rule itself
(``allocate.bought`` calls ``certify.decide``): certified with at least n clean valid runs and no
damaging one, detected with any damaging valid run, otherwise open with its exact one-sided upper
bound 1 - (1 - C_cell)^(1/c) after c clean runs. Invalid runs are counted beside, never as clean.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from agentrel.analysis.decisions.allocate import bought
from agentrel.analysis.decisions.certify import (
    CellCounts,
    Multiplicity,
    agent_statement,
    cell_confidence,
    certificate_sentence,
    zero_damage_count,
)
from agentrel.analysis.doc import Block, Section, Table

if TYPE_CHECKING:
    from agentrel.analysis.normalized import LoadedInput

__all__ = [
    "AgentCertificates",
    "CertificateReport",
    "OpenCellBound",
    "certificate_report",
    "certificate_section",
    "loaded_certificates",
]


class OpenCellBound(BaseModel):
    model_config = ConfigDict(frozen=True)

    clean: int
    upper: float  # one-sided exact upper bound of the per-run damage rate at the cell's confidence


class AgentCertificates(BaseModel):
    model_config = ConfigDict(frozen=True)

    agent: str
    cells: int
    cell_confidence: float
    runs_required: int
    certified: dict[str, str]  # "task/condition" -> its certificate
    detected: list[str]
    open: dict[str, OpenCellBound]
    invalid_runs: int
    statement: str
    # Cells the rule would certify whose share of errored attempts is over the frozen error budget:
    # "task/condition" -> why (analysis/error_budget.py). Not certified.
    over_budget: dict[str, str] = {}


class CertificateReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    target_p: float
    confidence: float
    multiplicity: Multiplicity
    source: str  # where P, C and the multiplicity came from (the audit's frozen rule, or options)
    agents: list[AgentCertificates]


def certificate_report(
    counts: Mapping[tuple[str, str, str], CellCounts],
    target_p: float,
    confidence: float,
    multiplicity: Multiplicity,
    source: str = "options",
    over_budget: Mapping[tuple[str, str, str], tuple[int, int]] | None = None,
) -> CertificateReport:
    """Per agent (sorted), its cells' certificates at (P, C) and the statement about the agent."""
    per_agent: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for model, task, condition in counts:
        per_agent[model].append((task, condition))
    agents = []
    for model, keys in sorted(per_agent.items()):
        level = cell_confidence(confidence, len(keys), multiplicity)
        n = zero_damage_count(target_p, level)
        mine = {f"{t}/{c}": counts[(model, t, c)] for t, c in keys}
        got = bought(mine, n, float(level))
        refused = {}
        for t, c in keys:
            hit = (over_budget or {}).get((model, t, c))
            if hit is not None and f"{t}/{c}" in got.certified:
                refused[f"{t}/{c}"] = (
                    f"{hit[0]} of {hit[1]} attempts errored: over the error budget, not certified"
                )
        certified = [k for k in got.certified if k not in refused]
        agents.append(
            AgentCertificates(
                agent=model,
                cells=len(keys),
                cell_confidence=float(level),
                runs_required=n,
                certified={k: certificate_sentence(mine[k].clean, target_p, level) for k in certified},
                detected=got.detected,
                open={o.name: OpenCellBound(clean=o.clean, upper=o.upper) for o in got.open},
                invalid_runs=sum(c.invalid for c in mine.values()),
                statement=agent_statement(len(certified), len(keys), target_p, confidence, multiplicity),
                over_budget=refused,
            )
        )
    return CertificateReport(
        target_p=target_p, confidence=confidence, multiplicity=multiplicity, source=source, agents=agents
    )


def loaded_certificates(
    loaded: LoadedInput, target_p: float, confidence: float, multiplicity: Multiplicity, source: str
) -> CertificateReport:
    """The certificate report of loaded runs: their cells' counts (invalid runs beside), cells over the
    frozen error budget set apart."""
    from agentrel.analysis.decisions.evidence import cell_counts
    from agentrel.analysis.error_budget import over_budget_cells

    counts = cell_counts(loaded.runs, loaded.invalid, loaded.superseded)
    over = over_budget_cells(loaded.runs, loaded.invalid, loaded.superseded, loaded.error_budget)
    return certificate_report(counts, target_p, confidence, multiplicity, source, over)


def certificate_section(report: CertificateReport) -> Section:
    """The report's certificate section (report.md and report.html alike): per agent its statement, then
    one row per cell."""
    blocks: list[Block] = [
        f"Per-run damage rate below P = {report.target_p:g} with confidence C = {report.confidence:g} "
        f"({report.source}; multiplicity: {report.multiplicity})."
    ]
    for a in report.agents:
        rows = [[k, "certified", "–", s] for k, s in a.certified.items()]
        rows += [[k, "detected", "–", "damage seen: no certificate"] for k in a.detected]
        rows += [[k, "over error budget", "–", why] for k, why in a.over_budget.items()]
        rows += [
            [
                k,
                "open",
                f"{o.clean} of {a.runs_required}",
                f"per-run damage rate below {o.upper:.4g} with confidence {a.cell_confidence:.6g} so far",
            ]
            for k, o in a.open.items()
        ]
        blocks += [
            f"**{a.agent}**: {a.statement}",
            f"{a.runs_required} runs with no damage certify a cell (each cell at confidence "
            f"{a.cell_confidence:.6g}); {a.invalid_runs} invalid run(s), never counted as clean.",
            Table(["cell", "decision", "runs clean", "statement"], rows),
        ]
    return Section("Certificates", blocks)
