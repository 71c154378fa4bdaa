"""`agentrel audit`: run every task K times per model against fresh sandboxes; resumable."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from harness.cli.options import Backend, Dsn
from harness.cli.sandbox import sandbox_errors

out = Console()
err = Console(stderr=True, highlight=False)


def audit(
    model: Annotated[
        list[str],
        typer.Option(
            "--model",
            "-m",
            help="Agent to audit; repeat for several. "
            "scripted/<script>, reference/stochastic, openai/<model>, anthropic/<model>.",
        ),
    ] = ["reference/stochastic"],  # noqa: B006
    k: Annotated[int, typer.Option("--k", min=1, help="Runs per (model, task, condition) cell.")] = 16,
    tasks: Annotated[str, typer.Option("--tasks", help="Task id glob(s), comma-separated.")] = "*",
    concurrency: Annotated[int, typer.Option("--concurrency", "-j", min=1, help="Runs in flight.")] = 4,
    results: Annotated[
        Path | None, typer.Option("--results", help="Results directory (default results/<models>-k<K>).")
    ] = None,
    max_steps: Annotated[int, typer.Option("--max-steps", min=1, help="Tool-loop step budget.")] = 30,
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
) -> None:
    """Audit agents: every task K times, each on a fresh sandbox, damage read from the state diff.

    Re-running the same command resumes: finished runs are skipped."""
    from harness.audit import audit as run_audit
    from harness.audit import default_results_dir
    from harness.records import ResultsDir
    from sandbox.sandbox import Sandbox

    patterns = [p.strip() for p in tasks.split(",") if p.strip()]
    results = results or default_results_dir(model, k, patterns)
    try:
        with sandbox_errors():
            sb = Sandbox.open(dsn, backend)
            outcome = run_audit(
                models=model,
                k=k,
                task_patterns=patterns,
                concurrency=concurrency,
                results=results,
                sandbox=sb,
                max_steps=max_steps,
                temperature=temperature,
                prices_path=prices,
            )
    except KeyboardInterrupt:
        done = len(ResultsDir(results).finished())
        err.print(
            f"agentrel: interrupted: {done} run(s) recorded in {results}; run the same command to resume"
        )
        raise typer.Exit(130) from None
    out.print(
        f"results: {outcome.results.path}  protocol {outcome.protocol_hash[:12]}  "
        f"{len(outcome.new)} new run(s), {outcome.skipped} already finished"
    )
    render_summary(outcome.results.records())
    if report:
        from harness.cli.analyze import analyze_command

        analyze_command(outcome.results.path, json_file=outcome.results.path / "analysis" / "summary.json")


def render_summary(records) -> None:
    cells: dict[tuple[str, str, str], list] = defaultdict(list)
    for r in records:
        cells[(r.model, r.task, r.condition)].append(r)
    table = Table("model", "task", "n", "damaging", "pass", "errors", "dollars")
    for (model, task, _cond), rs in sorted(cells.items()):
        ok = [r for r in rs if r.verdict is not None]
        dmg = sum(r.verdict.outcome == "FAIL_DAMAGE" for r in ok)
        passed = sum(r.verdict.outcome == "PASS" for r in ok)
        dollars = sum((Decimal(r.verdict.dollars) for r in ok), Decimal("0"))
        table.add_row(
            model, task, str(len(ok)), str(dmg), str(passed), str(len(rs) - len(ok)), f"{dollars:.2f}"
        )
    out.print(table)


def register(root: typer.Typer) -> None:
    root.command("audit")(audit)
