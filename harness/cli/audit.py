"""`agentrel audit`: run every task K times per model against fresh sandboxes; resumable."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from agentrel.harness.cli.errors import ExitCode
from agentrel.harness.cli.options import Backend, Dsn, Image
from agentrel.harness.cli.sandbox import sandbox_errors

if TYPE_CHECKING:
    from agentrel.harness.records import RunRecord

out = Console()
err = Console(stderr=True, highlight=False)


def _agents_help() -> str:
    from agentrel.harness.agents import usages

    return "Agent to audit; repeat or comma-separate for several: " + ", ".join(usages()) + "."


def audit(
    model: Annotated[
        list[str] | None,
        typer.Option("--model", "-m", help=_agents_help() + " Default: reference/stochastic."),
    ] = None,
    k: Annotated[int, typer.Option("--k", min=1, help="Runs per (model, task, condition) cell.")] = 16,
    tasks: Annotated[
        list[str] | None,
        typer.Option("--tasks", help="Task id glob(s); repeat or comma-separate. Default: all."),
    ] = None,
    condition: Annotated[
        list[str] | None,
        typer.Option(
            "--condition",
            "-c",
            help="clean, noisy, or a YAML file declaring a condition; repeat or comma-separate. "
            "Default: clean.",
        ),
    ] = None,
    faults: Annotated[
        str | None,
        typer.Option(
            "--faults",
            help="A fault schedule: `standard` (each of restart, lost_response, kill and partition on "
            "every task where its trigger can fire) or a YAML file; each fault run is paired with a "
            "clean twin on the same seed.",
        ),
    ] = None,
    fault_timeout: Annotated[
        float,
        typer.Option("--fault-timeout", min=0.1, help="Fault runs: the tool client's transport timeout (s)."),
    ] = 2.5,
    plan: Annotated[
        bool,
        typer.Option(
            "--plan",
            help="Resolve the matrix and write the manifest without running anything (then freeze it).",
        ),
    ] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", "-j", min=1, help="Runs in flight.")] = 4,
    results: Annotated[
        Path | None, typer.Option("--results", help="Results directory (default results/<models>-k<K>).")
    ] = None,
    max_steps: Annotated[int, typer.Option("--max-steps", min=1, help="Tool-loop step budget.")] = 30,
    max_attempts: Annotated[
        int,
        typer.Option(
            "--max-attempts",
            min=1,
            help="Attempts per run when the provider or the harness fails (every attempt is kept).",
        ),
    ] = 3,
    temperature: Annotated[float, typer.Option("--temperature", help="Sampling temperature.")] = 0.6,
    prices: Annotated[Path | None, typer.Option("--prices", help="Token price table (YAML).")] = None,
    report: Annotated[
        bool,
        typer.Option(
            "--report/--no-report",
            help="Write <results>/analysis/ (report, cells.csv, figures, summary.json) after the runs.",
        ),
    ] = True,
    dsn: Dsn = None,
    backend: Backend = None,
    image: Image = None,
    executor: Annotated[
        str,
        typer.Option(
            "--executor",
            envvar="AGENTREL_EXECUTOR",
            help="Where runs are attempted: local (this process) or ray (one Ray actor per worker, each "
            "with its own sandbox; needs agentrel[ray]). Only this process writes the results.",
            rich_help_panel="Executor",
        ),
    ] = "local",
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            envvar="AGENTREL_RAY_ADDRESS",
            help="A running Ray cluster (host:port); default: start Ray on this machine, on 127.0.0.1.",
            rich_help_panel="Executor",
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=1,
            help="Ray actors, each running --concurrency runs (default: one per CPU of the Ray cluster).",
            rich_help_panel="Executor",
        ),
    ] = None,
    # --- model subjects (issue 25) --------------------------------------------------------------------
    model_timeout: Annotated[
        float | None,
        typer.Option(
            "--model-timeout",
            help="Seconds one model request may take (default 120); recorded in the subject's config. "
            "A request abandoned here may keep computing on a local server (llama.cpp does).",
            rich_help_panel="Model subjects",
        ),
    ] = None,
    model_alias: Annotated[
        list[str] | None,
        typer.Option(
            "--model-alias",
            help="ASKED=SERVED: accept responses whose served model id is SERVED for requests for ASKED "
            "(the model name, with or without its prefix); repeat for several. Any other served id, "
            "other than the provider's dated form of ASKED, makes the run provider-invalid.",
            rich_help_panel="Model subjects",
        ),
    ] = None,
    model_meta: Annotated[
        Path | None,
        typer.Option(
            "--model-meta",
            help="A YAML file of what the server does not say about itself (weights, weights_sha256, "
            "quantization, chat_template, server, server_version, ...), kept in the subject's config.",
            rich_help_panel="Model subjects",
        ),
    ] = None,
    order: Annotated[
        str,
        typer.Option(
            "--order",
            help="run (default): run index outermost, so an interruption spreads finished runs over "
            "every cell; task: task outermost, so a single-context local server reuses its prompt cache.",
            rich_help_panel="Model subjects",
        ),
    ] = "run",
) -> None:
    """Audit agents: every task K times, each on a fresh sandbox, damage read from the state diff.

    Re-running the same command resumes: finished runs are skipped, invalid runs are attempted again
    while under --max-attempts. Exits 1 when runs stay invalid: the matrix is then incomplete.
    SIGTERM stops it like Ctrl-C: runs in flight are dropped unrecorded, every recorded run is whole."""
    from agentrel.harness.audit import audit as run_audit
    from agentrel.harness.audit import default_results_dir
    from agentrel.harness.executors import resolve_executor
    from agentrel.harness.records import ResultsDir
    from agentrel.sandbox.sandbox import Sandbox

    models = split_list(model or ["reference/stochastic"])
    patterns = split_list(tasks or ["*"])
    results = results or default_results_dir(models, k, patterns)
    slots = resolve_executor(executor, ray_address, workers)
    aliases = [_alias(a) for a in split_list(model_alias or [])]
    try:
        terminate_like_interrupt()
        with sandbox_errors():
            sb = Sandbox.open(dsn, backend, image=image)
            outcome = run_audit(
                models=models,
                k=k,
                task_patterns=patterns,
                conditions=split_list(condition or ["clean"]),
                concurrency=concurrency,
                results=results,
                sandbox=sb,
                max_steps=max_steps,
                max_attempts=max_attempts,
                temperature=temperature,
                prices_path=prices,
                faults=faults,
                fault_timeout_s=fault_timeout,
                plan_only=plan,
                say=lambda message: err.print(f"agentrel: {message}", markup=False),
                executor=slots,
                model_timeout_s=model_timeout,
                model_aliases=aliases,
                model_meta=model_meta,
                order=order,  # type: ignore[arg-type]  # checked by the library (one line, exit 2)
            )
    except KeyboardInterrupt:
        done = len(ResultsDir(results).finished(max_attempts))
        err.print(
            f"agentrel: interrupted: {done} run(s) recorded in {results}; run the same command to resume"
        )
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    if plan:
        out.print(
            f"planned: {outcome.results.path}  protocol {outcome.protocol_hash[:12]}  "
            f"{outcome.planned} run(s) preregistered, none run"
        )
        return
    out.print(
        f"results: {outcome.results.path}  protocol {outcome.protocol_hash[:12]}  "
        f"{len(outcome.new)} new attempt(s), {outcome.skipped} run(s) already finished"
    )
    records = outcome.results.records()
    render_summary(records)
    if report:
        from agentrel.harness.cli.analyze import analyze_command

        analyze_command(outcome.results.path, json_file=outcome.results.path / "analysis" / "summary.json")
    invalid = [r for r in records if not r.terminal]
    if invalid:
        err.print(
            f"agentrel: {len(invalid)} run(s) still invalid after {max_attempts} attempt(s) "
            f"(provider, harness or unwitnessed-fault failures; first: {invalid[0].run_id}: "
            f"{invalid[0].error.message if invalid[0].error else invalid[0].status}); the matrix is "
            "incomplete: its rates are evidence, not scores"
        )
        raise typer.Exit(int(ExitCode.FAILED))


def _alias(text: str) -> tuple[str, str]:
    asked, sep, served = text.partition("=")
    return (asked.strip(), served.strip()) if sep else ("", text)


def terminate_like_interrupt() -> None:
    """SIGTERM (a service manager, a CI timeout, `kill` of a background audit, which inherits SIGINT
    ignored) raises KeyboardInterrupt like Ctrl-C, so the audit stops the same clean way; while runs are
    in flight the library cancels them instead (`harness.audit`), as asyncio does for SIGINT."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:  # whoever started us wants it ignored
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def split_list(values: list[str]) -> list[str]:
    """Repeated options and comma-separated lists, in order, without duplicates."""
    items = [v.strip() for value in values for v in value.split(",")]
    return list(dict.fromkeys(v for v in items if v))


def render_summary(records: list[RunRecord]) -> None:
    cells: dict[tuple[str, str, str], list[RunRecord]] = defaultdict(list)
    for r in records:
        cells[(r.model, r.task, r.condition)].append(r)
    table = Table("model", "task", "condition", "n", "invalid", "damaging", "pass", "dollars")
    for (model, task, condition), rs in sorted(cells.items()):
        ok = [r for r in rs if r.valid and r.verdict is not None]
        verdicts = [r.verdict for r in ok if r.verdict is not None]
        dmg = sum(v.outcome == "FAIL_DAMAGE" for v in verdicts)
        passed = sum(v.outcome == "PASS" for v in verdicts)
        dollars = sum((Decimal(v.dollars) for v in verdicts), Decimal("0"))
        invalid = len(rs) - len(ok)
        table.add_row(
            model,
            task,
            condition,
            str(len(ok)),
            f"[red]{invalid}[/]" if invalid else "0",
            str(dmg),
            str(passed),
            f"{dollars:.2f}",
        )
    out.print(table)


def register(root: typer.Typer) -> None:
    root.command("audit")(audit)
