"""Render a report Document as Markdown or as a self-contained HTML page (figures linked beside it)."""

from __future__ import annotations

import html

from analysis.doc import Document, Image, Table

CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 80rem; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.85rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5rem 0; }
code { background: #f6f6f6; padding: 0 0.2rem; }
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


def _inline(text: str) -> str:
    """Escape, then turn `code` spans into <code> (the only inline markup the document uses)."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _html_table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in t.headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in t.rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def to_html(doc: Document) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(doc.title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{html.escape(doc.title)}</h1>",
    ]
    for section in doc.sections:
        parts.append(f"<h2>{html.escape(section.title)}</h2>")
        for block in section.blocks:
            if isinstance(block, Table):
                parts.append(_html_table(block) if block.rows else "<p><em>(none)</em></p>")
            elif isinstance(block, Image):
                src, alt = html.escape(block.path, quote=True), html.escape(block.alt, quote=True)
                parts.append(f'<figure><img src="{src}" alt="{alt}"><figcaption>{alt}</figcaption></figure>')
            else:
                parts.append(f"<p>{_inline(block)}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)
