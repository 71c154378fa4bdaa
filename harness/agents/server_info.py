"""What a model server says about itself at audit start, kept in the subject's config.

Two audits of `openai/<alias>` against different weights, quantizations or chat templates must not look
like one subject. At preflight the adapter reads the server's model listing (`GET /v1/models`: every
OpenAI-compatible server answers it; llama.cpp adds the weights' `meta`, vLLM the `root` path and
`max_model_len`, Ollama the tag) and, where it answers, llama.cpp's `GET /props` (the model path, the
chat template, the build). Only stable facts are kept: a listing entry's per-request fields (`created`,
`object`) are dropped, a chat template is kept as its SHA-256 (its text can be tens of kilobytes), and of
a big listing (a hosted API's hundred models) only the asked model's entry and those of declared aliases.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Any

import httpx

VOLATILE = frozenset({"created", "object"})
SMALL_LISTING = 4  # a listing this short is one server's own models: kept whole
# /props fields that say what is served, not how busy the server is right now.
PROPS = ("model_path", "build_info", "total_slots", "chat_template", "modalities", "model_alias")
PROPS_SETTINGS = ("n_ctx",)


def describe_server(
    model: str,
    aliases: Iterable[str],
    listing: httpx.Response,
    get: Callable[[str], httpx.Response | None],
    scrub: Callable[[str], str],
) -> dict[str, Any]:
    """The server's self-description: {"models": [...], "props": {...}}, each only when it answered."""
    described: dict[str, Any] = {}
    models = models_of(model, tuple(aliases), _json(listing, scrub))
    if models is not None:
        described["models"] = models
    props = get("/props")
    if props is not None:
        kept = props_of(_json(props, scrub))
        if kept:
            described["props"] = kept
    return described


def models_of(model: str, aliases: tuple[str, ...], body: Any) -> list[dict[str, Any]] | None:
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    entries = [_stable(e) for e in data if isinstance(e, dict) and isinstance(e.get("id"), str)]
    if len(entries) > SMALL_LISTING:
        # Only the asked id and declared aliases, not every dated snapshot: a hosted API adding a snapshot
        # must not turn the same subject into another (each run records the snapshot that served it).
        entries = [e for e in entries if e["id"] == model or e["id"] in aliases]
    return sorted(entries, key=lambda e: str(e["id"]))


def props_of(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        return {}
    kept = {k: body[k] for k in PROPS if k in body and body[k] is not None}
    if isinstance(kept.get("chat_template"), str):
        kept["chat_template_sha256"] = hashlib.sha256(kept.pop("chat_template").encode()).hexdigest()
    settings = body.get("default_generation_settings")
    if isinstance(settings, dict):
        kept.update({k: settings[k] for k in PROPS_SETTINGS if k in settings})
    return kept


def _stable(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in VOLATILE}


def _json(resp: httpx.Response, scrub: Callable[[str], str]) -> Any:
    if resp.status_code != 200:
        return None
    try:
        return json.loads(scrub(resp.text))
    except (ValueError, RecursionError):
        return None
