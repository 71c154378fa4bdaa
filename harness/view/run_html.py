"""One run's page: verdict, the row-level diff with the rule behind each change (run_diff.py), prompt,
transcript, events. Pure: the page's data is a function of the run's evidence, gathered here as plain
values; templates/run*.html draw it, and the template engine escapes every value (nothing here is HTML).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from agentrel.analysis.damage_amount import amount_text, unpriced_events
from agentrel.harness.results.lines import Attempt
from agentrel.harness.results.record import RunRecord
from agentrel.harness.view.evidence import RunEvidence
from agentrel.harness.view.html import cells_href, run_href
from agentrel.harness.view.pages import outcome_of
from agentrel.harness.view.run_diff import CHANGES_PER_PAGE, Diff, Priced, diff_of
from agentrel.harness.view.templates import render

__all__ = ["CHANGES_PER_PAGE", "LONG_RESULT", "diff_html", "run_page", "transcript_html"]

LONG_RESULT = 2000  # characters of a tool result shown before it folds away

FINAL_KINDS = {
    "text_tool_call": "The final message is a tool call written as text, not an answer: nothing was called "
    "by it. The run stays valid and is judged by its state.",
    "echoed_tool_error": "The final message echoes a tool's error. The run stays valid and is judged by "
    "its state.",
}


@dataclass(frozen=True)
class Judged:
    """The stored verdict, as the verdict section's table shows it."""

    outcome: str
    sub_label: str
    events: int
    amount: str  # amount_text: never `$0.00` for unpriced damage
    max_severity: str
    irreversibility: str
    changes: int
    spec: str
    error: str | None  # the record's error, `kind: message`
    inconsistent: bool
    requirements: list[tuple[str, bool]]  # (label, met)


@dataclass(frozen=True)
class VerdictPart:
    outcome: str  # the view's word: invalid, damage, pass or fail_safe
    valid: bool
    status: str
    attempt: int
    attempts: int
    error: str | None  # the index's error, shown only when there is no verdict
    judged: Judged | None


@dataclass(frozen=True)
class Call:
    ordinal: str
    tool: str
    ok: bool
    seconds: float | None
    args: str | None  # JSON; None: the record keeps no arguments
    result: str  # JSON, "" when none is kept
    folded: bool  # longer than LONG_RESULT: shown behind a summary


@dataclass(frozen=True)
class TranscriptPart:
    calls: list[Call]
    from_record: bool  # no transcript file: the calls are the record's (no arguments or results)
    messages: str | None  # the model messages as JSON
    message_count: int
    proxied: int  # model calls made through AgentRel's model proxy
    final: str | None
    final_kinds: list[tuple[str, str]]  # what the final message is when it is not an answer


@dataclass(frozen=True)
class EventRow:
    kind: str
    call: str
    tool: str
    detail: str  # JSON


@dataclass(frozen=True)
class RunPage:
    run_id: str
    crumbs: list[tuple[str, str | None]]
    notes: list[str]
    verdict: VerdictPart
    diff: Diff
    prompt: tuple[str, str] | None  # (system, user); None: the task is not in the suite
    transcript: TranscriptPart
    events: list[EventRow]


def run_page(
    a: Attempt,
    attempts: int,
    ev: RunEvidence,
    start: int = 0,
    priced: Mapping[tuple[str, str], bool] | None = None,
) -> str:
    """The page (templates/run.html); `priced` says which (spec, rule) name a price
    (harness.damage_pricing), so damage with none is shown `unpriced`, never `$0.00`."""
    page = page_of(a, attempts, ev, start, priced or {})
    return render("run.html", title=f"Run {a.run_id}", version=None, crumbs=page.crumbs, page=page)


def diff_html(ev: Any, start: int, run_id: str, task: str, priced: Priced) -> str:
    """The state diff section alone (templates/run_diff.html)."""
    return render("run_diff.html", diff=diff_of(ev, start, run_href(run_id), task, priced))


def transcript_html(ev: RunEvidence, rec: RunRecord | None) -> str:
    """The transcript section alone (templates/run_transcript.html)."""
    return render("run_transcript.html", transcript=transcript_of(ev, rec))


def page_of(a: Attempt, attempts: int, ev: RunEvidence, start: int, priced: Priced) -> RunPage:
    rec = ev.record
    cell = cells_href(agent=a.model, task=a.task, condition=a.condition)
    crumbs = [
        ("Headline", "/"),
        (f"{a.model} · {a.task} · {a.condition}", cell),
        (f"run {a.run_index}", None),
    ]
    return RunPage(
        run_id=a.run_id,
        crumbs=crumbs,
        notes=ev.notes + ev.disagreements,
        verdict=verdict_of(a, attempts, rec, priced),
        diff=diff_of(ev, start, run_href(a.run_id), a.task, priced),
        prompt=None if ev.task is None else (ev.task.system_prompt, ev.task.user_prompt),
        transcript=transcript_of(ev, rec),
        events=events_of(rec),
    )


def verdict_of(a: Attempt, attempts: int, rec: RunRecord | None, priced: Priced) -> VerdictPart:
    judged = None
    if rec is not None and rec.verdict is not None:
        v = rec.verdict
        unpriced = unpriced_events(((x.spec, x.rule, Decimal(x.dollars)) for x in v.events), priced)
        judged = Judged(
            outcome=v.outcome,
            sub_label=v.sub_label,
            events=len(v.events),
            amount=amount_text(Decimal(v.dollars), unpriced),
            max_severity=v.max_severity or "–",
            irreversibility=", ".join(v.irreversibility) or "–",
            changes=v.changes,
            spec=v.spec,
            error=None if rec.error is None else f"{rec.error.kind}: {rec.error.message}",
            inconsistent=v.inconsistent,
            requirements=[(r.label, r.met) for r in v.requirements],
        )
    return VerdictPart(outcome_of(a), a.valid, a.status, a.attempt, attempts, a.error, judged)


def _json(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False, default=str)


def transcript_of(ev: RunEvidence, rec: RunRecord | None) -> TranscriptPart:
    t = ev.transcript
    if t is None:
        calls: list[dict[str, Any]] = [dict(c) for c in rec.tool_calls] if rec else []
        final = rec.final_message if rec else None
    else:
        calls = [c for c in t.get("tool_calls") or () if isinstance(c, dict)]
        final = t.get("final_message")
    messages = (t or {}).get("messages") or []
    # An agent program's model calls through the model proxy are entries of role `model_call`.
    proxied = sum(isinstance(m, dict) and m.get("role") == "model_call" for m in messages)
    kinds = [x.kind for x in rec.events] if rec else []
    return TranscriptPart(
        calls=[_call(c) for c in calls],
        from_record=t is None,
        messages=_json(messages) if messages else None,
        message_count=len(messages),
        proxied=proxied,
        final=str(final) if final else None,
        final_kinds=[(k, text) for k, text in FINAL_KINDS.items() if k in kinds],
    )


def _call(c: dict[str, Any]) -> Call:
    result = _json(c.get("result")) if "result" in c else ""
    seconds = c.get("seconds")
    return Call(
        ordinal="?" if c.get("ordinal") is None else str(c["ordinal"]),  # never a Python `None` on the page
        tool=str(c.get("tool", "?")),
        ok=bool(c.get("ok")),
        seconds=float(seconds) if isinstance(seconds, int | float) else None,
        args=_json(c["args"]) if "args" in c else None,
        result=result,
        folded=len(result) > LONG_RESULT,
    )


def events_of(rec: RunRecord | None) -> list[EventRow]:
    events = [x.model_dump(mode="json") for x in rec.events] if rec else []
    return [
        EventRow(
            str(x.get("kind")),
            str(x.get("ordinal") or ""),
            str(x.get("tool") or ""),
            _json(x.get("detail") or {}),
        )
        for x in events
    ]
