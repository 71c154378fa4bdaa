"""Render a report Document as Markdown (figures linked beside it) or as one self-contained HTML page:
styles inline and figures embedded as data: URIs, so the page can be mailed and opened anywhere with
nothing fetched; wide tables scroll inside their own box instead of widening the page. The text blocks
and table cells are Markdown, rendered by markdown-it-py (the same CommonMark the .md file is read with)."""

from __future__ import annotations

import base64
import functools
import html
import re
from collections.abc import Mapping

from markdown_it import MarkdownIt

from agentrel.analysis.doc import Document, Image, Section, Table

CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 80rem; color: #222; }
.wide { overflow-x: auto; max-width: 100%; margin: 1rem 0; }
table { border-collapse: collapse; font-size: 0.85rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5rem 0; }
code { background: #f6f6f6; padding: 0 0.2rem; }
#findings { border-left: 4px solid #b00020; padding-left: 1rem; }
#findings td:nth-child(3), #findings td:nth-child(8) { font-weight: 600; }
"""


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(t: Table) -> str:
    lines = ["| " + " | ".join(_md_cell(h) for h in t.headers) + " |", "|" + "---|" * len(t.headers)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in t.rows]
    return "\n".join(lines)


def to_markdown(doc: Document) -> str:
    out = [f"# {doc.title}", ""]
    for section in doc.sections:
        out += [f"## {section.title}", ""]
        for block in section.blocks:
            if isinstance(block, Table):
                out.append(_md_table(block) if block.rows else "_(none)_")
            elif isinstance(block, Image):
                out.append(f"![{block.alt}]({block.path})")
            else:
                out.append(block)
            out.append("")
    return "\n".join(out)


@functools.cache
def _markdown() -> MarkdownIt:
    """CommonMark with tables; raw HTML in the text is escaped, never passed through (a task name or an
    agent's message quoted into the report cannot open an element), and markdown-it refuses
    `javascript:` links by itself."""
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def _block(text: str) -> str:
    """A text block (Markdown: emphasis, code spans, lists, links) as HTML."""
    return str(_markdown().render(text))


# What can make inline Markdown anything but its own text: escapes, code spans, emphasis, raw HTML and
# autolinks, entities, line breaks, links and images (a bracket alone is text: there are no references).
_MARKUP = re.compile(r"[\\`*_<>&\n\r]|\]\(")


def _inline(text: str) -> str:
    """A table cell or caption's Markdown as inline HTML (no paragraph around it).

    Most cells are plain text (numbers, intervals, names), which markdown-it renders as the text with `"`
    escaped; they skip the parser, the report's largest cost at 100,000 runs (tens of thousands of cells).
    """
    if _MARKUP.search(text) is None:
        return text.replace('"', "&quot;")
    return str(_markdown().renderInline(text))


def _html_table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in t.headers)
    body = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in t.rows)
    return f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _html_image(block: Image, images: Mapping[str, bytes]) -> str:
    alt = html.escape(block.alt, quote=True)
    data = images.get(block.path)
    if data is None:  # never a link to a file that a mailed copy would not carry
        caption = f"{alt} (<code>{html.escape(block.path)}</code>, not embedded)"
        return f"<figure><figcaption>{caption}</figcaption></figure>"
    src = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    return f'<figure><img src="{src}" alt="{alt}"><figcaption>{alt}</figcaption></figure>'


def section_id(section: Section) -> str:
    return re.sub(r"[^a-z0-9]+", "-", section.title.lower()).strip("-")


def to_html(doc: Document, images: Mapping[str, bytes] | None = None) -> str:
    """The page; ``images`` maps each Image's path to its PNG bytes, embedded in the page."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(doc.title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{html.escape(doc.title)}</h1>",
    ]
    for section in doc.sections:
        parts.append(f'<section id="{section_id(section)}"><h2>{html.escape(section.title)}</h2>')
        for block in section.blocks:
            if isinstance(block, Table):
                parts.append(_html_table(block) if block.rows else "<p><em>(none)</em></p>")
            elif isinstance(block, Image):
                parts.append(_html_image(block, images or {}))
            else:
                parts.append(_block(block))
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
