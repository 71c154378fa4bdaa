"""The generated reference pages equal what the code says today, and the column dictionary equals the
columns the writers emit: a new option, grammar rule or column cannot go undocumented."""

from __future__ import annotations

import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_committed_reference_pages_are_current():
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_docs.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_the_check_catches_a_stale_page(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import gen_docs
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(gen_docs, "REFERENCE", tmp_path)
    assert gen_docs.main([]) == 0 and gen_docs.main(["--check"]) == 0
    page = tmp_path / "cli.md"
    page.write_text(page.read_text().replace("--max-steps", "--max-stepz"))
    assert gen_docs.main(["--check"]) == 1
    assert "`--dsn`" in (tmp_path / "cli.md").read_text()  # options come from the Typer app
    assert "start: header" in (tmp_path / "dsl.md").read_text()  # the grammar verbatim


def test_column_dictionaries_match_the_writers():
    from agentrel.analysis.axes_table import AXIS_COLUMNS
    from agentrel.analysis.columns import AXES, CELLS, DAMAGES, RUNS
    from agentrel.analysis.export import CELL_EXPORT_COLUMNS, DAMAGE_COLUMNS, RUN_EXPORT_COLUMNS

    pairs = (
        (DAMAGES, DAMAGE_COLUMNS),
        (RUNS, RUN_EXPORT_COLUMNS),
        (CELLS, CELL_EXPORT_COLUMNS),
        (AXES, AXIS_COLUMNS),
    )
    for spec, columns in pairs:
        assert tuple(c.name for c in spec.columns) == tuple(columns), spec.name
        assert all(c.meaning.strip() for c in spec.columns)


class _Page(HTMLParser):
    """A built page read as a browser would: the headings and the text outside any <script> or <style>
    (whatever a stray element swallows is neither)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hidden = 0  # depth inside <script>/<style>
        self.heading: list[str] | None = None
        self.headings: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self.hidden += 1
        elif tag == "h2" and not self.hidden:
            self.heading = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self.hidden = max(0, self.hidden - 1)
        elif tag == "h2" and self.heading is not None:
            self.headings.append("".join(self.heading).replace("¶", "").strip())
            self.heading = None

    def handle_data(self, data: str) -> None:
        if self.hidden:
            return
        self.text.append(data)
        if self.heading is not None:
            self.heading.append(data)


def commands() -> list[str]:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import gen_docs
    finally:
        sys.path.pop(0)
    root = gen_docs._click_root()
    return [" ".join(path) for path, cmd in gen_docs._walk(root, ["agentrel"]) if not cmd.hidden]


def assert_cli_page_shows_everything(html: str) -> None:
    """Every command's heading outside any <script>, and the placeholders as visible text (the attack: a
    help text's `scripted/<script>` opened a real script element that swallowed 37 of 39 commands)."""
    page = _Page()
    page.feed(html)
    page.close()
    wanted = commands()
    assert len(wanted) > 30
    missing = [c for c in wanted if c not in page.headings]
    assert not missing, f"commands without a visible heading: {missing}"
    visible = " ".join(" ".join(page.text).split())
    for placeholder in ("scripted/<script>", "openai/<model>", "<results>/analysis", "injection:<goal>"):
        assert placeholder in visible, placeholder


def test_the_cli_page_rendered_as_markdown_shows_every_command_and_placeholder():
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    assert_cli_page_shows_everything(md.render((REPO / "docs" / "reference" / "cli.md").read_text()))


def test_a_placeholder_left_raw_is_caught():
    from markdown_it import MarkdownIt

    raw = "# x\n\nAgents: scripted/<script>, openai/<model>.\n\n## `agentrel audit`\n"
    with pytest.raises(AssertionError):
        assert_cli_page_shows_everything(MarkdownIt("commonmark").render(raw))
