"""Every string a JSON value holds, as a reader sees it (a field's value, not its JSON-escaped form)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)
