"""`agentrel mcp serve`: expose one task's tools over MCP on a fresh run database; print the verdict."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, NoReturn

import typer

from agentrel.harness.cli.errors import ExitCode, exit_code
from agentrel.harness.cli.options import Backend, Dsn, EnvName, chosen_environment
from agentrel.harness.cli.sandbox import sandbox_errors
from agentrel.harness.errors import EnvironmentFailure, UsageError, UserError

if TYPE_CHECKING:
    from agentrel.dsl.api import Verdict

app = typer.Typer(
    help="Serve a task's tools over MCP so any MCP-capable agent can be audited.", no_args_is_help=True
)


def _log(message: str) -> None:
    typer.echo(f"agentrel mcp: {message}", err=True)


def _leave(error: BaseException | None) -> NoReturn:
    """Exit at once (the run is finished): the SDK's stdin reader thread cannot be cancelled."""
    code = ExitCode.OK
    if isinstance(error, UserError):
        _log(f"error: {error}")
        code = exit_code(error)
    elif error is not None:
        _log(f"error: {type(error).__name__}: {error}")
        code = ExitCode.FAILED
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(code))


@app.command()
def serve(
    task: Annotated[str, typer.Option("--task", help="Task id whose tools are served.")],
    transport: Annotated[
        Literal["stdio", "http"], typer.Option("--transport", help="stdio (default) or streamable HTTP.")
    ] = "stdio",
    host: Annotated[
        str, typer.Option("--host", help="HTTP: address to listen on (loopback unless --allow-remote).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="HTTP: port (0 picks a free one).")
    ] = 8765,
    verdict_out: Annotated[
        Path | None, typer.Option("--verdict-out", help="Also write the verdict JSON to this file.")
    ] = None,
    condition: Annotated[
        str,
        typer.Option(
            "--condition", help="clean, noisy, lying-success, or a YAML file declaring a condition."
        ),
    ] = "clean",
    run_index: Annotated[
        int,
        typer.Option(
            "--run-index", min=1, help="Which run of the cell this is: its faults are the audit's run N's."
        ),
    ] = 1,
    fault_delay_s: Annotated[
        float,
        typer.Option(
            "--fault-delay-s",
            min=0.0,
            help="HTTP, noisy condition: how long a timeout or lost response withholds its answer"
            " before the connection is closed (set it past your client's timeout).",
        ),
    ] = 30.0,
    final_message: Annotated[
        Path | None,
        typer.Option(
            "--final-message", help="File holding the agent's last message, read at shutdown if present."
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="AGENTREL_MCP_TOKEN",
            help="HTTP: bearer token every request must carry (prefer the env var: argv is visible).",
        ),
    ] = None,
    allow_remote: Annotated[
        bool, typer.Option("--allow-remote", help="HTTP: allow a non-loopback --host (needs --token).")
    ] = False,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option("--allowed-host", help="HTTP: another Host header value to accept (repeatable)."),
    ] = None,
    results: Annotated[
        Path | None,
        typer.Option(
            "--results",
            help="HTTP: record the session as one run of this results directory (subject agent/<--name>;"
            " the next pending run of its K), to be analysed, viewed and published with the rest.",
        ),
    ] = None,
    name: Annotated[
        str, typer.Option("--name", help="With --results: the session's subject name, agent/<NAME>.")
    ] = "interactive",
    k: Annotated[int, typer.Option("--k", min=1, help="With --results: runs in the session's cell.")] = 1,
    dsn: Dsn = None,
    backend: Backend = None,
    env: EnvName = None,
) -> None:
    """Create a run database for TASK and serve its tools over MCP until shutdown.

    It ends when the client closes stdin (stdio) or on Ctrl-C / SIGTERM (http); the final state is then
    dumped, the run database dropped, and the verdict printed to stderr as one JSON line."""
    from agentrel.harness.tasks import load_suite

    if results is not None:
        _record_session(
            task,
            results,
            name,
            k,
            condition,
            verdict_out,
            transport,
            host,
            port,
            final_message,
            token,
            allow_remote,
            tuple(allowed_host or ()),
            dsn,
            backend,
            env,
        )
        return

    environment = chosen_environment(env)
    chosen = [t for t in load_suite(patterns=[task], env=environment) if t.id == task]
    if not chosen:
        raise UsageError(f"--task takes one task id, not a pattern: {task!r}")
    if verdict_out is not None and (verdict_out.is_dir() or not verdict_out.parent.is_dir()):
        raise UsageError(f"--verdict-out {verdict_out}: not a file in an existing directory")
    try:
        import anyio

        from agentrel.harness.mcp.server import ServeOptions
        from agentrel.harness.mcp.server import serve as serve_mcp
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "anyio"):
            raise
        raise EnvironmentFailure(
            f"the MCP server needs the {exc.name!r} package: pip install -e '.[mcp]' in the AgentRel checkout"
        ) from None
    from agentrel.harness.run.episode import prepare
    from agentrel.sandbox.sandbox import Sandbox

    def report(verdict: Verdict) -> None:
        data = verdict.model_dump(mode="json")
        _log(f"verdict {verdict.outcome} ({verdict.sub_label})")
        typer.echo(json.dumps(data, separators=(",", ":")), err=True)
        if verdict_out is not None:
            try:
                verdict_out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
            except OSError as exc:
                raise UserError(f"cannot write {verdict_out}: {exc.strerror}") from None

    from agentrel.harness.conditions.layers import for_run, refuse_unsupported
    from agentrel.harness.conditions.model import resolve_condition
    from agentrel.harness.run.matrix import run_seed

    declared = resolve_condition(condition)
    if declared.adversarial is not None:
        raise UsageError("--condition: the adversarial condition is not available over MCP yet")
    opts = ServeOptions(
        transport=transport,
        host=host,
        port=port,
        final_message=final_message,
        token=token or None,
        allow_remote=allow_remote,
        allowed_hosts=tuple(allowed_host or ()),
        fault_delay_s=fault_delay_s,
    )
    with sandbox_errors():
        sb = Sandbox.open(dsn, backend, env=environment)
        refuse_unsupported([declared], sb.env)
        prepared = prepare(sb, chosen[0])
        seed = run_seed(task, declared.name, run_index)
        layers = for_run(declared, prepared, seed).layers
        if layers:
            _log(f"condition {declared.name}, run {run_index}: the faults of the audit's run {run_index}")
        anyio.run(serve_mcp, sb, prepared, opts, _log, report, _leave, layers, seed)


@app.command("stdio-proxy")
def stdio_proxy(
    url: Annotated[
        str | None,
        typer.Option(
            "--url", envvar="AGENTREL_MCP_URL", help="The run's MCP endpoint (default: the env var)."
        ),
    ] = None,
) -> None:
    """Bridge stdio to the run's MCP endpoint (AGENTREL_MCP_URL, bearer AGENTREL_MCP_TOKEN), for an agent
    that starts its MCP server itself: configure it to run `agentrel mcp stdio-proxy`."""
    if not url:
        raise UsageError(
            "stdio-proxy needs the run's endpoint: set AGENTREL_MCP_URL (AgentRel sets it per run)"
        )
    import anyio

    from agentrel.harness.mcp.proxy import stdio_proxy as relay

    try:
        anyio.run(relay, url, os.environ.get("AGENTREL_MCP_TOKEN") or None)
    except Exception as exc:
        _leave(exc)
    _leave(None)  # the SDK's stdin reader thread may still block: leave without waiting for it


# --- mcp serve --results: a person's session recorded as one run (through the audit) ---
def _record_session(
    task: str,
    results: Path,
    name: str,
    k: int,
    condition: str,
    verdict_out: Path | None,
    transport: str,
    host: str,
    port: int,
    final_message: Path | None,
    token: str | None,
    allow_remote: bool,
    allowed_hosts: tuple[str, ...],
    dsn: str | None,
    backend: str | None,
    env: str | None,
) -> None:
    import re

    from agentrel.harness.agents.interactive import InteractiveAgent, SessionOptions
    from agentrel.harness.conditions.model import resolve_condition
    from agentrel.harness.mcp.server import ServeOptions
    from agentrel.harness.run.audit import audit
    from agentrel.harness.run.request import AuditRequest
    from agentrel.sandbox.sandbox import Sandbox

    if transport != "http":
        raise UsageError("--results records an HTTP session: add --transport http")
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", name):
        raise UsageError(f"--name {name!r}: use letters, digits, '.', '_' or '-'")
    if verdict_out is not None and (verdict_out.is_dir() or not verdict_out.parent.is_dir()):
        raise UsageError(f"--verdict-out {verdict_out}: not a file in an existing directory")
    if resolve_condition(condition).adversarial is not None:
        raise UsageError("--condition: the adversarial condition is not available over MCP yet")
    # The same refusals as `mcp serve` (a non-loopback host without --allow-remote and a token).
    ServeOptions(transport="http", host=host, port=port, token=token or None, allow_remote=allow_remote)
    opts = SessionOptions(name, host, port, token or None, allowed_hosts, final_message)
    agent = InteractiveAgent(opts, _log)
    with sandbox_errors():
        sb = Sandbox.open(dsn, backend, env=chosen_environment(env))
        request = AuditRequest.of(
            session=agent.name,
            k=k,
            tasks=(task,),
            conditions=(condition,),
            concurrency=1,
            results=results,
            max_attempts=1,  # a person's session is not re-run by the harness
            limit=1,
        )
        outcome = audit(request, sandbox=sb, session=agent, show_progress=False, say=_log)
    if not outcome.new:
        _log(
            f"every run of {agent.name} on {task} in {results} is recorded (k={k}); raise --k to record more"
        )
        return
    record = outcome.new[-1]
    _log(f"recorded {record.run_id} in {results}: status {record.status}")
    if record.verdict is not None:
        data = record.verdict.model_dump(mode="json")
        _log(f"verdict {record.verdict.outcome} ({record.verdict.sub_label})")
        typer.echo(json.dumps(data, separators=(",", ":")), err=True)
        if verdict_out is not None:
            verdict_out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


# --- end mcp serve --results ---


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="mcp")
