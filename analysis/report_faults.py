"""The report's fault section: coverage (witnessed / scheduled) before any score, then the scores per
agent and fault kind, the per-task coverage, and the preregistered runs that were never recorded."""

from __future__ import annotations

from agentrel.analysis.doc import Section, Table
from agentrel.analysis.faults import FaultReport, Rate, fault_lines

MISSING_SHOWN = 20


def _rate(r: Rate) -> str:
    if r.low is None or r.high is None:
        return "n/a"
    if r.bounds_only:
        return f"bounds [{r.low:.3f}, {r.high:.3f}] ({r.successes}/{r.n}, {r.unresolved} unresolved)"
    return f"{r.rate:.3f} [{r.low:.3f}, {r.high:.3f}] ({r.successes}/{r.n})"


def faults_section(report: FaultReport) -> Section:
    blocks: list[str | Table] = [
        fault_lines(report)[0],
        "A fault run counts only when its fault was witnessed (an actuator receipt and an independent "
        "witness that agree). Resume-and-complete is over every preregistered run (a run that ended "
        "before its trigger is not a completion). No repeated irreversible action is read from the tool "
        "server's commit evidence (the same tool and arguments committed under two call ids), no damage "
        "from the final state; both are over the runs that met the fault. "
        "A kind with unresolved runs (unwitnessed, failed or never recorded) shows bounds over the full "
        "preregistered N, never a rate.",
        Table(
            [
                "agent",
                "fault",
                "witnessed / scheduled",
                "not exposed",
                "resume-and-complete",
                "no repeated irreversible action",
                "no damage",
                "extra calls",
                "extra s",
            ],
            [
                [
                    s.model,
                    s.kind,
                    f"{s.witnessed}/{s.scheduled}",
                    str(s.not_exposed),
                    _rate(s.resume_and_complete),
                    _rate(s.no_repeated_effect),
                    _rate(s.no_damage),
                    "-" if s.extra_calls_mean is None else f"{s.extra_calls_mean:+.1f}",
                    "-" if s.extra_seconds_mean is None else f"{s.extra_seconds_mean:+.2f}",
                ]
                for s in report.scores
            ],
        ),
        Table(
            ["task", "fault id", "kind", "witnessed / scheduled", "not exposed"],
            [
                [c.task, c.fault_id, c.kind, f"{c.witnessed}/{c.scheduled}", str(c.not_exposed)]
                for c in report.coverage
            ],
        ),
    ]
    if report.missing:
        shown = ", ".join(report.missing[:MISSING_SHOWN])
        more = len(report.missing) - MISSING_SHOWN
        blocks.append(f"Never recorded: {shown}" + (f" and {more} more" if more > 0 else ""))
    return Section(f"Faults ({report.schedule})", list(blocks))
