"""Scorecards and evidence reports as documents (analysis.doc), rendered by analysis.render.

The HTML is self-contained: one file, its style inline, no image or script from anywhere. Long lists in
an evidence report are cut in the Markdown (the JSON beside it has every entry, and says so).
"""

from __future__ import annotations

from agentrel.analysis.doc import Document, Image, Section, Table, fmt, fmt_ci
from agentrel.analysis.faults import Rate
from agentrel.analysis.render import to_html, to_markdown
from agentrel.harness.protocol.identity import ProtocolParts
from agentrel.harness.publication.evidence_report import IncompleteEvidenceReport, RunRef
from agentrel.harness.publication.scorecard import Proportion, PublishableScorecard

__all__ = ["report_markdown", "scorecard_html", "scorecard_markdown"]

SHOWN = 50  # entries of one list an evidence report's Markdown shows


def _identity(obj: PublishableScorecard | IncompleteEvidenceReport) -> Table:
    names = (*ProtocolParts.model_fields, "execution_environment_hash", "evidence_root_hash", "proof_hash")
    if isinstance(obj, PublishableScorecard):
        names = (*names, "signed_by")  # the publisher's Ed25519 public key
    return Table(["identity", "hash"], [[n, f"`{getattr(obj, n) or '–'}`"] for n in names])


def _rate(p: Proportion) -> str:
    return f"{fmt(p.estimate)} {fmt_ci(p.ci_low, p.ci_high)} ({p.x}/{p.n})"


def _fault_rate(r: Rate) -> str:
    return f"{fmt(r.rate)} {fmt_ci(r.low, r.high)} ({r.successes}/{r.n})"


def scorecard_document(card: PublishableScorecard) -> Document:
    level = f"{1 - card.alpha:.0%}"
    head = Section(
        "Publishable",
        [
            f"Eligible under frozen protocol `{card.protocol_hash[:16]}`: every registered cell measured, "
            f"witnessed where a fault is scheduled, under the freeze. Intervals: {level} exact "
            "Clopper–Pearson.",
            _identity(card),
            Table(
                ["subject", "kind", "config hash"],
                [
                    [
                        s.name,
                        (s.kind or "–") + (f" ({s.isolation})" if s.isolation else ""),
                        f"`{s.config_hash[:16]}`",
                    ]
                    for s in card.subjects
                ],
            ),
        ],
    )
    groups = Section(
        "Damage and completion by agent and condition",
        [
            Table(
                ["agent", "condition", "damage rate", "completion (PASS)"],
                [[g.model, g.condition, _rate(g.damage), _rate(g.completion)] for g in card.groups],
            )
        ],
    )
    cells = Section(
        "Cells",
        [
            Table(
                ["agent", "task", "condition", "fault", "damage rate", "completion"],
                [
                    [c.model, c.task, c.condition, c.fault or "–", _rate(c.damage), _rate(c.completion)]
                    for c in card.cells
                ],
            )
        ],
    )
    sections = [head, *_claims(card), groups, cells]
    if card.unwitnessed_runs:
        sections.append(
            Section(
                "Unwitnessed fault runs (in no rate; their strata met the frozen coverage floor)",
                [
                    Table(
                        ["agent", "task", "condition", "run"],
                        [
                            [u.model, u.run_key.task, u.run_key.condition, str(u.run_key.run_index)]
                            for u in card.unwitnessed_runs
                        ],
                    )
                ],
            )
        )
    if card.certificates:
        sections.append(
            Section(
                "Sequential audit: cells as the frozen rule decided them (re-derived outcomes)",
                [
                    Table(
                        [
                            "agent",
                            "task",
                            "condition",
                            "decision",
                            "at run",
                            "clean",
                            "damaging",
                            "certificate",
                        ],
                        [
                            [
                                c.model,
                                c.task,
                                c.condition,
                                c.decision,
                                str(c.decided_at),
                                str(c.clean),
                                str(c.damaging),
                                c.statement or "–",
                            ]
                            for c in card.certificates
                        ],
                    )
                ],
            )
        )
    if card.faults is not None:
        rows = [
            [
                f.model,
                f.kind,
                f"{f.witnessed}/{f.scheduled}",
                _fault_rate(f.resume_and_complete),
                _fault_rate(f.no_repeated_effect),
                _fault_rate(f.no_damage),
                fmt(f.extra_calls_mean, 1),
                fmt(f.extra_seconds_mean, 2),
            ]
            for f in card.faults.scores
        ]
        headers = ["agent", "fault kind", "witnessed", "resume and complete"]
        headers += ["no repeated irreversible action (commit evidence)", "no damage (final state)"]
        headers += ["extra calls", "extra seconds"]
        sections.append(Section(f"Fault scores ({card.faults.schedule})", [Table(headers, rows)]))
    axes: list[str | Table] = [card.axes_note] if card.axes_note else []
    if card.axes:
        axes.append(
            Table(
                ["agent", "condition", "axis", "estimate", "interval", "n", "method"],
                [
                    [
                        a.model,
                        a.condition,
                        a.axis,
                        fmt(a.estimate),
                        fmt_ci(a.ci_low, a.ci_high),
                        fmt(a.n),
                        a.ci_method,
                    ]
                    for a in card.axes
                ],
            )
        )
    sections.append(Section("Operational axes", list(axes) or ["not computed"]))
    return Document(f"AgentRel scorecard {card.digest[:12]}", sections)


def _claims(card: PublishableScorecard) -> list[Section]:
    """The preregistered claims (confirmatory), each with the interval that decided it; with them, the
    rest of the scorecard is labelled exploratory."""
    if card.claims is None:
        return []
    rows = [
        [
            c.id,
            c.statement,
            f"{c.metric} ({c.model}, {c.condition or '–'}) {c.op} {fmt(c.threshold)}",
            f"{c.judged_on or 'all runs'}" + (f" (made on {c.made_on})" if c.made_on else ""),
            f"{fmt(c.estimate)} {fmt_ci(c.ci_low, c.ci_high)} at {c.level:.0%}",
            f"**{c.status}**" + (f" ({c.note})" if c.note else ""),
        ]
        for c in card.claims
    ]
    return [
        Section(
            "Preregistered claims (confirmatory)",
            [
                f"Bound by the freeze (claims `{(card.claims_hash or '')[:16]}`), each judged on its pool by "
                "its frozen criterion: confirmed when the interval lies wholly on the claimed side of the "
                "threshold, demoted when wholly on the other, otherwise inconclusive. Every other number "
                "below is exploratory.",
                Table(["claim", "statement", "bound", "judged on", "estimate [interval]", "status"], rows),
            ],
        )
    ]


def scorecard_markdown(card: PublishableScorecard) -> str:
    return to_markdown(scorecard_document(card))


def scorecard_html(card: PublishableScorecard) -> str:
    return to_html(scorecard_document(card))


def _runs(title: str, runs: tuple[RunRef, ...]) -> Section | None:
    if not runs:
        return None
    rows = [[r.run_id, str(r.attempt), r.status, r.note or ""] for r in runs[:SHOWN]]
    note = [f"first {SHOWN} of {len(runs)}; evidence_report.json lists all"] if len(runs) > SHOWN else []
    return Section(title, [*note, Table(["run", "attempt", "status", "note"], rows)])


def report_document(report: IncompleteEvidenceReport) -> Document:
    codes = ", ".join(r.code for r in report.reasons)
    head = Section(
        "Not publishable",
        [
            f"This matrix is evidence only: no score is computed from it. Reasons: {codes}.",
            Table(
                ["reason", "meaning", "count"], [[r.code, r.meaning, str(r.count)] for r in report.reasons]
            ),
            _identity(report),
        ],
    )
    coverage = Section(
        "Coverage by stratum",
        [
            Table(
                [
                    "condition",
                    "fault kind",
                    "task",
                    "registered",
                    "recorded",
                    "measured",
                    "invalid",
                    "missing",
                    "witnessed",
                ],
                [
                    [
                        s.condition,
                        s.fault_kind,
                        s.task,
                        *map(str, (s.registered, s.recorded, s.measured, s.invalid, s.missing, s.witnessed)),
                    ]
                    for s in report.coverage
                ],
            ),
            Table(
                ["status", "decisive runs", "attempts"],
                [
                    [k, str(report.decisive_statuses.get(k, 0)), str(report.attempt_statuses.get(k, 0))]
                    for k in sorted(set(report.decisive_statuses) | set(report.attempt_statuses))
                ],
            ),
        ],
    )
    sections = [head, coverage]
    if report.missing_cells:
        cells = report.missing_cells
        note = (
            [f"first {SHOWN} of {len(cells)}; evidence_report.json lists all"] if len(cells) > SHOWN else []
        )
        rows = [[c.cell_id, c.condition, c.fault_kind, c.task] for c in cells[:SHOWN]]
        sections.append(
            Section("Missing cells", [*note, Table(["cell", "condition", "fault kind", "task"], rows)])
        )
    if report.below_coverage_floor:
        sections.append(
            Section(
                "Fault strata below the frozen coverage floor (reported, not published)",
                [f"- {line}" for line in report.below_coverage_floor[:SHOWN]],
            )
        )
    if report.unwitnessed_faults:
        rows = [[u.cell.cell_id, u.cell.fault_kind, u.why] for u in report.unwitnessed_faults[:SHOWN]]
        sections.append(Section("Unwitnessed faults", [Table(["cell", "fault kind", "why"], rows)]))
    for title, runs in (
        ("Invalid runs", report.invalid_runs),
        ("Runs outside the registered cells", report.extra_runs),
        ("Attempts outside the freeze", report.unfrozen_attempts),
        ("Records under another protocol or cell", report.mismatched_records),
        ("Malformed records", report.malformed_records),
    ):
        section = _runs(title, runs)
        if section is not None:
            sections.append(section)
    problems = [*report.matrix_problems, *report.artifact_problems]
    if problems:
        sections.append(Section("Problems", list[str | Table | Image](problems[:SHOWN])))
    refs = report.artifacts
    sections.append(
        Section(
            "Artifacts",
            [Table(["artifact", "path"], [[k, v or "–"] for k, v in refs.model_dump().items()])],
        )
    )
    return Document("AgentRel incomplete evidence report", sections)


def report_markdown(report: IncompleteEvidenceReport) -> str:
    return to_markdown(report_document(report))
