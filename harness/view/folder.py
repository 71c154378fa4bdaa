"""`agentrel view FOLDER`: every results directory in a folder (`results/`), served together with an index.

Each audit keeps its own view (app.create_app), mounted at `/a/<name>/`. Its pages link with absolute
paths (`/runs/...`, `/static/...`), so a mounted view's HTML and script are re-rooted on the way out:
every `href="/`, `src="/`, `action="/` and `fetch("/` gains the mount's prefix. The index lists each audit
with its agents and recorded lines, read from its manifest and runs.jsonl without loading them.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from agentrel.harness.view.app import SECURITY_HEADERS, STATIC, create_app
from agentrel.harness.view.host_guard import HostGuard
from agentrel.harness.view.html import e, layout

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGI = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]
REROOTED = (b'href="/', b'src="/', b'action="/', b'fetch("/')


def audits_in(folder: Path) -> list[Path]:
    """The results directories directly inside `folder` (a runs.jsonl or a manifest.json), by name."""
    if not folder.is_dir():
        return []
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_dir() and ((p / "runs.jsonl").exists() or (p / "manifest.json").exists())
    )


def reroot(body: bytes, prefix: str) -> bytes:
    """Absolute links of a mounted view's page, moved under its prefix (`/a/<name>`)."""
    for needle in REROOTED:
        body = body.replace(needle, needle[:-1] + prefix.encode() + b"/")
    return body


class Rerooted:
    """An ASGI wrapper that re-roots the HTML and script a mounted view sends."""

    def __init__(self, app: ASGI, prefix: str) -> None:
        self.app, self.prefix = app, prefix

    async def __call__(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            assert start is not None
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            kind = dict(start["headers"]).get(b"content-type", b"")
            body = b"".join(chunks)
            if kind.startswith((b"text/html", b"text/javascript", b"application/javascript")):
                body = reroot(body, self.prefix)
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, capture)


def _summary(path: Path) -> tuple[str, int]:
    """The audit's agents (from its manifest) and the lines its runs.jsonl holds."""
    try:
        manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
        agents = ", ".join(str(a.get("name", "?")) for a in manifest.get("agents", []) if isinstance(a, dict))
    except (OSError, ValueError, AttributeError):
        agents = "?"
    try:
        with (path / "runs.jsonl").open("rb") as f:
            lines = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except OSError:
        lines = 0
    return agents, lines


def index_page(folder: Path, audits: list[Path]) -> str:
    rows = []
    for path in audits:
        agents, lines = _summary(path)
        href = f"/a/{quote(path.name, safe='')}/"
        rows.append(
            f'<tr><td><a href="{e(href)}">{e(path.name)}</a></td><td>{e(agents)}</td><td>{lines:,}</td></tr>'
        )
    body = (
        f"<h1>Audits in {e(str(folder))}</h1>"
        f"<p>{len(audits)} results director{'y' if len(audits) == 1 else 'ies'}; "
        "each opens on its findings.</p>"
        "<table><thead><tr><th>audit</th><th>agents</th><th>recorded attempts</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    return layout(f"Audits in {folder.name}", body)


def create_folder_app(folder: Path, notify: Callable[[str], None] = lambda _: None) -> Starlette:
    """The index at `/`, each audit's own view at `/a/<name>/`."""
    audits = audits_in(folder)

    def index(request: Request) -> Response:
        return HTMLResponse(index_page(folder, audits_in(folder)), headers=SECURITY_HEADERS)

    routes: list[Any] = [Route("/", index), Mount("/static", StaticFiles(directory=STATIC), name="static")]
    views = []
    for path in audits:
        prefix = f"/a/{quote(path.name, safe='')}"
        app = create_app(path, notify)
        views.append(app.state.view)
        routes.append(Mount(prefix, app=Rerooted(app, prefix)))
    root = Starlette(routes=routes, middleware=[Middleware(HostGuard)])
    root.state.views = views
    return root
