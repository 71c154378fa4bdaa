"""Serve one task's tools over MCP on a fresh run database, and judge the final state at shutdown.

Any MCP-capable agent can then be audited: it calls the task's tools (results are the ToolResult JSON as
text, failures with isError), and when the server stops the run database is dumped **before** it is
dropped, the dump is judged with the task's damage spec, and the verdict is reported once.

Shutdown: on stdio the client closing stdin ends the run; on HTTP, SIGINT or SIGTERM does. Signals that
arrive while the run is being finished are ignored, so the verdict is never cut short by the stdio
client's escalation (stdin closed, SIGTERM after 2 s, SIGKILL 2 s later).

Exposure (HTTP): loopback only unless `allow_remote` with a bearer token; the Host/Origin check and the
one-session gate are `harness.mcp.http`'s.

Faults (a noisy condition): on stdio the agent meets them in the tool result, as in process; on HTTP they
are real HTTP (`harness.conditions.http_faults`). Either way the noise layer draws them, and each is logged.
"""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NoReturn

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from agentrel.dsl.api import RunFacts, Verdict
from agentrel.harness.conditions.http_faults import DEFAULT_DELAY_S, HttpFaults, for_layers
from agentrel.harness.conditions.noise import FaultDraw, Faulted
from agentrel.harness.errors import UsageError
from agentrel.harness.mcp.http import allowed_hosts, http_app, is_loopback, listen, url_of
from agentrel.harness.run.episode import PreparedTask
from agentrel.harness.run.pipeline import Layer
from agentrel.harness.run.session import RunSession, StateUnreadable
from agentrel.harness.tasks import Task
from agentrel.sandbox.sandbox import Sandbox, SandboxError
from agentrel.sandbox.tools import Tool, ToolResult

DEFAULT_PORT = 8765
HTTP_GRACE_S = 3  # how long open HTTP connections may linger once a stop signal arrives
SIGNALS = (signal.SIGINT, signal.SIGTERM)

Transport = Literal["stdio", "http"]
Log = Callable[[str], None]
Report = Callable[[Verdict], None]
Leave = Callable[[BaseException | None], NoReturn]  # exit the process, the code chosen by the caller


@dataclass(frozen=True)
class ServeOptions:
    transport: Transport = "stdio"
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT  # 0 picks a free port (the URL is logged)
    final_message: Path | None = None  # read at shutdown if present: the agent's last message
    token: str | None = field(default=None, repr=False)  # HTTP: every request must carry it as a bearer
    allow_remote: bool = False  # HTTP: the opt-in to a non-loopback host (with a token)
    allowed_hosts: tuple[str, ...] = ()  # HTTP: more Host header values to accept (a DNS name, a proxy)
    fault_delay_s: float = DEFAULT_DELAY_S  # HTTP: how long a timeout or lost response withholds its answer

    def __post_init__(self) -> None:
        """Refuse an exposed server here, so it is refused before any socket or database exists."""
        if self.transport != "http":
            return
        if self.allow_remote and not self.token:
            raise UsageError("--allow-remote needs a bearer token: pass --token or set AGENTREL_MCP_TOKEN")
        if not self.allow_remote and not is_loopback(self.host):
            raise UsageError(
                f"--host {self.host!r} is not loopback, so anyone who reaches it could act on the run:"
                " use --host 127.0.0.1, or add --allow-remote with --token (or AGENTREL_MCP_TOKEN)"
            )


def build_server(
    session: RunSession, faults: HttpFaults | None = None, log: Log | None = None
) -> Server[Any]:
    """The task's tools as an MCP server; `faults` is the HTTP face that delivers the noise layer's draws."""
    return tool_server(session.prepared.task, session.prepared.tools, session.call, faults, log)


def tool_server(
    task: Task,
    tool_defs: Mapping[str, Tool],
    call: Callable[[str, Any], Awaitable[ToolResult]],
    faults: HttpFaults | None = None,
    log: Log | None = None,
) -> Server[Any]:
    """`call` is the run's entry point (a session's, or an audit episode's): every call passes through
    the run's pipeline, so the calls recorded there are what the agent did, whatever it logs itself."""
    tools = [
        types.Tool(name=t.name, description=t.description, input_schema=t.parameters)
        for t in tool_defs.values()
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result = await call(params.name, params.arguments or {})
        if isinstance(result, Faulted):
            if log is not None:
                log(_fault_note(result.draw, params.name, faults))
            if faults is not None:
                result = faults.deliver(ctx.request_id, result)
        return types.CallToolResult(content=[types.TextContent(text=result.text())], is_error=not result.ok)

    return Server(
        f"agentrel-{task.id}",
        title=task.title,
        instructions=task.system_prompt,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _fault_note(draw: FaultDraw, tool: str, faults: HttpFaults | None) -> str:
    ran = "it ran" if draw.executed else "it did not run"
    how = "in the tool result" if faults is None else f"as {faults.wire(draw)}"
    return f"call {draw.ordinal} {tool}: fault {draw.fault} ({ran}), delivered {how}"


async def serve(
    sb: Sandbox,
    prepared: PreparedTask,
    opts: ServeOptions,
    log: Log,
    report: Report,
    leave: Leave,
    layers: Sequence[Layer] = (),
    seed: str = "",
) -> None:
    """Create the run database, serve until shutdown, then report the verdict once (or raise)."""
    sock = listen(opts.host, opts.port) if opts.transport == "http" else None
    session = RunSession(sb, prepared, seed=seed, layers=layers)
    try:
        await session.__aenter__()
    except BaseException:
        if sock is not None:
            sock.close()
        raise
    try:
        # Announced only once a signal finishes the run rather than ending the process: a client (or a
        # test) that reads this line may signal at once.
        def announce() -> None:
            log(f"run database {session.run_db} (task {prepared.task.id}, {len(prepared.tools)} tools)")

        finisher = _Finisher(session, opts.final_message, log, report)
        faults = for_layers(layers, opts.fault_delay_s) if sock is not None else None
        server = build_server(session, faults, log)
        if sock is None:
            await _serve_stdio(server, finisher, log, leave, announce)
        else:
            await _serve_http(server, sock, opts, finisher, log, faults, announce)
    finally:
        with anyio.CancelScope(shield=True):
            await session.__aexit__(None, None, None)


class _Finisher:
    """Finishes the run exactly once: final message, dump, drop, judge, report."""

    def __init__(self, session: RunSession, final_message: Path | None, log: Log, report: Report) -> None:
        self.session = session
        self.final_message = final_message
        self.log = log
        self.report = report
        self.started = False
        self._done = anyio.Event()

    async def __call__(self) -> None:
        """Finish the run; a second caller waits for the first to be done."""
        if self.started:
            await self._done.wait()
            return
        self.started = True
        try:
            with anyio.CancelScope(shield=True):
                final = read_final_message(self.final_message, self.log)
                calls = len(self.session.calls)
                self.log(f"finishing after {calls} tool call(s): dumping {self.session.run_db}")
                try:
                    finished = await self.session.finish(RunFacts(final_message=final))
                except StateUnreadable as exc:
                    raise SandboxError(f"{self.session.run_db}: {exc}") from None
                self.report(finished.verdict)
        finally:
            self._done.set()


async def _serve_stdio(
    server: Server[Any], finish: _Finisher, log: Log, leave: Leave, announce: Callable[[], None]
) -> None:
    from mcp.server.stdio import stdio_server

    error: Exception | None = None
    async with anyio.create_task_group() as tg:
        await tg.start(_finish_on_signal, finish, log, leave)
        announce()
        try:
            try:
                async with stdio_server() as (read, write):
                    await server.run(read, write, server.create_initialization_options())
            finally:
                await finish()  # the signal watcher stays up meanwhile, so a SIGTERM is ignored
        except Exception as exc:  # re-raised outside the task group, so the CLI sees it unwrapped
            error = exc
        tg.cancel_scope.cancel()
    if error is not None:
        raise error


async def _finish_on_signal(
    finish: _Finisher,
    log: Log,
    leave: Leave,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    with anyio.open_signal_receiver(*SIGNALS) as signals:
        task_status.started()
        async for signum in signals:
            if finish.started:
                continue  # already finishing: let it complete
            log(f"{signal.Signals(signum).name}: finishing the run")
            error: BaseException | None = None
            try:
                await finish()
            except Exception as exc:
                error = exc
            # The SDK reads stdin in a worker thread that no cancellation can interrupt while the client
            # keeps the pipe open; the run is finished and reported, so leave without waiting for it.
            leave(error)


async def _serve_http(
    server: Server[Any],
    sock: socket.socket,
    opts: ServeOptions,
    finish: _Finisher,
    log: Log,
    faults: HttpFaults | None,
    announce: Callable[[], None],
) -> None:
    import uvicorn

    config = uvicorn.Config(
        http_app(server, host=opts.host, extra_hosts=opts.allowed_hosts, token=opts.token, faults=faults),
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=HTTP_GRACE_S,
    )
    web = uvicorn.Server(config)
    hosts = ", ".join(allowed_hosts(opts.host, opts.allowed_hosts))
    token_note = "; a bearer token is required" if opts.token else ""
    # uvicorn catches SIGINT/SIGTERM while serving, then restores the previous handlers and re-raises
    # the signal: with no-op handlers in place that re-raise is harmless, and so is a signal arriving
    # while the run is being finished (or before uvicorn has installed its own).
    with _signals_ignored(), faults.quiet_cuts() if faults is not None else nullcontext():
        announce()
        log(f"listening on {url_of(sock)} (Host: {hosts}{token_note})")
        try:
            await web.serve(sockets=[sock])
        finally:
            sock.close()
            await finish()


@contextmanager
def _signals_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, lambda *_: None) for s in SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def read_final_message(path: Path | None, log: Log) -> str | None:
    if path is None or not path.exists():
        return None
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        log(f"warning: cannot read the final message {path}: {exc.strerror}; judging without it")
        return None
    return text if text.strip() else None
