"""`agentrel view` over HTTP on 127.0.0.1: pages, the row-level diff with its rules, live refresh,
bad input in page and terminal, and that it never writes into the results directory."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.browser.support import CLEAN, DAMAGING, TASK, served, small_audit, tree

AGENT = "scripted/overreach"


@pytest.fixture(scope="module")
def audited(sandbox, tmp_path_factory) -> Path:
    return small_audit(sandbox, tmp_path_factory.mktemp("view") / "results")


@pytest.fixture
def results(audited: Path, tmp_path: Path) -> Path:
    """A copy each test may append to; `audited` itself stays as the audit left it."""
    return Path(shutil.copytree(audited, tmp_path / "results"))


def damage_events(results: Path, rid: str) -> list[dict[str, object]]:
    for line in (results / "runs.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["run_id"] == rid:
            return list(rec["verdict"]["events"])
    raise AssertionError(f"no run {rid}")


def text(page: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def test_headline_leads_with_the_damaging_run_and_counts_invalid_runs(audited):
    with served(audited) as url:
        r = httpx.get(url + "/")
    assert r.status_code == 200
    page = text(r.text)
    assert page.index("Findings") < page.index("Agents")
    assert f'href="/runs/{DAMAGING}"' in r.text
    assert "2 runs recorded · 1 damaging · invalid: 0" in page
    assert "1/1 = 100.0%" in page and "invalid: 0" in page  # the overreach agent's row
    assert r.headers["content-security-policy"].startswith("default-src 'self'")


def test_cells_filter_sort_and_list_one_cells_runs(audited):
    with served(audited) as url:
        one = httpx.get(url + "/cells", params={"agent": AGENT, "task": TASK, "condition": "clean"})
        damage = httpx.get(url + "/cells", params={"outcome": "damage"})
        by_dollars = httpx.get(url + "/cells", params={"sort": "dollars", "desc": "1"})
        bad = httpx.get(url + "/cells", params={"outcome": "sideways"})
    assert f'href="/runs/{DAMAGING}"' in one.text and CLEAN not in one.text
    assert (
        "scripted/overreach" in damage.text and "scripted/oracle" not in text(damage.text).split("Filter")[1]
    )
    rows = re.findall(r"<tr><td>(scripted/\w+)</td>", by_dollars.text)
    assert rows == ["scripted/overreach", "scripted/oracle"]
    assert bad.status_code == 400 and "outcome= must be one of" in bad.text


def test_run_page_shows_each_changed_row_with_the_rule_that_labelled_it(audited):
    with served(audited) as url:
        r = httpx.get(f"{url}/runs/{DAMAGING}", timeout=60)
        clean = httpx.get(f"{url}/runs/{CLEAN}", timeout=60)
    assert r.status_code == 200
    changes = re.findall(r'<div class="change k-(\w+)" data-table="(\w+)" data-key="([^"]*)">', r.text)
    (event,) = damage_events(audited, DAMAGING)  # the row the stored verdict names
    assert ("damage", "credits", f"id={event['key'][0]}") in changes
    assert any(kind == "allow" and table == "work_notes" for kind, table, _ in changes)
    page = text(r.text)
    assert "goodwill credit above the cap high · governance · $350.00" in page
    assert "amount 600.00" in page  # the inserted row's values
    assert "You are the billing-care agent" in page  # the prompt
    assert "issue_credit" in page and '"amount": 600' in html.unescape(r.text)  # a call's arguments
    assert "Final message" in page
    assert "the record names damage" not in page  # the re-run labeller agrees with the stored verdict
    assert "DAMAGE" in page and "PASS" in text(clean.text)


def test_an_update_highlights_exactly_the_changed_columns(sandbox, tmp_path):
    from agentrel.harness.run.audit import audit

    results = tmp_path / "results"
    audit(
        models=["scripted/overreach"],
        k=1,
        tasks=["itsm-cab-window"],
        concurrency=1,
        results=results,
        sandbox=sandbox,
        show_progress=False,
    )
    rid = "scripted_overreach__itsm-cab-window__clean__0001"
    with served(results) as url:
        r = httpx.get(f"{url}/runs/{rid}", timeout=60)  # a run page labels again: slow on a loaded host
    block = r.text[r.text.index('data-table="change_requests" data-key="id=9002"') :]
    block = block[: block.index("</table>")]
    highlighted = re.findall(r'<tr class="chg"><th>(\w+)</th>', block)
    assert set(highlighted) == {"state", "planned_start", "planned_end"}
    assert "advance gated change" in block


def test_live_refresh_follows_appended_records_torn_lines_and_invalid_runs(results):
    said: list[str] = []
    runs = results / "runs.jsonl"
    line = json.loads(runs.read_text().splitlines()[0])
    with served(results, said) as url:
        v0 = httpx.get(url + "/api/version").json()
        invalid = {**line, "run_id": "x__late__clean__0001", "run_index": 9, "status": "provider_invalid"}
        invalid.update(verdict=None, error={"kind": "provider", "message": "HTTP 529"})
        with open(runs, "a") as fh:
            fh.write(json.dumps(invalid) + "\n" + json.dumps({**line, "run_id": "x__torn"})[:80])
        v1 = httpx.get(url + "/api/version").json()
        page = text(httpx.get(url + "/").text)
        assert v1["version"] > v0["version"] and v1["runs"] == 3 and v1["torn"]
        assert "3 runs recorded" in page and "invalid: 1 provider_invalid" in page
        assert "torn line" in page
        assert any("torn line" in s for s in said)
        late = text(httpx.get(url + "/runs/x__late__clean__0001").text)
        assert "INVALID — this run has no valid verdict and is counted in no rate" in late
        assert "provider_invalid" in late


def test_a_tampered_dump_is_refused_not_drawn(results):
    """The view reads dumps through the results owner: one whose bytes are not the state its digest
    names (a row edited, the file cleanly re-compressed) is refused on the page, never diffed."""
    import gzip

    rec = next(json.loads(x) for x in (results / "runs.jsonl").read_text().splitlines() if DAMAGING in x)
    path = results / "dumps" / f"{rec['after_digest']}.delta.jsonl.gz"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines(keepends=True)
    lines[-1] = lines[-1].replace("1", "2", 1)  # one value of the run's changed rows
    path.write_bytes(gzip.compress("".join(lines).encode()))
    with served(results) as url:
        page = text(httpx.get(f"{url}/runs/{DAMAGING}", timeout=60).text)
    assert f"the post-run dump {rec['after_digest'][:12]} is refused" in page
    assert "The row-level diff is not available" in page


def test_missing_evidence_is_said_on_the_run_page(results):
    rec = next(json.loads(x) for x in (results / "runs.jsonl").read_text().splitlines() if DAMAGING in x)
    (results / "dumps" / f"{rec['after_digest']}.delta.jsonl.gz").unlink()
    (results / "transcripts" / f"{DAMAGING}.json").unlink()
    with served(results) as url:
        r = httpx.get(f"{url}/runs/{DAMAGING}")
    page = text(r.text)
    assert r.status_code == 200
    assert f"the post-run dump {rec['after_digest'][:12]} is missing from dumps/" in page
    assert f"transcript {DAMAGING}.json is missing" in page
    assert "The row-level diff is not available" in page


def test_a_damaged_line_is_named_in_page_and_terminal_and_the_rest_is_shown(results):
    said: list[str] = []
    with open(results / "runs.jsonl", "a") as fh:
        fh.write("{not json\n")
    with served(results, said) as url:
        page = text(httpx.get(url + "/").text)
    assert "runs.jsonl:3: not a run record (not valid JSON at column 2); left out" in page
    assert "2 runs recorded" in page
    assert any("runs.jsonl:3: not a run record" in s for s in said)


def test_the_view_never_writes_into_the_results_directory(results):
    before = tree(results)
    os.chmod(results, 0o555)  # and it reads a directory it may not write
    try:
        with served(results) as url:
            for path in ["/", "/cells", f"/runs/{DAMAGING}", f"/runs/{CLEAN}", "/api/version"]:
                # The first run page loads its dumps: slow on a loaded machine, not a hang.
                assert httpx.get(url + path, timeout=60).status_code == 200, path
    finally:
        os.chmod(results, 0o755)
    assert tree(results) == before


def test_unknown_pages_and_runs_are_sentences_not_tracebacks(audited):
    with served(audited) as url:
        run = httpx.get(url + "/runs/nobody__nothing__clean__0001")
        page = httpx.get(url + "/nowhere")
    assert run.status_code == 404 and "no run &#39;nobody__nothing__clean__0001&#39;" in run.text
    assert page.status_code == 404 and "Traceback" not in page.text


def test_text_from_the_agent_is_escaped(results):
    runs = results / "runs.jsonl"
    lines = runs.read_text().splitlines()
    rec = json.loads(lines[0])
    transcript = results / "transcripts" / f"{rec['run_id']}.json"
    data = json.loads(transcript.read_text())
    data["final_message"] = "<script>alert(1)</script>"
    transcript.write_text(json.dumps(data))
    with served(results) as url:
        r = httpx.get(f"{url}/runs/{rec['run_id']}", timeout=60)
    assert "<script>alert(1)</script>" not in r.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text
    assert "does not match the digest in its record" in r.text  # and the edit is noticed


def agentrel(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentrel.harness.cli", *args], capture_output=True, text=True, timeout=60
    )


def test_not_a_results_directory_is_one_line_and_exit_code_3(tmp_path):
    r = agentrel("view", str(tmp_path / "missing"))
    assert r.returncode == 3
    assert r.stderr.strip().splitlines() == [f"agentrel: error: {tmp_path / 'missing'}: no such directory"]
    (tmp_path / "empty").mkdir()
    r = agentrel("view", str(tmp_path / "empty"))
    assert r.returncode == 3 and "not a results directory" in r.stderr and "Traceback" not in r.stderr
