"""report.html renders the report's Markdown (bold, code spans, lists) with a Markdown library, and text
that came from a record (a task or model name, an agent's words) can never become markup in the page."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agentrel.analysis.doc import Document, Section, Table
from agentrel.analysis.inputs import load_input
from agentrel.analysis.outputs import write_report
from agentrel.analysis.pipeline import analyze
from agentrel.analysis.render import _inline, _markdown, to_html
from tests.analysis.conftest import event, record, write_results

SCRIPT = "<script>alert(1)</script>"


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(html: str) -> _Elements:
    p = _Elements()
    p.feed(html)
    return p


def test_bold_code_and_lists_render_as_elements_not_literal_markdown():
    doc = Document(
        "R",
        [
            Section(
                "Repeats",
                [
                    "**Repeats to plan for: 47 runs of each task.** Then `agentrel audit`.",
                    "- first\n- second",
                    Table(["a"], [["**x** and `y`"]]),
                ],
            )
        ],
    )
    html = to_html(doc)
    assert "<strong>Repeats to plan for: 47 runs of each task.</strong>" in html
    assert "<code>agentrel audit</code>" in html and "<li>second</li>" in html
    assert "<td><strong>x</strong> and <code>y</code></td>" in html
    assert "**" not in html


def test_raw_html_and_script_links_in_text_stay_text():
    doc = Document("R", [Section("S", [f"task {SCRIPT} [x](javascript:alert(1))", Table(["a"], [[SCRIPT]])])])
    p = parsed(to_html(doc))
    assert "script" not in p.tags and 'href="javascript' not in to_html(doc)
    assert sum(SCRIPT in t for t in p.text) == 2  # shown, as text, in the paragraph and the cell


def test_a_real_report_has_no_literal_bold_and_escapes_an_injected_task_name(tmp_path: Path):
    task = f"t1{SCRIPT}"
    recs = [
        record("m1", task, i, "FAIL_DAMAGE" if i == 0 else "PASS", events=[event("5.00")] if i == 0 else None)
        for i in range(4)
    ]
    result = analyze(load_input(write_results(tmp_path / "results", recs)), n_boot=0, seed=0)
    write_report(result, tmp_path / "out", figures=False)
    html = (tmp_path / "out" / "report.html").read_text()
    p = parsed(html)
    assert "**" not in "".join(p.text) and "strong" in p.tags
    assert "script" not in p.tags and any(SCRIPT in t for t in p.text)


# Characters that are text alone and markup in company, plus plain ones a table cell holds.
_CELL_CHARS = "ab01 .,:;%()/+=-#'\"[]!~|_*`<>&\\\n\t±≥é"


@given(st.text(alphabet=_CELL_CHARS, max_size=12))
@settings(max_examples=3000, deadline=None)
def test_a_cell_that_skips_the_markdown_parser_renders_as_the_parser_would(text: str) -> None:
    """The plain-text shortcut is an optimisation only: were it to pass `<script>`, `&`, or a link
    through unparsed, a record's text would reach the page differently from the parser's escaping."""
    assert _inline(text) == str(_markdown().renderInline(text))


def test_markup_in_a_cell_still_goes_through_the_parser() -> None:
    assert _inline(SCRIPT) == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert _inline("[x](javascript:alert(1))") == "[x](javascript:alert(1))"
    assert _inline("**bold** & [a](https://example.org)") == (
        '<strong>bold</strong> &amp; <a href="https://example.org">a</a>'
    )
