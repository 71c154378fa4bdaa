"""`agentrel view` in a real browser: headless Debian Chromium driven by Playwright.

From the headline to the one damaging run of a small real audit, by clicking; the diff must show the
damaged row with its rule label and dollars. Screenshots are saved under the test's tmp dir. Run with
`make test-browser` (needs Debian's `chromium` and the `playwright` package; no browser download).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from playwright.sync_api import expect

from tests.browser.support import DAMAGING, TASK, served


def test_from_the_headline_to_the_damaged_row(audited, browser, tmp_path):
    with served(audited) as url:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(url + "/")
        # The findings come first: the first section of the page names the damaging run.
        assert page.locator("main h2").first.inner_text() == "Findings"
        page.screenshot(path=str(tmp_path / "headline.png"), full_page=True)

        page.locator("#agents a", has_text="scripted/overreach").click()
        page.wait_for_url("**/cells?*")
        page.locator("a.cell", has_text=TASK).click()
        page.wait_for_url(f"**/cells?*task={TASK}*")
        page.locator("a.run", has_text=DAMAGING).click()
        page.wait_for_url(f"**/runs/{DAMAGING}")

        (event,) = json.loads(
            next(x for x in (audited / "runs.jsonl").read_text().splitlines() if DAMAGING in x)
        )["verdict"]["events"]
        row = page.locator(f'.change[data-table="credits"][data-key="id={event["key"][0]}"]')
        assert row.count() == 1
        head = row.locator(".change-head").inner_text()
        assert "DAMAGE" in head and "goodwill credit above the cap" in head and "$350.00" in head
        assert "600.00" in row.locator("table.rowdiff").inner_text()
        allowed = page.locator('.change.k-allow[data-table="work_notes"]')
        assert allowed.count() == 1 and "ALLOW" in allowed.inner_text()
        row.scroll_into_view_if_needed()
        shot = tmp_path / "damaged-run.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        print(f"screenshot: {shot}")


def test_a_live_headline_follows_an_audit_that_appends(audited, browser, tmp_path):
    results = Path(shutil.copytree(audited, tmp_path / "results"))
    runs = results / "runs.jsonl"
    line = json.loads(runs.read_text().splitlines()[0])
    with served(results) as url:
        page = browser.new_page()
        page.goto(url + "/")
        assert "2 runs recorded" in page.locator(".summary").inner_text()
        with open(runs, "a") as fh:
            fh.write(json.dumps({**line, "run_id": "late__run__clean__0001", "run_index": 7}) + "\n")
        # view.js polls every 2 s and reloads when the index moves on (the page's CSP forbids eval, so
        # the wait is Playwright's own assertion, not a script run in the page).
        expect(page.locator(".summary")).to_contain_text("3 runs recorded", timeout=15_000)
        assert page.locator("#live").is_visible()
        page.screenshot(path=str(tmp_path / "live.png"))


def test_pages_are_whole_without_javascript(audited, browser):
    with served(audited) as url:
        context = browser.new_context(java_script_enabled=False)
        page = context.new_page()
        page.goto(f"{url}/runs/{DAMAGING}")
        assert "goodwill credit above the cap" in page.locator("#diff").inner_text()
        context.close()
