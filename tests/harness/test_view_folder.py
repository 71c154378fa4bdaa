"""`agentrel view results/` serves every audit in the folder with an index; each audit's pages keep working
under its mount (links, the live-reload script and its API re-rooted), and a folder with no audit is
still refused in one line."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from agentrel.harness.view.app import bind
from agentrel.harness.view.folder import create_folder_app, reroot
from tests.browser.support import DAMAGING, small_audit

# A run page's first load reads its dumps: seconds on a loaded machine (2 cores, many suites), not a hang.
get = functools.partial(httpx.get, timeout=60)


@contextmanager
def served_folder(folder: Path) -> Iterator[str]:
    import uvicorn

    sock = bind(0)
    server = uvicorn.Server(
        uvicorn.Config(create_folder_app(folder), log_level="warning", access_log=False, lifespan="off")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        for _ in range(200):
            try:
                httpx.get(url + "/", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.02)
        yield url
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def test_reroot_moves_every_absolute_link_under_the_mount():
    page = b'<a href="/runs/x">r</a><script src="/static/view.js"></script><form action="/cells">'
    assert reroot(page, "/a/one") == (
        b'<a href="/a/one/runs/x">r</a><script src="/a/one/static/view.js"></script>'
        b'<form action="/a/one/cells">'
    )
    assert reroot(b'fetch("/api/version")', "/a/one") == b'fetch("/a/one/api/version")'
    assert reroot(b'<a href="https://x/">', "/a/one") == b'<a href="https://x/">'


def test_a_folder_of_audits_is_served_with_an_index(sandbox, tmp_path):
    folder = tmp_path / "results"
    small_audit(sandbox, folder / "first")
    small_audit(sandbox, folder / "second")
    (folder / "notes").mkdir()  # not an audit: not listed
    with served_folder(folder) as url:
        index = get(url + "/")
        first = get(url + "/a/first/")
        run_links = re.findall(r'href="(/a/first/runs/[^"]+)"', first.text)
        run = get(url + f"/a/first/runs/{DAMAGING}")
        script = get(url + "/a/second/static/view.js")
        version = get(url + "/a/second/api/version")
    assert index.status_code == 200 and 'href="/a/first/"' in index.text and 'href="/a/second/"' in index.text
    assert "notes" not in index.text and "2 results directories" in index.text
    assert first.status_code == 200 and run_links and 'href="/runs/' not in first.text
    assert run.status_code == 200 and "goodwill credit above the cap" in run.text
    assert 'fetch("/a/second/api/version"' in script.text
    assert version.json()["runs"] == 2


def test_a_folder_without_audits_is_refused_in_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    res = subprocess.run(
        [sys.executable, "-m", "agentrel.harness.cli", "view", str(tmp_path / "empty"), "--port", "0"],
        capture_output=True,
        text=True,
        env={**os.environ},
        timeout=60,
    )
    assert res.returncode == 3 and "not a results directory" in res.stderr and res.stderr.count("\n") == 1


def cells_of(html: str, audit: str) -> list[str]:
    row = re.search(rf'<tr><td><a href="/a/{audit}/">{audit}</a></td>(.*?)</tr>', html, re.S)
    assert row, f"no index row for {audit}"
    return [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]


def test_an_audit_created_after_the_server_started_is_served(sandbox, tmp_path):
    folder = tmp_path / "results"
    small_audit(sandbox, folder / "first")
    with served_folder(folder) as url:
        before = get(url + "/a/later/")
        small_audit(sandbox, folder / "later")
        index = get(url + "/")
        later = get(url + "/a/later/")
        run = get(url + f"/a/later/runs/{DAMAGING}")
        escape = get(url + "/a/%2E%2E/")
    assert before.status_code == 404 and "no audit &#39;later&#39;" in before.text
    assert 'href="/a/later/"' in index.text
    assert later.status_code == 200 and f'href="/a/later/runs/{DAMAGING}"' in later.text
    assert run.status_code == 200 and "goodwill credit above the cap" in run.text
    assert escape.status_code == 404


def test_the_index_shows_environment_subjects_runs_damaging_invalid_publishable_and_date(sandbox, tmp_path):
    folder = tmp_path / "results"
    small_audit(sandbox, folder / "first")
    with served_folder(folder) as url:
        html = get(url + "/").text
        (folder / "first" / "evidence_report.json").write_text("{}")
        checked = get(url + "/").text
    head = re.search(r"<thead>(.*?)</thead>", html, re.S)
    assert head and re.findall(r"<th>(.*?)</th>", head.group(1)) == [
        "audit", "environment", "subjects", "runs", "damaging", "invalid", "publishable", "date"
    ]  # fmt: skip
    env, subjects, runs, damaging, invalid, publishable, date = cells_of(html, "first")
    assert env == "agentrel-enterprise" and subjects == "scripted/oracle, scripted/overreach"
    assert (runs, damaging, invalid) == ("2/2", "1", "0")
    assert publishable.startswith("not checked") and re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", date)
    assert cells_of(checked, "first")[5] == "no (evidence only)"


def test_the_index_reads_publications_files_by_their_own_names():
    from agentrel.harness.publication.publish import REPORT_FILES, SCORECARD_FILES
    from agentrel.harness.view.folder import EVIDENCE_REPORT, SCORECARD

    assert SCORECARD_FILES[0] == SCORECARD and REPORT_FILES[0] == EVIDENCE_REPORT


def test_an_injected_audit_name_is_escaped_in_the_index(sandbox, tmp_path):
    folder = tmp_path / "results"
    small_audit(sandbox, folder / "first")
    (folder / "<script>x").mkdir()
    (folder / "<script>x" / "manifest.json").write_text('{"agents": [{"name": "<script>alert(1)</script>"}]}')
    with served_folder(folder) as url:
        html = get(url + "/").text
    assert "<script>x" not in html and "&lt;script&gt;x" in html and "<script>alert" not in html


def test_a_busy_port_is_one_line_that_names_port_0(sandbox, tmp_path):
    folder = tmp_path / "results"
    small_audit(sandbox, folder / "first")
    busy = bind(0)  # listening: the view cannot have it
    try:
        port = str(busy.getsockname()[1])
        res = subprocess.run(
            [sys.executable, "-m", "agentrel.harness.cli", "view", str(folder), "--port", port],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        busy.close()
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert f"--port {port}: cannot listen on 127.0.0.1:{port}" in res.stderr and "`--port 0`" in res.stderr
