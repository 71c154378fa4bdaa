"""HTML of the headline, cell and message pages: pure functions from page data to text, through the
autoescaped templates in templates/ (templates.py).

Every page is whole in the first response (no page is blank without JavaScript); view.js only sorts
nothing and reloads a live page when the index's version moves. The breadcrumbs above every page are
(label, address) pairs the layout draws; nothing here builds HTML.
"""

from __future__ import annotations

from decimal import Decimal
from urllib.parse import quote, urlencode

from agentrel.analysis.damage_amount import amount_text
from agentrel.harness.results.lines import Attempt
from agentrel.harness.view.pages import OUTCOMES, Cell, CellQuery, Headline, outcome_of
from agentrel.harness.view.templates import render


def pct(p: float | None) -> str:
    return "–" if p is None else f"{100 * p:.1f}%"


def ci_pct(low: float | None, high: float | None) -> str:
    """An interval in percent whose positive upper end never prints as 0.0% (a zero count over many runs
    is not a certainty), nor a lower end below 1 as 100.0%."""
    hi = 0.001 if high is not None and 0.0 < high < 0.0005 else high
    lo = 0.999 if low is not None and 0.9995 < low < 1.0 else low
    return f"[{pct(lo)}, {pct(hi)}]"


def usd(d: Decimal | None) -> str:
    return "–" if d is None else f"${d:,.2f}"


def index_damage_usd(dollars: Decimal, damaged: int) -> str:
    """A damage amount where only the index's totals are known (cells, a cell's runs): damage that adds
    up to $0.00 is shown `unpriced`, since no dollar figure of it is known."""
    return amount_text(dollars, 1 if damaged and not dollars else 0)


def run_href(run_id: str) -> str:
    return "/runs/" + quote(run_id, safe="")


def cells_href(**params: str) -> str:
    kept = {k: v for k, v in params.items() if v}
    return "/cells" + ("?" + urlencode(kept) if kept else "")


def invalid_text(invalid: dict[str, int], pending: int = 0) -> str:
    """The runs without a valid verdict, said beside every rate: invalid ones by status ("0" when there
    are none, so their absence is visible too), then those not yet run."""
    text = ", ".join(f"{n} {status}" for status, n in invalid.items()) or "0"
    return f"{text} · not yet run: {pending}" if pending else text


def message_page(title: str, message: str, status_note: str = "") -> str:
    """A page that says one thing that went wrong, in a sentence (never a stack trace)."""
    return render(
        "message.html", title=title, message=message, status_note=status_note, version=None, crumbs=[]
    )


def _loss(expected: Decimal | None, damaged: int) -> str:
    """Loss per run: `–` with no valid run, `unpriced` when the damage seen has no dollar figure."""
    return "–" if expected is None else index_damage_usd(expected, damaged)


# What the page templates call: formatting stays in Python, one function each; escaping is the engine's.
HELPERS = {
    "pct": pct,
    "ci_pct": ci_pct,
    "invalid_text": invalid_text,
    "index_damage_usd": index_damage_usd,
    "loss": _loss,
    "run_href": run_href,
    "cells_href": cells_href,
    "outcome_of": outcome_of,
}


def headline_page(
    h: Headline,
    source: str,
    rules: dict[str, list[str]] | None = None,
    unpriced: dict[str, int] | None = None,
) -> str:
    """The headline (templates/headline.html); `rules` names the damage rules of each finding's run and
    `unpriced` counts its events with no price (both by run id)."""
    counts = unpriced or {}

    def finding_usd(a: Attempt) -> str:
        if a.run_id in counts:
            return amount_text(a.dollars, counts[a.run_id])
        return index_damage_usd(a.dollars, int(a.damaged))

    return render(
        "headline.html",
        **HELPERS,
        title="Headline",
        version=h.version,
        crumbs=[],
        h=h,
        source=source,
        rules=rules or {},
        finding_usd=finding_usd,
    )


def cells_page(
    shown: list[Cell], q: CellQuery, runs: list[Attempt] | None, choices: dict[str, list[str]], version: int
) -> str:
    """The cells, filtered and sorted as the address says, and one cell's runs (templates/cells.html)."""
    base = {"agent": q.agent, "task": q.task, "condition": q.condition, "outcome": q.outcome}
    if q.min_dollars is not None:
        base["min_dollars"] = str(q.min_dollars)
    heads = []
    for label, key in SORTABLE:
        desc = q.sort == key and not q.desc
        arrow = (" ▼" if q.desc else " ▲") if q.sort == key else ""
        heads.append((label, key, cells_href(**base, sort=key, desc="1" if desc else ""), arrow))
    selects = [
        ("agent", q.agent, choices["agent"]),
        ("task", q.task, choices["task"]),
        ("condition", q.condition, choices["condition"]),
        ("outcome", q.outcome, list(OUTCOMES)),
    ]
    return render(
        "cells.html",
        **HELPERS,
        title="Cells",
        version=version,
        crumbs=[("Headline", "/"), ("Cells", cells_href())],
        shown=shown,
        q=q,
        runs=runs,
        heads=heads,
        selects=selects,
        min_dollars="" if q.min_dollars is None else str(q.min_dollars),
    )


SORTABLE = [
    ("agent", "agent"),
    ("task", "task"),
    ("condition", "condition"),
    ("runs", "runs"),
    ("damage rate", "damage"),
    ("invalid", "invalid"),
    ("dollars", "dollars"),
    ("loss/run", "loss"),
    ("worst severity", "severity"),
]
