"""Holding the cyclic garbage collector while a large read builds many acyclic objects that survive it:
each collection in between would only re-scan them (and the rest of the heap) and find nothing."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
