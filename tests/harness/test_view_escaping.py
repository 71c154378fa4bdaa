"""Text that came from the audited agent or from a record (a model name, a task name, a transcript) is
escaped on every page of the view: the attack is an agent whose final message, or a results directory
whose names, carry a `<script>` that would run in the auditor's browser next to customers' rows."""

from __future__ import annotations

import json
import re
import shutil
import sys
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
from agentrel.harness.view.run_html import LONG_RESULT, run_page, transcript_html
from tests.browser.support import DAMAGING, served, small_audit
from tests.harness.test_view_folder import served_folder

REPO = Path(__file__).resolve().parents[2]
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
BREAKOUT = f'"\'>{MARKUP}<a href="javascript:alert(4)">'
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
        table=f"t{p}",
        key=(1, p),
        op="update",
        columns=(f"id{p}", f"c{p}"),
        key_columns=(f"id{p}", f"k{p}"),
        before=(1, f"before{p}"),
        after=(1, f"after{p}"),
        changed=(f"c{p}",),
        rule=f"rule{p}",
        kind="damage",
        severity=f"sev{p}",
        irreversibility=f"irr{p}",
        dollars=Decimal("0"),
        spec=f"spec{p}",
    )
    others = [
        replace(change, key=(n, p), kind=kind, rule=f"rule{p}{kind}")
        for n, kind in ((2, "allow"), (3, "fallback"))
    ]
    group = [replace(change, key=(n, p)) for n in range(4, 7)]
    aggregate = DamageEvent(f"agg{p}", f"t{p}", (p,), "any", (), f"sev{p}", f"irr{p}", Decimal(0), p, True, 2)
    verdict = Verdict.model_construct(
        outcome=f"FAIL_DAMAGE{p}", sub_label=f"sub{p}", inconsistent=True, mutated=True, changes=1,
        events=[aggregate], max_severity=f"sev{p}", dollars=Decimal(0), irreversibility=[f"irr{p}"],
        requirements=[RequirementResult.model_construct(label=f"req{p}", met=False)], spec=f"spec{p}",
    )  # fmt: skip
    events = [Event(kind=f"event{p}", ordinal=1, tool=f"tool{p}", detail={p: p})]
    events.append(Event(kind="text_tool_call"))  # the final message's kind, said beside it
    error = RunError.model_construct(kind=f"kind{p}", message=f"error{p}")
    record = RunRecord.model_construct(run_id=p, verdict=verdict, error=error, events=events, final_message=p)
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
        record,
        transcript,
        task,
        Relabel([change, *others, *group], [aggregate]),
        [f"note{p}"],
        [f"disagree{p}"],
    )
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
    invalid = a._replace(status="harness_invalid")
    pages = {
        "plain": run_page(a, 2, ev, 0, {}),
        "records": run_page(a, 2, replace(ev, records=records), 0, {}),
        "next page": run_page(a, 2, replace(ev, relabel=Relabel(many, [])), 200),
        "invalid": run_page(invalid, 1, replace(ev, record=None, transcript=None)),
    }
    for name, html in pages.items():
        assert live_markup(html) == [], name
        assert not any(f"<{tag}" in html for tag in ("script>", "img", "svg")), name
    text = shown_text(pages["plain"])
    fields = "system user final error kind note disagree req rule before after agg spec event tool model task"
    for shown in (*fields.split(), "condition", "sev", "irr", "sub"):
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


@pytest.fixture(scope="module")
def marked_up(sandbox, tmp_path_factory) -> tuple[Path, Path, str]:
    """A real audit of an agent program that writes markup everywhere it can: into the rows it changes
    (the credit's reason, a work note long enough that its tool result folds away), its tool arguments and
    its final message. Then the rest of what a run page shows carries markup too: the record's error,
    requirement label, verdict spec, condition event and the rule of a row another spec labelled (edited
    into runs.jsonl, as a damaged results directory would have them), and a suite whose prompt and damage
    rule name carry it (AGENTREL_SUITE_DIR, which the view reads the prompt and labels from)."""
    from agentrel.harness.agents.external import ExternalSpec
    from agentrel.harness.results.directory import ResultsDir
    from agentrel.harness.run.audit import audit

    tmp = tmp_path_factory.mktemp("marked-up")
    note = " ".join([f"Applied $600 {MARKUP}"] * 30)  # > LONG_RESULT once the tool echoes it
    steps = [
        [
            "issue_credit",
            {"account_id": 10201, "case_id": 10201, "amount": 600, "reason": f"outage {MARKUP}"},
        ],
        ["add_work_note", {"record_table": "cases", "record_id": 10201, "note": note}],
    ]
    plan = tmp / "plan.json"
    plan.write_text(json.dumps({"steps": steps, "final": f"done {BREAKOUT}"}))
    program = Path(__file__).with_name("plain_mcp_program.py")
    spec = ExternalSpec(name="marker", command=[sys.executable, "-S", str(program), str(plan)], timeout_s=120)
    results = tmp / "results"
    audit(models=[], agents=[spec], k=1, tasks=["csm-goodwill-cap"], concurrency=1, results=results,
          sandbox=sandbox, show_progress=False)  # fmt: skip
    (record,) = ResultsDir(results).records()
    assert record.verdict is not None and record.verdict.outcome == "FAIL_DAMAGE", (
        record.error,
        record.verdict,
    )
    rec = json.loads((results / "runs.jsonl").read_text())
    rec["error"] = {"kind": "agent", "message": f"error {BREAKOUT}"}
    rec["verdict"]["spec"] = f"spec {BREAKOUT}"
    rec["verdict"]["requirements"][0]["label"] = f"requirement {BREAKOUT}"
    rec["verdict"]["events"][0].update(rule=f"recorded rule {BREAKOUT}", spec=f"injection:{BREAKOUT}")
    rec["events"].append(
        {"kind": f"event {BREAKOUT}", "ordinal": 1, "tool": BREAKOUT, "detail": {"x": BREAKOUT}}
    )
    (results / "runs.jsonl").write_text(json.dumps(rec) + "\n")
    suite = tmp / "suite"
    (suite / "tasks" / "csm").mkdir(parents=True)
    (suite / "damage_specs").mkdir()
    task = (REPO / "tasks" / "csm" / "csm-goodwill-cap.yaml").read_text()
    task = task.replace("You are the billing-care agent", f"You are {MARKUP} the billing-care agent")
    (suite / "tasks" / "csm" / "csm-goodwill-cap.yaml").write_text(task)
    dmg = (REPO / "damage_specs" / "csm-goodwill-cap.dmg").read_text()
    dmg = dmg.replace('"work note on the case"', f'"work note on the case {MARKUP}"')
    (suite / "damage_specs" / "csm-goodwill-cap.dmg").write_text(dmg)
    return results, suite, record.run_id


def test_a_run_that_writes_markup_everywhere_is_served_as_text(marked_up, monkeypatch):
    """The attack: an audited agent puts script into its rows, arguments and answer (and a damaged record
    or suite into everything else) to run it in the auditor's browser next to customers' rows. The run page
    served by the real view over HTTP carries none of it as markup, and shows all of it as text."""
    results, suite, rid = marked_up
    monkeypatch.setenv("AGENTREL_SUITE_DIR", str(suite))
    with served(results) as url:
        r = httpx.get(f"{url}/runs/{rid}", timeout=60)
    assert r.status_code == 200
    assert live_markup(r.text) == []
    assert (
        not any(f"<{tag}" in r.text for tag in ("script>", "img", "svg"))
        and '<a href="javascript' not in r.text
    )
    text = shown_text(r.text)
    for shown in (
        f"outage {MARKUP}",  # a changed row's value, and the tool argument that wrote it
        f"done {BREAKOUT}",  # the final message
        f"error {BREAKOUT}",
        f"spec {BREAKOUT}",
        f"requirement {BREAKOUT}",
        f"recorded rule {BREAKOUT}",  # the row's label, kept from the record
        f"from spec injection:{BREAKOUT}",
        f"event {BREAKOUT}",
        f"You are {MARKUP} the billing-care agent",  # the prompt
        f"work note on the case {MARKUP}",  # the current spec's rule for the note's row
        "has changed since this audit",  # the note on the edited spec
    ):
        assert shown in text, shown
    folded = re.search(
        r"<details><summary>result \((\d+) characters\)</summary><pre>(.*?)</pre>", r.text, re.S
    )
    assert folded and int(folded.group(1)) > LONG_RESULT and "&lt;script&gt;" in folded.group(2)


def test_a_call_without_an_ordinal_reads_as_unknown_not_as_python():
    """Issue 33.12: a Python `None` never reaches what a user reads."""
    transcript = {"tool_calls": [{"tool": "lookup", "ok": True, "ordinal": None}, {"tool": "x", "ok": True}]}
    shown = transcript_html(RunEvidence(None, transcript, None, None), None)
    assert "None" not in shown and shown.count("#?") == 2
