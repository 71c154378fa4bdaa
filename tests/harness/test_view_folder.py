"""`agentrel view results/` serves every audit in the folder with an index; each audit's pages keep working
under its mount (links, the live-reload script and its API re-rooted), and a folder with no audit is
still refused in one line."""

from __future__ import annotations

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
        index = httpx.get(url + "/")
        first = httpx.get(url + "/a/first/")
        run_links = re.findall(r'href="(/a/first/runs/[^"]+)"', first.text)
        run = httpx.get(url + f"/a/first/runs/{DAMAGING}")
        script = httpx.get(url + "/a/second/static/view.js")
        version = httpx.get(url + "/a/second/api/version")
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
