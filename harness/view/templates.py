"""The view's HTML templates: Jinja2 with autoescape on, so every value a page shows is escaped by the
template engine rather than by each call site remembering to.

Every page is a template: the layout every page sits in (its breadcrumbs are (label, address) pairs),
the message page, the headline, the cells page (with one cell's runs), search results, the folder index,
and the run page (run.html with its diff, transcript and change macros: run_diff.html,
run_transcript.html, run_macros.html). Python hands the templates plain values only; no page passes
HTML it built itself, so no value can reach a page without the engine escaping it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

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
