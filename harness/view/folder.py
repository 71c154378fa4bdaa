"""`agentrel view FOLDER`: every results directory in a folder (`results/`), served together with an index.

Each audit keeps its own view (app.create_app), mounted at `/a/<name>/`. Its pages link with absolute
paths (`/runs/...`, `/static/...`), so a mounted view's HTML and script are re-rooted on the way out:
every `href="/`, `src="/`, `action="/` and `fetch("/` gains the mount's prefix. An audit created after the
server started is served from its first request. The index lists each audit with its environment,
subjects, runs, damaging and invalid runs (from its own view's index, by the results owner's rules),
what `agentrel publish` last decided, and the time of its last run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from agentrel.harness.errors import UserError
from agentrel.harness.results import layout
from agentrel.harness.results.status import VALID
from agentrel.harness.view.app import SECURITY_HEADERS, STATIC, View, create_app
from agentrel.harness.view.host_guard import HostGuard
from agentrel.harness.view.html import message_page
from agentrel.harness.view.index import Snapshot
from agentrel.harness.view.pages import manifest_cells, planned_per_cell
from agentrel.harness.view.templates import render

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
        if p.is_dir() and ((p / layout.RUNS).exists() or (p / layout.MANIFEST).exists())
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


# Written by `agentrel publish` into the results directory (harness.publication.publish.SCORECARD_FILES and
# REPORT_FILES; a test holds the two spellings equal). Read here by name only: the view never imports
# publication, and it never re-validates (that is `agentrel publish`'s work, minutes on a large audit).
SCORECARD = "scorecard.json"
EVIDENCE_REPORT = "evidence_report.json"


@dataclass(frozen=True)
class AuditRow:
    """One line of the folder's index."""

    name: str
    href: str
    environment: str
    subjects: list[str]
    runs: int
    planned: int | None
    damaging: int
    invalid: int
    publishable: str
    date: str


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def publishable(path: Path) -> str:
    """What `agentrel publish` last decided for the directory, and whether runs came after it."""
    runs = _mtime(path / layout.RUNS) or 0.0
    card, report = _mtime(path / SCORECARD), _mtime(path / EVIDENCE_REPORT)
    latest = max((t for t in (card, report) if t is not None), default=None)
    if latest is None:
        return "not checked (agentrel publish)"
    if latest < runs:
        return "not checked since the last run (agentrel publish)"
    return "yes (scorecard)" if latest == card else "no (evidence only)"


def audit_row(path: Path, snap: Snapshot) -> AuditRow:
    """The index line of one audit, from its view's own index (the results owner's status and
    decisive-attempt rules) and its manifest."""
    m = snap.manifest or {}
    env = m.get("environment")
    agents = [str(a.get("name", "?")) for a in m.get("agents") or () if isinstance(a, dict)]
    planned = planned_per_cell(m)
    n_cells = len(list(manifest_cells(m)))
    valid = [a for a in snap.runs.rows() if a[6] == VALID]  # see index.Attempt: status at 6, damaged at 8
    stamp = _mtime(path / layout.RUNS) or _mtime(path / layout.MANIFEST)
    return AuditRow(
        name=path.name,
        href=f"/a/{quote(path.name, safe='')}/",
        environment=str(env.get("name", "?")) if isinstance(env, dict) else "?",
        subjects=agents,
        runs=len(snap.runs),
        planned=planned * n_cells if planned and n_cells else None,
        damaging=sum(1 for a in valid if a[8]),
        invalid=len(snap.runs) - len(valid),
        publishable=publishable(path),
        date=datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M UTC") if stamp else "–",
    )


def index_page(folder: Path, rows: list[AuditRow], problems: list[str]) -> str:
    return render(
        "folder_index.html",
        title=f"Audits in {folder.name}",
        folder=str(folder),
        audits=rows,
        problems=problems,
        version=None,
        crumbs=[],
    )


class Audits:
    """Every audit of the folder by name, each with its own view; an audit created after the server
    started gets its view on its first request (the index lists it at once, so its link must answer)."""

    def __init__(self, folder: Path, notify: Callable[[str], None]) -> None:
        self.folder, self.notify = folder, notify
        self.apps: dict[str, tuple[View, ASGI]] = {}

    def get(self, name: str) -> tuple[View, ASGI] | None:
        if name not in self.apps:
            path = self.folder / name
            # Only a directory directly inside the folder, and only a results directory: never a path
            # the address makes up (`..`, a name with a slash cannot match a child's name).
            if path not in audits_in(self.folder):
                return None
            prefix = f"/a/{quote(name, safe='')}"
            app = create_app(path, self.notify)
            self.apps[name] = (app.state.view, Rerooted(app, prefix))
        return self.apps[name]

    def rows(self) -> tuple[list[AuditRow], list[str]]:
        rows, problems = [], []
        for path in audits_in(self.folder):
            got = self.get(path.name)
            if got is None:
                continue
            try:
                rows.append(audit_row(path, got[0].snapshot()))
            except UserError as exc:  # removed or replaced while being read: said, the rest still listed
                problems.append(str(exc))
        return rows, problems

    async def __call__(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        name = scope.get("path_params", {}).get("name", "")
        got = self.get(name)
        if got is None:
            page = message_page("Not found", f"no audit {name!r} in {self.folder}; start at /")
            await HTMLResponse(page, status_code=404, headers=SECURITY_HEADERS)(scope, receive, send)
            return
        await got[1](scope, receive, send)


def create_folder_app(folder: Path, notify: Callable[[str], None] = lambda _: None) -> Starlette:
    """The index at `/`, each audit's own view at `/a/<name>/`, audits created later included."""
    audits = Audits(folder, notify)

    def index(request: Request) -> Response:
        rows, problems = audits.rows()
        return HTMLResponse(index_page(folder, rows, problems), headers=SECURITY_HEADERS)

    routes: list[Any] = [
        Route("/", index),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        Mount("/a/{name}", app=audits),
    ]
    root = Starlette(routes=routes, middleware=[Middleware(HostGuard)])
    root.state.views = [got[0] for p in audits_in(folder) if (got := audits.get(p.name)) is not None]
    return root
