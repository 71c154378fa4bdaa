"""The HTTP edge of `agentrel view`: a Starlette app on 127.0.0.1, GET only, reading one results directory.

Pages: `/` (headline), `/cells?agent=&task=&condition=&outcome=&min_dollars=&sort=&desc=`,
`/runs/<run id>` (`?from=N` pages through a long diff), `/api/version` (what live pages poll),
`/static/*` (the package's own CSS and JS; nothing is fetched from elsewhere). Each request refreshes
the index first, which reads only what an audit appended since the last request. A request addressed
to another host (DNS rebinding) is refused before any of that (`host_guard`).
"""

from __future__ import annotations

import gc
import socket
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from agentrel.harness.errors import UserError
from agentrel.harness.results import layout
from agentrel.harness.view.evidence import EvidenceStore
from agentrel.harness.view.host_guard import HostGuard
from agentrel.harness.view.html import cells_page, headline_page, message_page
from agentrel.harness.view.index import ResultsIndex, Snapshot
from agentrel.harness.view.pages import OUTCOMES, Cell, CellQuery, cell_runs, cells, filter_cells, headline
from agentrel.harness.view.run_html import run_page

HOST = "127.0.0.1"  # never another interface: the view shows agents' transcripts and customers' rows
STATIC = Path(__file__).parent / "static"
SECURITY_HEADERS = {
    # Everything comes from this server; a transcript holding HTML or a script cannot load or run anything.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


class View:
    """The app's state: the index, the evidence store, and per-version page data."""

    def __init__(self, path: Path, notify: Callable[[str], None]) -> None:
        self.path = path
        self.index = ResultsIndex(path)
        self.evidence = EvidenceStore(path)
        self.notify = notify
        self._told: set[str] = set()
        self._cells: tuple[int, list[Cell]] | None = None
        self._headline: tuple[int, str] | None = None
        self._priced: tuple[float | None, dict[tuple[str, str], bool]] | None = None

    def priced(self) -> dict[tuple[str, str], bool]:
        """Which damage rules of the audit's specs name a price (harness.damage_pricing), read again only
        when the manifest changes."""
        from agentrel.harness.damage_pricing import damage_pricing

        try:
            stamp: float | None = (self.path / layout.MANIFEST).stat().st_mtime
        except OSError:
            stamp = None
        if self._priced is None or self._priced[0] != stamp:
            self._priced = (stamp, dict(damage_pricing(self.path).priced))
        return self._priced[1]

    def snapshot(self) -> Snapshot:
        snap = self.index.snapshot()
        # Each bad line (and a torn tail) is said on the terminal once, as well as on the pages.
        for problem in [
            *snap.problems,
            *(["runs.jsonl ends in a torn line (a run being written)"] if snap.torn else []),
        ]:
            if problem not in self._told:
                self._told.add(problem)
                self.notify(problem)
        return snap

    def prewarm(self) -> None:
        """Index the directory and load what the first run page needs; run in the background at start."""
        try:
            self.evidence.prewarm(self.snapshot().manifest)
            self.priced()  # reads the suite's specs once, before a first damaging run is asked for
        except Exception as exc:  # a page asked for later says what is wrong; this is only a head start
            self.notify(f"could not prepare the run pages ahead of time: {type(exc).__name__}: {exc}")

    def cells(self, snap: Snapshot) -> list[Cell]:
        if self._cells is None or self._cells[0] != snap.version:
            self._cells = (snap.version, cells(snap))
        return self._cells[1]


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=SECURITY_HEADERS)


def create_app(path: Path, notify: Callable[[str], None] = lambda _: None) -> Starlette:
    view = View(path, notify)

    def guarded(page: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                return page(request)
            except UserError as exc:
                view.notify(str(exc))
                return _html(message_page("Cannot show these results", str(exc)), 404)
            except Exception as exc:  # a bug must still end in a sentence, on the page and the terminal
                line = f"internal error: {type(exc).__name__}: {exc}"
                view.notify(line)
                return _html(message_page("Internal error", line), 500)

        return endpoint

    def index_page(request: Request) -> Response:
        snap = view.snapshot()
        if view._headline is None or view._headline[0] != snap.version:
            h = headline(snap, view.cells(snap))
            rules, unpriced = _finding_rules(view, h)
            view._headline = (snap.version, headline_page(h, str(view.path), rules, unpriced))
        return _html(view._headline[1])

    def cells_endpoint(request: Request) -> Response:
        snap = view.snapshot()
        q, problem = parse_query(dict(request.query_params))
        if problem:
            return _html(message_page("Bad filter", problem), 400)
        all_cells = view.cells(snap)
        shown = filter_cells(all_cells, q, snap)
        runs = cell_runs(snap, q) if q.one_cell else None
        return _html(cells_page(shown, q, runs, _choices(all_cells), snap.version))

    def run_endpoint(request: Request) -> Response:
        snap = view.snapshot()
        rid = request.path_params["run_id"]
        a = snap.runs.get(rid)
        if a is None:
            return _html(message_page("No such run", f"no run {rid!r} in {view.path}/runs.jsonl (yet)"), 404)
        try:
            start = max(0, int(request.query_params.get("from", "0")))
        except ValueError:
            return _html(message_page("Bad address", "from= must be a row number"), 400)
        ev = view.evidence.run(view.index.line(a), snap.manifest, f"{a.run_id}:{a.lineno}:{a.offset}")
        # Only a $0.00 event can lack a price (a priced rule's amount is its price); only then is the
        # suite's spec asked, which reads the suite once.
        events = ev.record.verdict.events if ev.record and ev.record.verdict else []
        priced = view.priced() if any(Decimal(x.dollars) == 0 for x in events) else {}
        return _html(run_page(a, snap.attempts.get(rid, 1), ev, start, priced))

    def search_endpoint(request: Request) -> Response:
        from agentrel.harness.results.directory import ResultsDir
        from agentrel.harness.view.search import search, search_page

        snap = view.snapshot()
        query = request.query_params.get("q", "").strip()
        if not query:
            return _html(message_page("Search", "type some text to find in final messages and transcripts"))
        hits, read = search(snap.runs.values(), ResultsDir(view.path).transcript_path, query)
        return _html(search_page(query, hits, read, len(snap.runs)))

    def version_endpoint(request: Request) -> Response:
        snap = view.snapshot()
        return JSONResponse(
            {"version": snap.version, "runs": len(snap.runs), "torn": snap.torn}, headers=SECURITY_HEADERS
        )

    def not_found(request: Request, exc: Exception) -> Response:
        return _html(message_page("Not found", f"no page at {request.url.path}; start at /"), 404)

    routes = [
        Route("/", guarded(index_page)),
        Route("/cells", guarded(cells_endpoint)),
        Route("/runs/{run_id}", guarded(run_endpoint)),
        Route("/search", guarded(search_endpoint)),
        Route("/api/version", guarded(version_endpoint)),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={404: not_found}, middleware=[Middleware(HostGuard)])
    app.state.view = view
    return app


def _finding_rules(view: View, h: Any) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Each finding's damage rules and its events with no price, read from its record line (only the
    findings': a few lines)."""
    import json

    from agentrel.analysis.damage_amount import unpriced_events

    rules: dict[str, list[str]] = {}
    found: dict[str, list[tuple[str, str, Decimal]]] = {}
    for a in h.findings:
        try:
            verdict = json.loads(view.index.line(a)).get("verdict") or {}
            events = [ev for ev in verdict.get("events", []) if isinstance(ev, dict)]
            found[a.run_id] = [
                (str(ev.get("spec", "")), str(ev.get("rule", "")), Decimal(str(ev.get("dollars", "0"))))
                for ev in events
            ]
        except (OSError, ValueError, AttributeError, ArithmeticError):
            continue
        rules[a.run_id] = list(dict.fromkeys(r for _, r, _ in found[a.run_id] if r))
    # Only a $0.00 event can lack a price; only then is the suite's spec asked (it reads the suite).
    zero = any(d == 0 for evs in found.values() for *_, d in evs)
    priced = view.priced() if zero else {}
    return rules, {rid: unpriced_events(evs, priced) for rid, evs in found.items()}


def parse_query(params: dict[str, str]) -> tuple[CellQuery, str | None]:
    """The /cells query from its address; a bad value is said in one sentence."""
    outcome = params.get("outcome", "")
    if outcome and outcome not in OUTCOMES:
        return CellQuery(), f"outcome= must be one of {', '.join(OUTCOMES)}, not {outcome!r}"
    raw = params.get("min_dollars", "").strip().lstrip("$")
    try:
        min_dollars = Decimal(raw) if raw else None
    except InvalidOperation:
        return CellQuery(), f"min_dollars= must be an amount such as 100 or 12.50, not {raw!r}"
    q = CellQuery(
        agent=params.get("agent", ""),
        task=params.get("task", ""),
        condition=params.get("condition", ""),
        outcome=outcome,
        min_dollars=min_dollars,
        sort=params.get("sort", ""),
        desc=params.get("desc", "") in ("1", "true"),
    )
    return q, None


def _choices(all_cells: list[Cell]) -> dict[str, list[str]]:
    return {
        "agent": sorted({c.agent for c in all_cells}),
        "task": sorted({c.task for c in all_cells}),
        "condition": sorted({c.condition for c in all_cells}),
    }


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 (port 0: any free port), bound before the server starts, so
    the address printed is the one that answers."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen(128)
    return sock


def serve(app: Any, sock: socket.socket) -> None:
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    # What is alive now (modules, classes, the app) lives as long as the server: out of the cyclic GC's
    # sight, or its first full collection walks it all (~100 ms), which a first page would wait for.
    gc.collect()
    gc.freeze()
    server.run(sockets=[sock])
