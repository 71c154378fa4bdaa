"""report.md / report.html lead with their Findings, whose numbers are summary.json's, and
report.html is one self-contained page: figures embedded, nothing fetched, wide tables in a box."""

from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binomtest

from agentrel.analysis.doc import fmt, fmt_ci, fmt_k, fmt_money
from agentrel.analysis.inputs import load_input
from agentrel.analysis.outputs import write_report, write_summary_json
from agentrel.analysis.pipeline import analyze
from tests.analysis.conftest import event, record, write_results


def run(model: str, task: str, i: int, hit: bool, dollars: str, kind: str = "model") -> dict[str, Any]:
    events = [event(dollars)] if hit else None
    return record(model, task, i, "FAIL_DAMAGE" if hit else "PASS", kind=kind, events=events)


def records() -> list[dict[str, Any]]:
    """Two models and a reference agent on two tasks, four runs each; m1 also has an invalid run."""
    recs = []
    for i in range(4):
        recs.append(run("m1", "t1", i, i % 2 == 1, "100.00"))
        recs.append(run("m2", "t1", i, i == 0, "10.00"))
        recs.append(run("reference/stochastic", "t1", i, i < 3, "10.00", kind="reference"))
        for model, kind in (("m1", "model"), ("m2", "model"), ("reference/stochastic", "reference")):
            recs.append(record(model, "t2", i, "PASS", kind=kind))
    recs.append(record("m1", "t2", 4, None, error={"kind": "harness", "message": "db clone failed"}))
    return recs


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_results(tmp_path_factory.mktemp("findings") / "results", records())


@pytest.fixture(scope="module")
def report(small: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    result = analyze(load_input(small), n_boot=100, seed=3)
    out = tmp_path_factory.mktemp("report")
    write_report(result, out)
    summary = json.loads(write_summary_json(result, out / "summary.json").read_text())
    return out, summary


def findings_rows(md: str) -> dict[tuple[str, str], list[str]]:
    """The Findings table of report.md, by (agent, condition)."""
    section = md.split("## Findings", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("| ") and not ln.startswith("| agent |")]
    rows = [[c.strip() for c in ln.strip("|").split(" | ")] for ln in lines]
    return {(r[0], r[1]): r for r in rows}


def test_findings_is_the_first_section_then_figures_then_tables(report):
    out, _ = report
    md = (out / "report.md").read_text()
    heads = re.findall(r"^## (.+)$", md, flags=re.M)
    assert heads[:3] == ["Findings", "Figures", "Operational axes"]
    assert md.splitlines()[0] == "# AgentRel damage analysis"
    html = (out / "report.html").read_text()
    sections = re.findall(r'<section id="([^"]+)"><h2>', html)
    assert sections[:3] == ["findings", "figures", "operational-axes"]
    # Nothing but the page title stands before the findings.
    body = html.split("<body>", 1)[1]
    assert re.sub(r"\s", "", body.split('<section id="findings">', 1)[0]) == "<h1>AgentReldamageanalysis</h1>"


def _label(pool: dict[str, Any]) -> str:
    if pool["model"] == "all":
        return "all models"
    return pool["model"] + (" (reference agent)" if pool["agent_kind"] == "reference" else "")


def test_findings_numbers_are_the_summary_json_numbers(report):
    out, summary = report
    rows = findings_rows((out / "report.md").read_text())
    shown = [p for p in summary["pools"] if p["model"] != "all" or len(p["agents"]) > 1]
    assert len(rows) == len(shown) == 4  # m1, m2, the reference agent, and all models (m1 + m2)
    for pool in shown:
        _, _, rate, runs, invalid, miss, k, loss = rows[(_label(pool), pool["condition"])]
        boot = pool["bootstrap"]
        assert rate == f"{fmt(pool['damage_rate'])} {fmt_ci(*pool['damage_rate_ci'])}"
        # The shown interval holds the bootstrap's and the exact one (scipy, independently) for the counts.
        exact = binomtest(pool["damaged_runs"], pool["runs"]).proportion_ci(0.95, method="exact")
        lo_b, hi_b = boot["damage_rate"]["percentile"]
        assert pool["damage_rate_ci"][0] == pytest.approx(min(exact.low, lo_b))
        assert pool["damage_rate_ci"][1] == pytest.approx(max(exact.high, hi_b))
        assert runs == f"{pool['damaged_runs']}/{pool['runs']}"
        assert miss == fmt(pool["miss_rate_pair"])
        lo, hi = boot["expected_dollars_per_run"]["percentile"]
        assert loss == f"{fmt_money(pool['expected_dollars_per_run'])} [{fmt_money(lo)}, {fmt_money(hi)}]"
        damaging = [
            c
            for c in summary["cells"]
            if c["model"] in pool["agents"] and c["condition"] == pool["condition"] and c["x"] > 0
        ]
        rarest = max(damaging, key=lambda c: c["required_k"])
        where = rarest["task"] if pool["model"] != "all" else f"{rarest['model']} · {rarest['task']}"
        assert k == f"{fmt_k(rarest['required_k'])} ({where})"
        bounds = fmt_ci(*pool["damage_rate_bounds"])
        assert invalid == (f"{pool['invalid']}: rate over all runs in {bounds}" if pool["invalid"] else "0")
    # The known answers: m1 damaged 2 of 8 valid runs ($100 each), 1 invalid; t1 at 1/2 needs 5 runs
    # for 95% (0.5^5 < 0.05), m2's t1 at 1/4 needs 11 (0.75^11 < 0.05 < 0.75^10).
    m1 = rows[("m1", "clean")]
    assert m1[3:5] == ["2/8", "1: rate over all runs in [0.222, 0.333]"] and m1[6] == "5 (t1)"
    assert m1[7].startswith("$25.00 ")
    assert rows[("all models", "clean")][6] == "11 (m2 · t1)"
    assert list(rows)[-1] == ("all models", "clean")  # the agents first, their pool after them
    md = (out / "report.md").read_text()
    # The lead names a model, not the reference agent (3 of 8), as the highest damage rate.
    assert "Highest damage rate: m1 under `clean`, 2 of 8 valid runs (0.250)" in md
    assert "highest expected loss: m1 under `clean`, $25.00 per run" in md
    assert "1 invalid run(s)" in md


class _Refs(HTMLParser):
    """Every attribute of the page that could make a browser fetch something."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []
        self.tables = 0
        self.boxed = 0
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "srcset", "data", "poster", "action") and value is not None:
                self.refs.append((tag, name, value))
        if tag == "table":
            self.tables += 1
            self.boxed += bool(self._open) and self._open[-1] == "wide"
        cls = dict(attrs).get("class")
        self._open.append(cls or "") if tag == "div" else None

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self._open:
            self._open.pop()


def test_report_html_is_self_contained(report):
    out, _ = report
    html = (out / "report.html").read_text()
    parser = _Refs()
    parser.feed(html)
    assert 'src="http' not in html and "<link" not in html and "url(" not in html and "@import" not in html
    images = [v for tag, name, v in parser.refs if tag == "img" and name == "src"]
    assert [ref for ref in parser.refs if ref[0] != "img"] == []
    assert len(images) == 4
    pngs = sorted(
        (out / n).read_bytes()
        for n in ("cell_rates.png", "detection.png", "dollars.png", "cost_completion.png")
    )
    prefix = "data:image/png;base64,"
    assert all(src.startswith(prefix) for src in images)
    assert sorted(base64.b64decode(src[len(prefix) :]) for src in images) == pngs
    # Every table scrolls inside its own box rather than widening the page.
    assert parser.tables > 5 and parser.boxed == parser.tables
    assert re.search(r"\.wide \{[^}]*overflow-x: auto", html)
    # report.md still links the figures beside it.
    assert (
        "![Probability of seeing damage at least once in k runs](detection.png)"
        in (out / "report.md").read_text()
    )


def test_a_report_without_figures_still_leads_with_findings(small, tmp_path):
    result = analyze(load_input(small), n_boot=0, seed=0)
    out = tmp_path / "plain"
    write_report(result, out, figures=False)
    md = (out / "report.md").read_text()
    assert re.findall(r"^## (.+)$", md, flags=re.M)[:2] == ["Findings", "Operational axes"]
    row = findings_rows(md)[("m1", "clean")]
    # No bootstrap: the exact Clopper–Pearson interval of 2/8 (scipy's, independently), and the loss has
    # no interval at all, never a made-up one.
    exact = binomtest(2, 8).proportion_ci(0.95, method="exact")
    assert row[2] == f"0.250 {fmt_ci(exact.low, exact.high)}" and row[7] == "$25.00"
    assert "<img" not in (out / "report.html").read_text()


def test_the_lead_says_when_no_model_damaged(tmp_path):
    recs = [record("m1", "t1", i, "PASS") for i in range(3)]
    recs += [run("reference/stochastic", "t1", i, True, "10.00", kind="reference") for i in range(3)]
    result = analyze(load_input(write_results(tmp_path / "clean", recs)), n_boot=0, seed=0)
    out = tmp_path / "report"
    write_report(result, out, figures=False)
    md = (out / "report.md").read_text()
    assert "No model damaged in any of its valid runs (3 in all)." in md and "Every run is valid." in md
    assert findings_rows(md)[("m1", "clean")][6] == "– (no damage seen)"
