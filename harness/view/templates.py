"""The view's HTML templates: Jinja2 with autoescape on, so every value a page shows is escaped by the
template engine rather than by each call site remembering to.

Pages written as templates: the layout every page sits in, the message page, the headline, the cells
page (with one cell's runs), search results and the folder index. The run page (run_html.py: verdict,
row-level diff, prompt, transcript, events) still builds its body as f-strings escaped by `html.e` and
hands it to the layout as `Markup`; moving it here is the remaining work.
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
