"""Free-text search over the runs' final messages and transcripts: `/search?q=...` in the view.

Case-insensitive substring search over every string in a run's transcript (its final message first,
then messages, tool calls and events), in the index's run order, stopping at LIMIT matches so a search of
100,000 runs answers a page at a time. Pure over the files it is given: no index, nothing written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrel.harness.jsontext import strings
from agentrel.harness.results.lines import Attempt

LIMIT = 200
CONTEXT = 70  # characters shown on each side of a hit


@dataclass(frozen=True)
class Hit:
    attempt: Attempt
    where: str  # "final message", "messages", "tool calls" or "events"
    snippet: str


def snippet(text: str, at: int, length: int) -> str:
    start, end = max(0, at - CONTEXT), min(len(text), at + length + CONTEXT)
    body = " ".join(text[start:end].split())
    return ("…" if start else "") + body + ("…" if end < len(text) else "")


def find(transcript: dict[str, Any], needle: str) -> tuple[str, str] | None:
    """Where the needle (already casefolded) first appears in a transcript, with its context."""
    for where, key in (
        ("final message", "final_message"),
        ("messages", "messages"),
        ("tool calls", "tool_calls"),
        ("events", "events"),
    ):
        for text in strings(transcript.get(key)):
            at = text.casefold().find(needle)
            if at >= 0:
                return where, snippet(text, at, len(needle))
    return None


def search(
    attempts: Iterable[Attempt], transcript_of: Any, query: str, limit: int = LIMIT
) -> tuple[list[Hit], int]:
    """The first `limit` runs whose transcript contains `query`, and how many runs were read."""
    needle = query.casefold().strip()
    hits: list[Hit] = []
    read = 0
    if not needle:
        return hits, read
    for a in attempts:
        path: Path = transcript_of(a.run_id, a.attempt)
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        read += 1
        found = find(data, needle) if isinstance(data, dict) else None
        if found is not None:
            hits.append(Hit(a, *found))
            if len(hits) >= limit:
                break
    return hits, read


def search_page(query: str, hits: list[Hit], read: int, total: int) -> str:
    """The results page: each matching run with where the text was found and its context."""
    from agentrel.harness.view.html import run_href
    from agentrel.harness.view.templates import render

    return render(
        "search.html",
        title=f"Search: {query}",
        version=None,
        crumbs=[("Headline", "/"), ("Search", None)],
        query=query,
        hits=hits,
        read=read,
        total=total,
        limit=LIMIT,
        run_href=run_href,
    )
