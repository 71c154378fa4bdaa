"""Tables that never cut a number or an identifier.

In a terminal, a rich table whose cells fold onto more lines rather than end in an ellipsis; anywhere
else (a pipe, a file, CI) plain text columns padded to their widest cell, whatever the width, so
`referenc…` and `825600.…` never reach a log. `--json` output is the same rows as objects.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table


def plain(headers: Sequence[str], rows: Sequence[Sequence[str]], title: str | None = None) -> str:
    """Columns separated by two spaces, each as wide as its widest cell; nothing is cut."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = [title] if title else []
    for row in [list(headers), *rows]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines) + "\n"


def emit(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    title: str | None = None,
    stream: TextIO | None = None,
    console: Console | None = None,
) -> None:
    """Print a table: rich and folding in a terminal, plain columns otherwise."""
    stream = stream or sys.stdout
    if not stream.isatty():
        stream.write(plain(headers, rows, title))
        stream.flush()
        return
    table = Table(title=title, title_justify="left")
    for head in headers:
        table.add_column(head, overflow="fold")
    for row in rows:
        table.add_row(*row)
    (console or Console(file=stream, highlight=False)).print(table)


def emit_json(headers: Sequence[str], rows: Sequence[Sequence[Any]], stream: TextIO | None = None) -> None:
    """The rows as a JSON array of objects keyed by the headers."""
    data = [dict(zip(headers, row, strict=True)) for row in rows]
    (stream or sys.stdout).write(json.dumps(data, indent=1, default=str) + "\n")
