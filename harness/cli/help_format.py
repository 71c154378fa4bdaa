"""How `agentrel ... --help` renders: Typer's rich panels, with three of its defaults corrected.

- Help text is prose, never Rich markup: `[default: <results>/analysis]` and `[0.95]` in a help string
  are shown as written (Rich would take them for style tags and drop them).
- A docstring's hard line breaks are not the reader's: paragraphs are joined into one line each, so the
  root command list does not break sentences in the middle.
- A flag is shown as a flag (`--no-figures`), not as an option taking `<bool>` (`--json true` is an
  error, so showing a value invites one).

Typer exposes no setting for these, so the two functions that decide them are wrapped once, at import of
the CLI; tests/harness/test_cli_help.py pins the result, so a Typer release that renames them fails there
rather than silently changing the help.
"""

from __future__ import annotations

import inspect
from typing import Any


def _prose(text: str) -> str:
    """Each paragraph on one line, except Click's `\\b` verbatim blocks."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split()) for p in paragraphs)


def install() -> None:
    from rich.markup import escape
    from typer import core, rich_utils

    make_text = rich_utils._make_rich_text
    if getattr(make_text, "_agentrel", False):
        return

    def plain_text(*, text: str, style: str = "", markup_mode: Any) -> Any:
        if markup_mode == rich_utils.MARKUP_MODE_RICH:
            text = escape(_prose(text))
        return make_text(text=text, style=style, markup_mode=markup_mode)

    plain_text._agentrel = True  # type: ignore[attr-defined]
    rich_utils._make_rich_text = plain_text  # type: ignore[assignment]

    display_type = core.TyperOption.display_type_rich

    def flag_type(self: Any, ctx: Any) -> str | None:
        return None if self.is_flag and not self.count else display_type(self, ctx)

    core.TyperOption.display_type_rich = flag_type  # type: ignore[method-assign]
