"""The view's HTML templates: Jinja2 with autoescape on, so every value a page shows is escaped by the
template engine rather than by each call site remembering to.

Pages written as templates: the layout every page sits in, the message page, the folder index. The
others still build their body as escaped f-strings (html.py, run_html.py, search.py) and hand it to the
layout as `Markup`; moving them here is the remaining work.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

TEMPLATES = Path(__file__).parent / "templates"


@functools.cache
def environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,  # a misspelt field is an error in a test, never an empty cell
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(name: str, **context: Any) -> str:
    return environment().get_template(name).render(**context)


def trusted(html: str) -> Markup:
    """HTML this package built and escaped itself (a page not yet written as a template)."""
    return Markup(html)
