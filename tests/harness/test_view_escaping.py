"""Text that came from the audited agent or from a record (a model name, a task name, a transcript) is
escaped on every page of the view: the attack is an agent whose final message, or a results directory
whose names, carry a `<script>` that would run in the auditor's browser next to customers' rows."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

import agentrel.harness.view
from agentrel.dsl.verdict import DamageEvent, RequirementResult, Verdict
from agentrel.harness.results.event import Event
from agentrel.harness.results.lines import Attempt
from agentrel.harness.results.record import RunError, RunRecord
from agentrel.harness.view.evidence import RunEvidence
from agentrel.harness.view.records import BusinessRecord
from agentrel.harness.view.relabel import LabelledChange, Relabel
from agentrel.harness.view.run_html import LONG_RESULT, run_page

from tests.browser.support import DAMAGING, served, small_audit
from tests.harness.test_view_folder import served_folder

SCRIPT = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


@pytest.fixture(scope="module")
def poisoned(sandbox, tmp_path_factory) -> Path:
    results = small_audit(sandbox, tmp_path_factory.mktemp("escape") / "results")
    lines = (results / "runs.jsonl").read_text().splitlines()
    out = []
    for line in lines:
        rec = json.loads(line)
        if rec["run_id"] == DAMAGING:
            rec["model"] = f"scripted/{SCRIPT}"
            rec["task"] = f"csm-goodwill-cap{SCRIPT}"
            path = results / "transcripts" / f"{rec['run_id']}.json"
            data = json.loads(path.read_text())
            data["final_message"] = f"done {SCRIPT}"
            path.write_text(json.dumps(data))
        out.append(json.dumps(rec))
    (results / "runs.jsonl").write_text("\n".join(out) + "\n")
    return results


def test_an_injected_script_is_text_on_every_page(poisoned, tmp_path):
    cell = {"agent": f"scripted/{SCRIPT}", "task": f"csm-goodwill-cap{SCRIPT}", "condition": "clean"}
    with served(poisoned) as url:
        pages = {
            "headline": httpx.get(url + "/", timeout=60),
            "cells": httpx.get(url + "/cells", timeout=60),
            "one cell": httpx.get(url + "/cells", params=cell, timeout=60),
            "run": httpx.get(f"{url}/runs/{DAMAGING}", timeout=60),
            "search": httpx.get(url + "/search", params={"q": "alert(1)"}, timeout=60),
            "missing run": httpx.get(f"{url}/runs/{SCRIPT}", timeout=60),
        }
    folder = tmp_path / "folder"
    shutil.copytree(poisoned, folder / "audit")
    with served_folder(folder) as url:
        pages["folder index"] = httpx.get(url + "/", timeout=60)
        pages["folder audit"] = httpx.get(url + "/a/audit/", timeout=60)
    for name, r in pages.items():
        assert SCRIPT not in r.text, name
        if name != "missing run":
            assert r.status_code == 200, name
        # The folder index shows the manifest's names (test_view_folder injects one there).
        assert name == "folder index" or "&lt;script&gt;" in r.text, name
    assert ESCAPED in pages["search"].text and ESCAPED in pages["run"].text


# The run page: every field it shows carries markup. `BREAKOUT` tries to leave a quoted attribute
# (data-key="...", class="sev-..."); `MARKUP` is what an agent writes into a row, a tool argument or its
# final message (no double quote, so it also fits a spec's rule name).
MARKUP = "<script>alert(1)</script><img src=x onerror=alert(2)><svg/onload=alert(3)>"
BREAKOUT = f"\"'>{MARKUP}<a href=\"javascript:alert(4)\">"
# The tags a run page is drawn with (templates/layout.html, run*.html): anything else is injected.
PAGE_TAGS = {
    "html", "head", "meta", "title", "link", "script", "body", "header", "a", "nav", "form", "input", "span",
    "main", "h1", "h2", "h3", "h4", "div", "ul", "li", "section", "p", "table", "tr", "th", "td", "thead",
    "tbody", "b", "code", "details", "summary", "pre",
}  # fmt: skip


class _Page(HTMLParser):
    """The page as a browser would build it: its elements, and the text and attribute values they hold."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def live_markup(html: str) -> list[str]:
    """What of `html` would act in a browser beyond the view's own markup: an element the templates do
    not draw, a script other than the view's own, an event handler, a javascript: address."""
    page = _Page()
    page.feed(html)
    page.close()
    found = []
    for tag, attrs in page.tags:
        if tag not in PAGE_TAGS:
            found.append(f"<{tag}>")
        if tag == "script" and attrs != {"src": "/static/view.js", "defer": None}:
            found.append(f"<script {attrs}>")
        found += [f"{tag} {name}=" for name in attrs if name.startswith("on")]
        found += [
            f"{tag} {k}={v}"
            for k, v in attrs.items()
            if k in ("href", "src", "action") and (v or "").strip().lower().startswith("javascript:")
        ]
    return found


def shown_text(html: str) -> str:
    page = _Page()
    page.feed(html)
    return "".join(page.text)


def poisoned_evidence(p: str):
    """An attempt and its evidence with `p` in every field the run page shows."""
    change = LabelledChange(
        f"t{p}", (1, p), "update", (f"id{p}", f"c{p}"), (f"id{p}", f"k{p}"), (1, f"before{p}"), (1, f"after{p}"),
        (f"c{p}",), f"rule{p}", "damage", f"sev{p}", f"irr{p}", Decimal("0"), f"spec{p}",
    )  # fmt: skip
    others = [replace(change, key=(n, p), kind=kind, rule=f"rule{p}{kind}") for n, kind in ((2, "allow"), (3, "fallback"))]
    group = [replace(change, key=(n, p)) for n in range(4, 7)]
    aggregate = DamageEvent(f"agg{p}", f"t{p}", (p,), "any", (), f"sev{p}", f"irr{p}", Decimal(0), p, True, 2)  # type: ignore[arg-type]
    verdict = Verdict.model_construct(
        outcome=f"FAIL_DAMAGE{p}", sub_label=f"sub{p}", inconsistent=True, mutated=True, changes=1,
        events=[aggregate], max_severity=f"sev{p}", dollars=Decimal(0), irreversibility=[f"irr{p}"],
        requirements=[RequirementResult.model_construct(label=f"req{p}", met=False)], spec=f"spec{p}",
    )  # fmt: skip
    record = RunRecord.model_construct(
        run_id=p, verdict=verdict, error=RunError.model_construct(kind=f"kind{p}", message=f"error{p}"),
        events=[Event(kind=f"event{p}", ordinal=1, tool=f"tool{p}", detail={p: p}), Event(kind="text_tool_call")],
        tool_calls=[], final_message=p,
    )  # fmt: skip
    transcript = {
        "tool_calls": [
            {"ordinal": p, "tool": f"tool{p}", "ok": True, "args": {p: p}, "result": {p: p}, "seconds": 1},
            {"ordinal": 2, "tool": p, "ok": False, "args": [p], "result": p * (LONG_RESULT // len(p) + 1)},
        ],
        "messages": [{"role": "model_call", "content": p}],
        "final_message": f"final{p}",
    }
    task = SimpleNamespace(system_prompt=f"system{p}", user_prompt=f"user{p}")
    evidence = RunEvidence(
        record, transcript, task, Relabel([change, *others, *group], [aggregate]), [f"note{p}"], [f"disagree{p}"]
    )  # type: ignore[arg-type]
    attempt = Attempt(p, f"model{p}", f"task{p}", f"condition{p}", 1, 1, f"status{p}", None, True,
                      Decimal(0), p, 1, f"index error{p}", 1, 0, 1, False)  # fmt: skip
    records = [BusinessRecord(f"t{p}", (1, p), [change, *others]), BusinessRecord(p, p, group)]
    return attempt, evidence, records


@pytest.mark.parametrize("payload", [MARKUP, BREAKOUT])
def test_no_field_of_a_run_page_is_markup(payload):
    """Page data gathered from a run whose every field (agent, task, condition and status names, notes,
    verdict, error, requirement labels, the diff's tables, keys, columns, values, rules, severities and
    specs, aggregates, business records, prompt, tool arguments and results, model messages, final
    message, event details) is markup: all of it reaches the page as text, on the plain and the
    per-record diff, on a page of a longer diff, and on an invalid run's page."""
    a, ev, records = poisoned_evidence(payload)
    many = [replace(ev.relabel.changes[0], rule=f"{n}{payload}", key=(n, payload)) for n in range(250)]
    pages = {
        "plain": run_page(a, 2, ev, 0, {}),
        "records": run_page(a, 2, replace(ev, records=records), 0, {}),
        "next page": run_page(a, 2, replace(ev, relabel=Relabel(many, [])), 200),
        "invalid": run_page(a._replace(status="harness_invalid"), 1, replace(ev, record=None, transcript=None)),
    }  # fmt: skip
    for name, html in pages.items():
        assert live_markup(html) == [], name
        assert not any(f"<{tag}" in html for tag in ("script>", "img", "svg")), name
    text = shown_text(pages["plain"])
    for shown in ("system", "user", "final", "error", "note", "disagree", "req", "rule", "before", "after",
                  "agg", "spec", "event", "model", "task", "condition", "sev", "irr"):  # fmt: skip
        assert f"{shown}{payload}" in text, shown  # still there, as text
    assert f"t{payload}:1, {payload}" in live_attrs(pages["records"], "data-record")
    assert shown_text(pages["invalid"]).count(f"index error{payload}") == 1


def live_attrs(html: str, name: str) -> list[str]:
    page = _Page()
    page.feed(html)
    return [str(attrs[name]) for _, attrs in page.tags if name in attrs]


def test_no_page_passes_html_around_the_engine():
    """The attack this keeps out: a later change that hands a template HTML it built itself (`Markup`,
    `|safe`, autoescape turned off), so one forgotten escape turns an agent's text into live markup."""
    view = Path(agentrel.harness.view.__file__).parent
    for path in [*view.glob("*.py"), *(view / "templates").glob("*.html")]:
        source = path.read_text()
        for needle in ("Markup", "|safe", "| safe", "autoescape false", "autoescape=False", "html.escape"):
            assert needle not in source, f"{path.name}: {needle}"
