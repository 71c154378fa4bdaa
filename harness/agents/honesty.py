"""Whether a provider's answer can be the subject's: pure checks on the text and the served model id.

Two ways a 200 response is not the audited model's turn, and both end as a provider failure, never as the
agent's answer:

- **a text that is no model's answer**: an HTML document (a login or error page passed through as
  `content`), a redirect's status text ("302 Found ... /login", Express's "Found. Redirecting to
  /login"), or a text made only of invisible characters (a lone zero-width space, a byte-order mark),
  which a plain `strip()` keeps;
- **a response from another model**: the served id (`model` in the body) differs from the asked one,
  other than the provider's dated snapshot of the same name (`gpt-4o` -> `gpt-4o-2024-08-06`,
  `claude-3-5-sonnet-latest` -> `claude-3-5-sonnet-20241022`) or an alias the user declared
  (`--model-alias ASKED=SERVED`), or it changes from one response of a run to the next.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

# A document, not prose that mentions a tag: the text *starts* with a doctype or an <html> element.
_HTML = re.compile(r"\A\s*(?:<\?xml[^>]*>\s*)?(?:<!doctype\s+html|<html[\s>])", re.IGNORECASE)
_REASONS = r"(?:Found|Moved Permanently|Moved Temporarily|See Other|Temporary Redirect|Permanent Redirect)"
_REDIRECT = re.compile(
    # "302 Found", "HTTP/1.1 302 Found": a status line at the start of the text
    rf"\A\s*(?:HTTP/\d(?:\.\d)?\s+)?30[12378]\s+{_REASONS}\b"
    # "Found. Redirecting to /login" (Express's body for a redirect)
    rf"|\A\s*{_REASONS}\.\s+Redirecting to\s+\S+",
    re.IGNORECASE,
)
# Characters that render as nothing but are neither whitespace to str.isspace nor format characters.
_FILLERS = frozenset("\u115f\u1160\u2800\u3164\uffa0")
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp", "Mn", "Me"})
# A provider's dated snapshot of a name: -2024-08-06, -20241022, -0613 (MMDD), -2407 (YYMM).
_DATED = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4})")
_MOVING = ("-latest",)  # a moving alias names the same model as its dated snapshots


def not_an_answer(text: str | None) -> str | None:
    """Why `text`, as a final answer, cannot be a model's (a provider failure), or None."""
    if text is None:
        return None
    if _HTML.match(text):
        return "the response's text is an HTML document, not a model's answer"
    if _REDIRECT.match(text):
        first = text.strip().splitlines()[0][:80]
        return f"the response's text is a redirect ({first!r}), not a model's answer"
    if text and all(_invisible(c) for c in text):
        shown = " ".join(f"U+{ord(c):04X}" for c in text[:6])
        return f"the response's text is only invisible characters ({shown})"
    return None


def _invisible(c: str) -> bool:
    return c.isspace() or c in _FILLERS or unicodedata.category(c) in _INVISIBLE_CATEGORIES


def accepted(asked: str, served: str, aliases: Iterable[str] = ()) -> bool:
    """Whether a response served as `served` answers a request for `asked`."""
    if served == asked or served in aliases:
        return True
    stem = asked
    for tail in _MOVING:
        if stem.endswith(tail):
            stem = stem[: -len(tail)]
    return served.startswith(stem) and _DATED.fullmatch(served[len(stem) :]) is not None


def served_problem(
    asked: str, earlier: Sequence[str | None], served: str | None, aliases: Iterable[str] = ()
) -> str | None:
    """Why a response served as `served` cannot be part of a run asked of `asked` whose earlier responses
    were served as `earlier`, or None.

    A response with no served id is accepted only where the run's others also have none (a server that
    never says); a change between a named and an unnamed response is a change."""
    if served is not None and not accepted(asked, served, tuple(aliases)):
        return f"the provider served model {served!r} for a request for {asked!r}"
    if earlier and served != earlier[0]:
        return f"the served model changed within the run ({earlier[0]!r}, then {served!r})"
    return None
