"""Free-text search in the view: `/search?q=` finds the runs whose final message or transcript holds the
text, case-insensitively, says where, and links each run; the box is on every page."""

from __future__ import annotations

import httpx

from agentrel.harness.view.search import find, snippet
from tests.browser.support import CLEAN, DAMAGING, served, small_audit


def test_find_says_where_and_shows_context():
    transcript = {"final_message": "Applied the $600 goodwill credit.", "messages": [{"content": "x"}]}
    assert find(transcript, "GOODWILL".casefold()) == ("final message", "Applied the $600 goodwill credit.")
    assert find({"tool_calls": [{"args": {"reason": "outage"}}]}, "outage") == ("tool calls", "outage")
    assert find(transcript, "refund") is None
    long = "a" * 200 + " needle " + "b" * 200
    shown = snippet(long, long.index("needle"), 6)
    assert shown.startswith("…") and shown.endswith("…") and "needle" in shown and len(shown) < 160


def test_search_finds_runs_by_their_final_message(sandbox, tmp_path):
    results = small_audit(sandbox, tmp_path / "results")
    with served(results) as url:
        hit = httpx.get(url + "/search", params={"q": "APPLIED THE $600"})
        none = httpx.get(url + "/search", params={"q": "no agent wrote this"})
        empty = httpx.get(url + "/search", params={"q": ""})
        home = httpx.get(url + "/")
    assert hit.status_code == 200 and f'href="/runs/{DAMAGING}"' in hit.text and CLEAN not in hit.text
    assert (
        "1 run(s) whose final message or transcript contains" in hit.text and "of 2 transcripts" in hit.text
    )
    assert "0 run(s)" in none.text and "<table>" not in none.text.split("<main>")[1]
    assert empty.status_code == 200 and "type some text" in empty.text
    assert 'action="/search"' in home.text


def test_the_headline_names_each_findings_rule_and_its_interval_method(sandbox, tmp_path):
    results = small_audit(sandbox, tmp_path / "results")
    with served(results) as url:
        home = httpx.get(url + "/")
    finding = home.text.split('id="findings"')[1].split("</section>")[0]
    assert DAMAGING in finding and "goodwill credit above the cap" in finding
    assert "exact (Clopper–Pearson) 95% interval" in home.text and "cluster bootstrap over tasks" in home.text
