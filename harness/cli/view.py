"""`agentrel view RESULTS [--port P]`: parse options, check the directory, serve the view on 127.0.0.1."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Annotated

import typer

from agentrel.harness.errors import EnvironmentFailure, UsageError


def view_command(
    results: Annotated[
        Path,
        typer.Argument(
            help="A results directory written by `agentrel audit`, or a folder of them "
            "(served with an index)."
        ),
    ],
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: any free port).")
    ] = 8765,
) -> None:
    """Serve a local, read-only web view of an audit: headline, cells, runs with their row-level diffs."""
    try:
        from agentrel.harness.view.app import bind, create_app, serve
    except ModuleNotFoundError as exc:
        # starlette and uvicorn come with the mcp extra, which `make setup` installs.
        raise EnvironmentFailure(
            f"agentrel view needs {exc.name}: pip install -e '.[view]' in the AgentRel checkout"
        ) from None
    from agentrel.harness.view.folder import audits_in, create_folder_app
    from agentrel.harness.view.index import NotResults, ResultsIndex

    folder = False
    try:
        ResultsIndex(results).check()  # a wrong path ends here, in one line, before any server starts
    except NotResults:
        if not audits_in(results):  # a folder of audits (results/) is served with an index instead
            raise
        folder = True

    def notify(line: str) -> None:
        print(f"agentrel view: {line}", file=sys.stderr, flush=True)

    try:
        sock = bind(port)
    except OSError as exc:
        hint = "; `--port 0` takes any free port" if port != 0 else ""
        raise UsageError(f"--port {port}: cannot listen on 127.0.0.1:{port} ({exc.strerror}){hint}") from None
    app = create_folder_app(results, notify) if folder else create_app(results, notify)
    # Index and load the first tasks' dumps while the person opens the browser.
    for view in app.state.views if folder else [app.state.view]:
        threading.Thread(target=view.prewarm, daemon=True).start()
    host, bound = sock.getsockname()[:2]
    print(f"agentrel view: http://{host}:{bound}/ (read-only; Ctrl-C stops)", flush=True)
    serve(app, sock)


def register(root: typer.Typer) -> None:
    root.command("view")(view_command)
