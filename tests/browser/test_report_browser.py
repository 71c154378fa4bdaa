"""The static report in a real browser: `report.html` of a small real audit, opened alone in a
directory of its own (as a mailed copy would be), in headless Debian Chromium.

The findings block must be the first thing on the page (after its title, inside the first screen),
every figure must show with no file beside it and nothing fetched, and a wide table must scroll in its
own box while the page itself does not. Screenshots go under the test's tmp dir.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentrel.analysis.inputs import load_input
from agentrel.analysis.outputs import write_report
from agentrel.analysis.pipeline import analyze

VIEWPORT = {"width": 1280, "height": 900}


def mailed_report(audited: Path, tmp_path: Path) -> Path:
    """report.html written by analyze, then copied alone into an empty directory."""
    out = tmp_path / "analysis"
    write_report(analyze(load_input(audited), n_boot=200, seed=0), out)
    alone = tmp_path / "inbox" / "report.html"
    alone.parent.mkdir()
    alone.write_bytes((out / "report.html").read_bytes())
    return alone


def open_offline(browser: Any, path: Path, viewport: dict[str, int]) -> tuple[Any, Any, list[str]]:
    """The page, its context, and every request it made other than its own file (all refused)."""
    context = browser.new_context(viewport=viewport)
    fetched: list[str] = []
    own = path.as_uri()

    def refuse(route: Any) -> None:
        if route.request.url == own:
            route.continue_()
        else:
            fetched.append(route.request.url)
            route.abort()

    context.route("**/*", refuse)
    page = context.new_page()
    page.on(
        "request", lambda r: None if r.url in (own,) or r.url.startswith("data:") else fetched.append(r.url)
    )
    page.goto(own)
    page.wait_for_load_state("load")
    return page, context, fetched


def test_the_report_leads_with_its_findings(audited, browser, tmp_path):
    report = mailed_report(audited, tmp_path)
    page, context, fetched = open_offline(browser, report, VIEWPORT)
    # The page's own order: its title, then the findings, then everything else.
    order = page.evaluate("[...document.body.children].map(e => e.tagName + (e.id ? '#' + e.id : ''))")
    assert order[:3] == ["H1", "SECTION#findings", "SECTION#figures"]
    assert page.locator("h2").first.inner_text() == "Findings"
    findings = page.locator("#findings").bounding_box()
    others = [page.locator(f"#{s}").bounding_box() for s in ("figures", "operational-axes", "overview")]
    assert findings is not None and findings["y"] < VIEWPORT["height"] / 4
    assert all(b is not None and b["y"] > findings["y"] + findings["height"] - 1 for b in others)
    # The findings name the one damaging agent of the audit, its run and its dollars, in the first screen.
    agent = page.locator("td:first-child", has_text="scripted/overreach")
    row = page.locator("#findings tbody tr").filter(has=agent)
    assert row.count() == 1
    text = row.inner_text()
    assert "1/1" in text and "$350.00" in text and "1.000" in text
    assert row.bounding_box()["y"] < VIEWPORT["height"]  # type: ignore[index]
    # Every figure shows though no PNG lies beside the page, and nothing was fetched for it.
    sizes = page.evaluate("[...document.images].map(i => [i.complete, i.naturalWidth])")
    assert len(sizes) == 4 and all(done and width > 100 for done, width in sizes)
    assert fetched == []
    page.screenshot(path=str(tmp_path / "report-first-screen.png"))
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    context.close()


def test_wide_tables_scroll_in_their_own_box(audited, browser, tmp_path):
    report = mailed_report(audited, tmp_path)
    page, context, fetched = open_offline(browser, report, {"width": 700, "height": 900})
    page_width = page.evaluate("document.documentElement.scrollWidth")
    assert page_width <= 700  # the page itself never scrolls sideways
    boxes = page.evaluate(
        "[...document.querySelectorAll('.wide')].map(b => [b.scrollWidth, b.clientWidth,"
        " getComputedStyle(b).overflowX])"
    )
    assert boxes and all(overflow == "auto" for _, _, overflow in boxes)
    assert any(scroll > client for scroll, client, _ in boxes)  # the pools table is wider than 700 px
    assert fetched == []
    page.screenshot(path=str(tmp_path / "report-narrow.png"), full_page=True)
    context.close()
