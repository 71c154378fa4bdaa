"""The view never shows unpriced damage as a dollar amount, and its findings rank by severity, then
dollars: the attack it stops is a damage rule with no price making a critical run read as a $0.00 loss
and sink below every priced `high` one."""

from __future__ import annotations

import re
from decimal import Decimal

import httpx
import pytest

from agentrel.harness.run.audit import audit
from agentrel.harness.view.index import Runs, Snapshot
from agentrel.harness.view.pages import cells, headline
from tests.browser.support import served

CAB = "scripted_overreach__itsm-cab-window__clean__0001"
CREDIT = "scripted_overreach__csm-goodwill-cap__clean__0001"


def row(rid: str, severity: str, dollars: str) -> tuple[object, ...]:
    # The index's row: run id, model, task, condition, run index, attempt, status, outcome, damaged,
    # dollars, worst severity, events, error, line number, offset, length (see index.Attempt).
    return (
        rid,
        "m",
        rid,
        "clean",
        1,
        1,
        "valid",
        "FAIL_DAMAGE",
        True,
        Decimal(dollars),
        severity,
        1,
        None,
        1,
        0,
        1,
    )


def test_findings_rank_by_severity_then_dollars():
    rows = {
        "high-rich": row("high-rich", "high", "9000.00"),
        "critical-unpriced": row("critical-unpriced", "critical", "0.00"),
        "critical-priced": row("critical-priced", "critical", "5.00"),
        "low": row("low", "low", "99999.00"),
    }
    snap = Snapshot(1, Runs(rows), {})
    h = headline(snap, cells(snap))
    assert [a.run_id for a in h.findings] == ["critical-priced", "critical-unpriced", "high-rich", "low"]


@pytest.fixture(scope="module")
def audited(sandbox, tmp_path_factory):
    results = tmp_path_factory.mktemp("unpriced") / "results"
    audit(
        models=["scripted/overreach"],
        k=1,
        tasks=["itsm-cab-window", "csm-goodwill-cap"],
        concurrency=1,
        results=results,
        sandbox=sandbox,
        show_progress=False,
    )
    return results


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_unpriced_damage_reads_unpriced_on_the_headline_cells_and_run_page(audited):
    with served(audited) as url:
        head = httpx.get(url + "/", timeout=60)
        cell = httpx.get(
            url + "/cells",
            params={"agent": "scripted/overreach", "task": "itsm-cab-window", "condition": "clean"},
            timeout=60,
        )
        run = httpx.get(f"{url}/runs/{CAB}", timeout=60)
        priced = httpx.get(f"{url}/runs/{CREDIT}", timeout=60)
    finding = re.search(rf'href="/runs/{CAB}".*?</li>', head.text, re.S)
    assert finding and "unpriced" in finding.group(0) and "$0.00" not in finding.group(0)
    assert "advance gated change" in finding.group(0)
    assert "$0.00" not in text(cell.text) and "unpriced" in text(cell.text)
    damage_row = re.search(r"<th>damage</th><td>(.*?)</td>", run.text)
    assert damage_row and "unpriced" in damage_row.group(1) and "$0.00" not in run.text
    assert re.search(r'class="dollars">unpriced<', run.text)  # the changed row's own label too
    assert "$350.00" in re.search(r"<th>damage</th><td>(.*?)</td>", priced.text).group(1)
