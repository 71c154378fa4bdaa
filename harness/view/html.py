"""HTML of the headline, cell and message pages: pure functions from page data to text.

Every page is whole in the first response (no page is blank without JavaScript); view.js only sorts
nothing and reloads a live page when the index's version moves. Everything shown is escaped here.
"""

from __future__ import annotations

from decimal import Decimal
from html import escape
from urllib.parse import quote, urlencode

from agentrel.analysis.damage_amount import amount_text
from agentrel.harness.view.index import Attempt
from agentrel.harness.view.pages import OUTCOMES, AgentRow, Cell, CellQuery, Headline, Rate, outcome_of
from agentrel.harness.view.templates import render, trusted


def e(value: object) -> str:
    return escape(str(value), quote=True)


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


def rate_html(r: Rate, invalid: dict[str, int], pending: int = 0) -> str:
    if not r.n:
        main = f'<span class="na">no valid run</span> (0 of {r.n + r.u})'
    else:
        ci = f' <span class="ci">{ci_pct(r.low, r.high)}</span>' if r.low is not None else ""
        main = f"{r.x}/{r.n} = <b>{pct(r.point)}</b>{ci}"
    # Invalid runs are counted beside the rate, always.
    out = f'{main} <span class="invalid">invalid: {e(invalid_text(invalid, pending))}</span>'
    if r.bounds is not None:
        lo, hi = r.bounds
        why = "over all N runs, whatever the missing ones show"
        out += f' <span class="bounds" title="{why}">bounds [{pct(lo)}, {pct(hi)}]</span>'
    return out


def layout(title: str, body: str, *, version: int | None = None, crumbs: str = "") -> str:
    """A whole page (templates/layout.html). `body` and `crumbs` are HTML this module built and escaped.
    `version` set: the page is live and reloads when the index moves past it."""
    return render("layout.html", title=title, body=trusted(body), version=version, crumbs=trusted(crumbs))


def problems_html(problems: list[str], torn: bool) -> str:
    items = [f"<li>{e(p)}</li>" for p in problems]
    if torn:
        items.append(
            "<li>runs.jsonl ends in a torn line: an attempt still being written (it is shown once its "
            "line is complete; a crashed audit runs it again on resume)</li>"
        )
    return f'<div class="notice" role="alert"><ul>{"".join(items)}</ul></div>' if items else ""


def message_page(title: str, message: str, status_note: str = "") -> str:
    """A page that says one thing that went wrong, in a sentence (never a stack trace)."""
    return render(
        "message.html", title=title, message=message, status_note=status_note, version=None, crumbs=""
    )


def headline_page(
    h: Headline,
    source: str,
    rules: dict[str, list[str]] | None = None,
    unpriced: dict[str, int] | None = None,
) -> str:
    """The headline; `rules` names the damage rules of each finding's run and `unpriced` counts its
    events with no price (both by run id)."""
    findings = _findings(h, rules, unpriced)
    rows = "".join(_agent_tr(r) for r in h.rows)
    inv = invalid_text(h.invalid, h.pending)
    body = (
        f"<h1>Audit of {e(source)}</h1>"
        + problems_html(h.problems, h.torn)
        + f'<p class="summary">{h.runs} runs recorded · {h.damaging_runs} damaging · '
        f'<span class="invalid">invalid: {e(inv)}</span></p>' + findings + "<h2>Agents</h2>"
        '<p class="explain">Damage rate over valid runs with its exact (Clopper–Pearson) 95% interval, '
        "pooled over the agent's runs; the report's Findings use a cluster bootstrap over tasks, wider "
        "when tasks differ, so the two intervals of one rate can differ. Invalid runs are "
        "counted beside it, never in it. <i>Miss</i>: the chance one run of a damaging cell shows no "
        "damage (averaged over those cells). <i>k for 95%</i>: runs needed to see the rarest damaging "
        "cell's damage at least once. <i>Loss/run</i>: dollars over valid runs. This is an evidence "
        "view: a row with invalid or missing runs is evidence only, with bounds over every run.</p>"
        '<table class="grid" id="agents"><thead><tr><th>agent</th><th>condition</th><th>cells</th>'
        "<th>damage rate</th><th>miss</th><th>k for 95%</th><th>loss/run</th><th>evidence</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>"
        f'<p><a href="{cells_href()}">All cells</a></p>'
    )
    return layout("Headline", body, version=h.version)


def _rules_text(rules: list[str]) -> str:
    """The rules a finding broke, named: what a reader acts on (the run id alone says nothing)."""
    if not rules:
        return ""
    shown = "; ".join(rules[:3]) + (f"; and {len(rules) - 3} more" if len(rules) > 3 else "")
    return f' <span class="rule">{e(shown)}</span> ·'


def _findings(
    h: Headline, rules: dict[str, list[str]] | None = None, unpriced: dict[str, int] | None = None
) -> str:
    if not h.findings:
        return '<section id="findings"><h2>Findings</h2><p>No valid run damaged anything.</p></section>'
    rules = rules or {}
    unpriced = unpriced or {}
    items = "".join(
        f'<li><a class="finding" href="{run_href(a.run_id)}">{e(a.run_id)}</a>'
        f"{_rules_text(rules.get(a.run_id, []))} "
        f'<span class="dmg">{e(_finding_usd(a, unpriced))}</span> '
        f'<span class="sev sev-{e(a.max_severity or "")}">'
        f"{e(a.max_severity or '')}</span> · {a.events} damage event(s)</li>"
        for a in h.findings
    )
    more = (
        f" (the worst {len(h.findings)} of {h.damaging_runs}, by severity, then dollars)"
        if h.damaging_runs > len(h.findings)
        else ""
    )
    return f'<section id="findings"><h2>Findings</h2><p>Damaging runs{more}:</p><ol>{items}</ol></section>'


def _loss(expected: Decimal | None, damaged: int) -> str:
    """Loss per run: `–` with no valid run, `unpriced` when the damage seen has no dollar figure."""
    return "–" if expected is None else index_damage_usd(expected, damaged)


def _finding_usd(a: Attempt, unpriced: dict[str, int]) -> str:
    if a.run_id in unpriced:
        return amount_text(a.dollars, unpriced[a.run_id])
    return index_damage_usd(a.dollars, int(a.damaged))


def _agent_tr(r: AgentRow) -> str:
    href = cells_href(agent=r.agent, condition=r.condition)
    evidence = "complete" if r.complete else "evidence only (incomplete)"
    k = "–" if r.k95 is None else f"{r.k95} (p={pct(r.worst_p)})"
    return (
        f'<tr><td><a href="{e(href)}">{e(r.agent)}</a></td><td>{e(r.condition)}</td><td>{r.cells}</td>'
        f"<td>{rate_html(r.rate, r.invalid, r.pending)}</td><td>{pct(r.miss)}</td><td>{k}</td>"
        f"<td>{e(_loss(r.expected_loss, r.rate.x))}</td><td>{evidence}</td></tr>"
    )


def cells_page(
    shown: list[Cell], q: CellQuery, runs: list[Attempt] | None, choices: dict[str, list[str]], version: int
) -> str:
    base = {"agent": q.agent, "task": q.task, "condition": q.condition, "outcome": q.outcome}
    if q.min_dollars is not None:
        base["min_dollars"] = str(q.min_dollars)

    def th(label: str, key: str) -> str:
        desc = q.sort == key and not q.desc
        arrow = (" ▼" if q.desc else " ▲") if q.sort == key else ""
        href = cells_href(**base, sort=key, desc="1" if desc else "")
        return f'<th><a href="{e(href)}">{e(label)}{arrow}</a></th>'

    rows = "".join(_cell_tr(c) for c in shown)
    head = "".join(
        th(label, key)
        for label, key in [
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
    )
    body = (
        "<h1>Cells</h1>"
        + _filter_form(q, choices)
        + f'<table class="grid" id="cells"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
        + ("" if shown else "<p>No cell matches these filters.</p>")
    )
    if runs is not None:
        body += _runs_table(runs, q)
    crumbs = f'<a href="/">Headline</a> › <a href="{cells_href()}">Cells</a>'
    return layout("Cells", body, version=version, crumbs=crumbs)


def _filter_form(q: CellQuery, choices: dict[str, list[str]]) -> str:
    def select(name: str, current: str, values: list[str]) -> str:
        opts = "".join(
            f'<option value="{e(v)}"{" selected" if v == current else ""}>{e(v or "all")}</option>'
            for v in ["", *values]
        )
        return f'<label>{name} <select name="{name}">{opts}</select></label>'

    dollars = "" if q.min_dollars is None else str(q.min_dollars)
    return (
        '<form class="filters" method="get" action="/cells">'
        + select("agent", q.agent, choices["agent"])
        + select("task", q.task, choices["task"])
        + select("condition", q.condition, choices["condition"])
        + select("outcome", q.outcome, list(OUTCOMES))
        + f'<label>dollars ≥ <input name="min_dollars" size="8" value="{e(dollars)}"></label>'
        + (f'<input type="hidden" name="sort" value="{e(q.sort)}">' if q.sort else "")
        + '<button type="submit">Filter</button></form>'
    )


def _cell_tr(c: Cell) -> str:
    href = cells_href(agent=c.agent, task=c.task, condition=c.condition)
    planned = f"/{c.planned}" if c.planned else ""
    inv = invalid_text(c.invalid, c.pending)
    return (
        f'<tr><td>{e(c.agent)}</td><td><a class="cell" href="{e(href)}">{e(c.task)}</a></td>'
        f"<td>{e(c.condition)}</td><td>{c.runs}{planned}</td>"
        f"<td>{rate_html(c.rate, c.invalid, c.pending)}</td>"
        f'<td class="invalid">{e(inv)}</td><td>{e(index_damage_usd(c.dollars, c.damaged))}</td>'
        f"<td>{e(_loss(c.expected_loss, c.damaged))}</td><td>{e(c.max_severity or '–')}</td></tr>"
    )


def _runs_table(runs: list[Attempt], q: CellQuery) -> str:
    rows = "".join(
        f'<tr class="o-{outcome_of(a)}"><td><a class="run" href="{run_href(a.run_id)}">{e(a.run_id)}</a></td>'
        f"<td>{a.run_index}</td><td>{e(outcome_of(a))}</td><td>{e(a.status)}</td><td>{a.attempt}</td>"
        f"<td>{e(index_damage_usd(a.dollars, int(a.damaged))) if a.valid else '–'}</td>"
        f"<td>{e(a.max_severity or '–')}</td>"
        f"<td>{e(a.error or '')}</td></tr>"
        for a in runs
    )
    title = f"Runs of {e(q.agent)} · {e(q.task)} · {e(q.condition)}"
    return (
        f"<h2>{title}</h2>"
        '<table class="grid" id="runs"><thead><tr><th>run</th><th>index</th><th>outcome</th>'
        "<th>status</th><th>attempt</th><th>dollars</th><th>severity</th><th>error</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>" + ("" if runs else "<p>No run recorded yet.</p>")
    )
