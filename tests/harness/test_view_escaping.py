"""Text that came from the audited agent or from a record (a model name, a task name, a transcript) is
escaped on every page of the view: the attack is an agent whose final message, or a results directory
whose names, carry a `<script>` that would run in the auditor's browser next to customers' rows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest

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
