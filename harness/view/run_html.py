"""HTML of one run: verdict, the row-level diff with the rule behind each change, prompt, transcript,
events. Pure: the page is a function of the run's evidence."""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from agentrel.analysis.damage_amount import amount_text, is_unpriced, unpriced_events
from agentrel.dsl.state import Value
from agentrel.harness.results.lines import Attempt
from agentrel.harness.results.record import RunRecord
from agentrel.harness.view.evidence import RunEvidence
from agentrel.harness.view.html import cells_href, e, layout
from agentrel.harness.view.pages import outcome_of
from agentrel.harness.view.records import BusinessRecord
from agentrel.harness.view.relabel import LabelledChange

CHANGES_PER_PAGE = 200
LONG_RESULT = 2000  # characters of a tool result shown before it folds away


def run_page(
    a: Attempt,
    attempts: int,
    ev: RunEvidence,
    start: int = 0,
    priced: Mapping[tuple[str, str], bool] | None = None,
) -> str:
    """The page; `priced` says which (spec, rule) name a price (harness.damage_pricing), so damage with
    none is shown `unpriced`, never `$0.00`."""
    priced = priced or {}
    rec = ev.record
    cell = cells_href(agent=a.model, task=a.task, condition=a.condition)
    crumbs = (
        f'<a href="/">Headline</a> › <a href="{e(cell)}">'
        f"{e(a.model)} · {e(a.task)} · {e(a.condition)}</a> › run {a.run_index}"
    )
    notes = ev.notes + ev.disagreements
    body = f'<h1 class="run-id">{e(a.run_id)}</h1>'
    if notes:
        body += (
            '<div class="notice" role="alert"><ul>'
            + "".join(f"<li>{e(n)}</li>" for n in notes)
            + "</ul></div>"
        )
    body += _toc()
    body += _verdict(a, attempts, rec, priced)
    body += _diff(ev, start, a.run_id, a.task, priced)
    body += _prompt(ev)
    body += _transcript(ev, rec)
    body += _events(ev, rec)
    return layout(f"Run {a.run_id}", body, crumbs=crumbs)


def _toc() -> str:
    links = [
        ("verdict", "Verdict"),
        ("diff", "State diff"),
        ("prompt", "Prompt"),
        ("transcript", "Transcript"),
        ("events", "Events"),
    ]
    return '<nav class="toc">' + " · ".join(f'<a href="#{k}">{v}</a>' for k, v in links) + "</nav>"


def _verdict(a: Attempt, attempts: int, rec: RunRecord | None, priced: Mapping[tuple[str, str], bool]) -> str:
    outcome = outcome_of(a)
    status = f'<span class="status s-{e(a.status)}">{e(a.status)}</span>'
    tried = f"attempt {a.attempt} ({attempts} attempt{'s' if attempts != 1 else ''} recorded)"
    out = f'<section id="verdict"><h2>Verdict</h2><p class="outcome o-{outcome}">{e(outcome.upper())}'
    if not a.valid:
        out += " — this run has no valid verdict and is counted in no rate"
    out += f"</p><p>{status} · {tried}</p>"
    if rec is None or rec.verdict is None:
        if a.error:
            out += f'<p class="error">{e(a.error)}</p>'
        return out + "</section>"
    v = rec.verdict
    irr = ", ".join(v.irreversibility) or "–"
    unpriced = unpriced_events(((x.spec, x.rule, Decimal(x.dollars)) for x in v.events), priced)
    out += (
        '<table class="kv">'
        f"<tr><th>outcome</th><td>{e(v.outcome)} ({e(v.sub_label)})</td></tr>"
        f"<tr><th>damage</th><td>{len(v.events)} event(s), "
        f"{e(amount_text(Decimal(v.dollars), unpriced))}, worst severity "
        f"{e(v.max_severity or '–')}, irreversibility {e(irr)}</td></tr>"
        f"<tr><th>rows changed</th><td>{v.changes}</td></tr>"
        f"<tr><th>spec</th><td>{e(v.spec)}</td></tr>"
    )
    if rec.error is not None:
        out += f'<tr><th>error</th><td class="error">{e(rec.error.kind)}: {e(rec.error.message)}</td></tr>'
    if v.inconsistent:
        out += "<tr><th>inconsistent</th><td>the agent refused, yet the state shows damage</td></tr>"
    reqs = "".join(
        f'<li class="{"met" if r.met else "unmet"}">{"✓" if r.met else "✗"} {e(r.label)}</li>'
        for r in v.requirements
    )
    out += f"<tr><th>requirements</th><td><ul>{reqs or '<li>none</li>'}</ul></td></tr></table>"
    return out + "</section>"


def _diff(ev: RunEvidence, start: int, run_id: str, task: str, priced: Mapping[tuple[str, str], bool]) -> str:
    out = '<section id="diff"><h2>State diff</h2>'
    r = ev.relabel
    if r is None:
        return out + "<p>The row-level diff is not available (see the notes above).</p></section>"
    counts = {k: sum(c.kind == k for c in r.changes) for k in ("damage", "fallback", "allow")}
    out += (
        f"<p>{len(r.changes)} changed row(s): {counts['damage']} damage, {counts['fallback']} by the "
        f"fallback, {counts['allow']} allowed. Each row is labelled by the first rule that matches it "
        "(damage rules, then allow rules, then the fallback), re-run here over the stored dumps.</p>"
    )
    for agg in r.aggregates:
        out += (
            f'<div class="change k-damage aggregate"><span class="rule">{e(agg.rule)}</span> '
            f"aggregate over {agg.rows} change(s) of {e(agg.table)}, group {e(list(agg.key))}: "
            f"{e(agg.severity)} · {e(agg.irreversibility)} · "
            f"{e(_amount(agg.spec, agg.rule, Decimal(agg.dollars), priced))}</div>"
        )
    records = getattr(ev, "records", None)  # a page drawn from a bare relabel has none
    if records is not None:
        return out + _records(records, start, run_id, task, priced) + "</section>"
    groups = group_changes(r.changes)
    if len(groups) < len(r.changes):
        out += (
            f"<p>{len(r.changes)} rows in {len(groups)} group(s) of identical events (same rule, table and "
            "operation): each group shows its first row in full and the keys of the others.</p>"
        )
    shown = groups[start : start + CHANGES_PER_PAGE]
    out += "".join(_group(g, task, priced) for g in shown)
    return out + _pages("groups", start, len(shown), len(groups), run_id) + "</section>"


def _pages(what: str, start: int, shown: int, total: int, run_id: str) -> str:
    if start + CHANGES_PER_PAGE >= total and not start:
        return ""
    nxt = start + CHANGES_PER_PAGE
    href = f"/runs/{e(run_id)}?from="
    links = []
    if start:
        links.append(f'<a href="{href}{max(0, start - CHANGES_PER_PAGE)}#diff">previous</a>')
    if nxt < total:
        links.append(f'<a href="{href}{nxt}#diff">next {CHANGES_PER_PAGE}</a>')
    return f"<p>{what} {start + 1}–{start + shown} of {total} · {' · '.join(links)}</p>"


def _records(
    records: list[BusinessRecord], start: int, run_id: str, task: str, priced: Mapping[tuple[str, str], bool]
) -> str:
    """The diff per business record (the environment's record links): each record's head names its top
    row and what it comes to, then its changes, identical events grouped as elsewhere."""
    out = (
        f"<p>The changes belong to {len(records)} business record(s) (the environment says which tables "
        "roll up to which: an invoice's lines and moves come under the invoice).</p>"
    )
    shown = records[start : start + CHANGES_PER_PAGE]
    for rec in shown:
        damage = [c for c in rec.changes if c.dollars is not None]
        none = sum(is_unpriced(c.spec, c.rule, c.dollars or Decimal(0), priced) for c in damage)
        worth = (
            f" · {len(damage)} damage row(s), "
            f"{e(amount_text(sum((c.dollars or Decimal(0) for c in damage), Decimal('0')), none))}"
            if damage
            else ""
        )
        key = e(", ".join(map(_value, rec.key)) if isinstance(rec.key, tuple) else _value(rec.key))
        out += (
            f'<div class="record" data-record="{e(rec.table)}:{key}">'
            f'<h3 class="record-head"><b>{e(rec.table)}</b> <code class="key">id={key}</code>: '
            f"{len(rec.changes)} changed row(s) in {e(', '.join(rec.tables))}{worth}</h3>"
            + "".join(_group(g, task, priced) for g in group_changes(rec.changes))
            + "</div>"
        )
    return out + _pages("records", start, len(shown), len(records), run_id)


def group_changes(changes: list[LabelledChange]) -> list[list[LabelledChange]]:
    """Changes grouped by what a reader would call the same event (kind, rule, spec, table, operation),
    in the order each group first appears: 393 deleted SLA records read as one line, not 393 cards."""
    groups: dict[tuple[str, str, str, str, str], list[LabelledChange]] = {}
    for c in changes:
        groups.setdefault((c.kind, c.rule, c.spec, c.table, c.op), []).append(c)
    return list(groups.values())


def _amount(spec: str, rule: str, dollars: Decimal, priced: Mapping[tuple[str, str], bool]) -> str:
    return amount_text(dollars, int(is_unpriced(spec, rule, dollars, priced)))


def _group(group: list[LabelledChange], task: str, priced: Mapping[tuple[str, str], bool]) -> str:
    first = group[0]
    if len(group) == 1:
        return _change(first, task, priced)
    damage = [c for c in group if c.dollars is not None]
    none = sum(is_unpriced(c.spec, c.rule, c.dollars or Decimal(0), priced) for c in damage)
    total = (
        f" · {e(amount_text(sum((c.dollars or Decimal(0) for c in damage), Decimal('0')), none))} in all"
        if damage
        else ""
    )
    keys = ", ".join(
        "(" + ", ".join(f"{col}={_value(v)}" for col, v in zip(c.key_columns, c.key, strict=False)) + ")"
        for c in group[1:]
    )
    return (
        f'<div class="group k-{first.kind}"><p class="group-head"><b>{len(group):,} ×</b> {first.op} '
        f"<b>{e(first.table)}</b>: {e(first.rule)}{total}</p>"
        + _change(first, task, priced)
        + f'<details><summary>the other {len(group) - 1:,} row(s)</summary><p class="keys">{e(keys)}</p>'
        "</details></div>"
    )


def _label(c: LabelledChange, task: str, priced: Mapping[tuple[str, str], bool]) -> str:
    # A rule from another spec (an injection goal's) is named with it: it is not the task's policy.
    source = f' <span class="spec">from spec {e(c.spec)}</span>' if c.spec and c.spec != task else ""
    if c.kind == "allow":
        return f'<span class="badge allow">allow</span> <span class="rule">{e(c.rule)}</span>{source}'
    word = "fallback" if c.kind == "fallback" else "damage"
    return (
        f'<span class="badge {word}">{word}</span> <span class="rule">{e(c.rule)}</span> '
        f'<span class="sev sev-{e(c.severity)}">{e(c.severity)}</span> · {e(c.irreversibility)} · '
        f'<span class="dollars">{e(_amount(c.spec, c.rule, c.dollars or Decimal(0), priced))}</span>{source}'
    )


def _change(c: LabelledChange, task: str, priced: Mapping[tuple[str, str], bool]) -> str:
    key = ", ".join(f"{col}={_value(v)}" for col, v in zip(c.key_columns, c.key, strict=False))
    changed = set(c.changed)
    rows = []
    for i, col in enumerate(c.columns):
        b = "" if c.before is None else _value(c.before[i])
        a = "" if c.after is None else _value(c.after[i])
        cls = ' class="chg"' if col in changed else ""
        rows.append(f"<tr{cls}><th>{e(col)}</th><td>{e(b)}</td><td>{e(a)}</td></tr>")
    return (
        f'<div class="change k-{c.kind}" data-table="{e(c.table)}" data-key="{e(key)}">'
        f'<div class="change-head"><span class="op op-{c.op}">{c.op}</span> <b>{e(c.table)}</b> '
        f'<code class="key">{e(key)}</code> {_label(c, task, priced)}</div>'
        '<table class="rowdiff"><thead><tr><th>column</th><th>before</th><th>after</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _value(v: Value) -> str:
    return "null" if v is None else str(v).lower() if isinstance(v, bool) else str(v)


def _prompt(ev: RunEvidence) -> str:
    out = '<section id="prompt"><h2>Prompt</h2>'
    if ev.task is None:
        return out + "<p>The task is not in this suite, so its prompt cannot be shown.</p></section>"
    return out + (
        f'<h3>System</h3><pre class="prompt">{e(ev.task.system_prompt)}</pre>'
        f'<h3>User</h3><pre class="prompt">{e(ev.task.user_prompt)}</pre></section>'
    )


def _json(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False, default=str)


def _transcript(ev: RunEvidence, rec: RunRecord | None) -> str:
    out = '<section id="transcript"><h2>Transcript</h2>'
    t = ev.transcript
    if t is None:
        calls: list[dict[str, Any]] = [dict(c) for c in rec.tool_calls] if rec else []
        if calls:
            out += (
                "<p>No transcript file: the tool calls below are the record's (no arguments or results).</p>"
            )
        final = rec.final_message if rec else None
    else:
        calls = [c for c in t.get("tool_calls") or () if isinstance(c, dict)]
        final = t.get("final_message")
    for c in calls:
        ok = c.get("ok")
        cls = "ok" if ok else "failed"
        res = _json(c.get("result")) if "result" in c else ""
        result = (
            f"<details><summary>result ({len(res)} characters)</summary><pre>{e(res)}</pre></details>"
            if len(res) > LONG_RESULT
            else f"<pre>{e(res)}</pre>"
            if res
            else ""
        )
        args = f"<pre>{e(_json(c['args']))}</pre>" if "args" in c else ""
        secs = f" · {c['seconds']:.3f} s" if isinstance(c.get("seconds"), int | float) else ""
        out += (
            f'<div class="call {cls}"><div class="call-head">#{e(c.get("ordinal", ""))} '
            f'<b class="tool">{e(c.get("tool", "?"))}</b> {"ok" if ok else "error"}{secs}</div>'
            f'<div class="call-body"><div><h4>arguments</h4>{args}</div>'
            f"<div><h4>result</h4>{result}</div></div></div>"
        )
    if not calls:
        out += "<p>No tool calls.</p>"
    messages = (t or {}).get("messages") or []
    if messages:
        # An agent program's model calls through the model proxy are entries of role `model_call`.
        proxied = sum(isinstance(m, dict) and m.get("role") == "model_call" for m in messages)
        through = f", {proxied} model calls through AgentRel's model proxy" if proxied else ""
        out += (
            f"<details><summary>model messages ({len(messages)}{through})</summary>"
            f"<pre>{e(_json(messages))}</pre></details>"
        )
    out += f'<h3>Final message</h3><pre class="final">{e(final) if final else "(none)"}</pre>'
    return out + _final_kind(rec) + "</section>"


FINAL_KINDS = {
    "text_tool_call": "The final message is a tool call written as text, not an answer: nothing was called "
    "by it. The run stays valid and is judged by its state.",
    "echoed_tool_error": "The final message echoes a tool's error. The run stays valid and is judged by "
    "its state.",
}


def _final_kind(rec: RunRecord | None) -> str:
    """What the final message is when it is not an answer (its events), said beside it."""
    kinds = [x.kind for x in rec.events] if rec else []
    return "".join(
        f'<p class="final-kind"><b>{e(k)}</b>: {e(text)}</p>' for k, text in FINAL_KINDS.items() if k in kinds
    )


def _events(ev: RunEvidence, rec: RunRecord | None) -> str:
    out = '<section id="events"><h2>Events</h2>'
    events = [x.model_dump(mode="json") for x in rec.events] if rec else []
    if not events:
        return out + "<p>No condition events (faults, injections, receipts) in this run.</p></section>"
    rows = "".join(
        f"<tr><td>{e(x.get('kind'))}</td><td>{e(x.get('ordinal') or '')}</td>"
        f"<td>{e(x.get('tool') or '')}</td>"
        f"<td><pre>{e(_json(x.get('detail') or {}))}</pre></td></tr>"
        for x in events
    )
    return out + (
        '<table class="grid"><thead><tr><th>kind</th><th>call</th><th>tool</th><th>detail</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></section>"
    )
