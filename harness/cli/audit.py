"""`agentrel audit`: run every task K times per model against fresh sandboxes; resumable."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from agentrel.harness import defaults
from agentrel.harness.cli.errors import ExitCode
from agentrel.harness.cli.options import Backend, Dsn, EnvName, Image
from agentrel.harness.cli.sandbox import sandbox_errors

if TYPE_CHECKING:
    from agentrel.harness.results.record import RunRecord
    from agentrel.harness.stopping import StoppingRule

out = Console(soft_wrap=True)
err = Console(stderr=True, highlight=False)


def _agents_help() -> str:
    from agentrel.harness.agents import usages

    return "Agent to audit; repeat or comma-separate for several: " + ", ".join(usages()) + "."


def audit(
    ctx: typer.Context,
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model", "-m", help=_agents_help() + f" Default: {defaults.MODEL}.", rich_help_panel="Subjects"
        ),
    ] = None,
    agent: Annotated[
        list[str] | None,
        typer.Option(
            "--agent",
            help="An agent program to audit, NAME=COMMAND (repeatable; split like a shell would, never run"
            " by one): each run serves the task's tools over MCP and starts COMMAND with the AGENTREL_*"
            " environment (docs/how-to/your-own-agent.md). Audited as agent/NAME.",
            rich_help_panel="Agent programs",
        ),
    ] = None,
    agent_file: Annotated[
        list[Path] | None,
        typer.Option(
            "--agent-file",
            help="An agent program declared in YAML (name, command, code files, timeout_s); repeatable.",
            rich_help_panel="Agent programs",
        ),
    ] = None,
    agent_timeout: Annotated[
        float,
        typer.Option(
            "--agent-timeout",
            help="An agent program's time budget per run, in seconds; its process group is killed then.",
            rich_help_panel="Agent programs",
        ),
    ] = 300.0,
    agent_model: Annotated[
        str | None,
        typer.Option(
            "--agent-model",
            help="The model an agent program's calls go to, through AgentRel's model proxy (its tokens"
            " and cost measured, your key never in the agent's reach): openai/<model>, anthropic/<model>,"
            " or scripted/<script> and reference/stochastic (built in: no key).",
            rich_help_panel="Agent programs",
        ),
    ] = None,
    agent_isolation: Annotated[
        str,
        typer.Option(
            "--agent-isolation",
            help="sealed (default): each agent program runs in a bubblewrap sandbox that sees only its code,"
            " its run's files and endpoints; none: as a plain child process (the audit is evidence only).",
            rich_help_panel="Agent programs",
        ),
    ] = "sealed",
    agent_network: Annotated[
        str,
        typer.Option(
            "--agent-network",
            help="loopback (default): a sealed agent reaches only its run's endpoints; host: it shares the"
            " machine's network (recorded in its identity).",
            rich_help_panel="Agent programs",
        ),
    ] = "loopback",
    k: Annotated[
        int,
        typer.Option("--k", min=1, help="Runs per (model, task, condition) cell.", rich_help_panel="Matrix"),
    ] = defaults.K,
    tasks: Annotated[
        list[str] | None,
        typer.Option(
            "--tasks",
            help="Task id glob(s); repeat or comma-separate. Default: all.",
            rich_help_panel="Matrix",
        ),
    ] = None,
    condition: Annotated[
        list[str] | None,
        typer.Option(
            "--condition",
            "-c",
            help="clean, noisy, adversarial, lying-success, or a YAML file declaring a condition; repeat or "
            "comma-separate. "
            "Default: clean.",
            rich_help_panel="Matrix",
        ),
    ] = None,
    faults: Annotated[
        str | None,
        typer.Option(
            "--faults",
            help="A fault schedule: `standard` (each of restart, lost_response, kill and partition on "
            "every task where its trigger can fire) or a YAML file; each fault run is paired with a "
            "clean twin on the same seed.",
            rich_help_panel="Matrix",
        ),
    ] = None,
    fault_coverage_floor: Annotated[
        str | None,
        typer.Option(
            "--fault-coverage-floor",
            help="The share of each fault stratum's runs that must be witnessed for it to be published: a"
            " share (0.9) or KIND=SHARE per fault kind (kill=0.8,restart=1); frozen with the matrix; the"
            " unwitnessed rest is left out of every rate and listed beside. Default: every one.",
            rich_help_panel="Matrix",
        ),
    ] = None,
    fault_timeout: Annotated[
        float,
        typer.Option(
            "--fault-timeout",
            min=0.1,
            help="Fault runs: the tool client's transport timeout (s).",
            rich_help_panel="Matrix",
        ),
    ] = defaults.FAULT_TIMEOUT_S,
    plan: Annotated[
        bool,
        typer.Option(
            "--plan",
            help="Resolve the matrix and write the manifest without running anything (then freeze it).",
            rich_help_panel="Matrix",
        ),
    ] = False,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-j", min=1, help="Runs in flight.", rich_help_panel="Runs")
    ] = defaults.CONCURRENCY,
    results: Annotated[
        Path | None,
        typer.Option(
            "--results",
            help="Results directory (default results/<models>-k<K>, or results/<env>-<models>-k<K> on an "
            "environment other than the built-in).",
            rich_help_panel="Output and gates",
        ),
    ] = None,
    max_steps: Annotated[
        int, typer.Option("--max-steps", min=1, help="Tool-loop step budget.", rich_help_panel="Runs")
    ] = defaults.MAX_STEPS,
    max_attempts: Annotated[
        int,
        typer.Option(
            "--max-attempts",
            min=1,
            help="Attempts per run when the provider or the harness fails (every attempt is kept).",
            rich_help_panel="Runs",
        ),
    ] = defaults.MAX_ATTEMPTS,
    error_budget: Annotated[
        float | None,
        typer.Option(
            "--error-budget",
            help="Most share of a cell's attempts that may be errored (invalid or retried), frozen with "
            "the matrix; over it the cell is neither certified nor published.",
            rich_help_panel="Runs",
        ),
    ] = None,
    temperature: Annotated[
        float, typer.Option("--temperature", help="Sampling temperature.", rich_help_panel="Runs")
    ] = defaults.TEMPERATURE,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the per-cell summary as JSON on standard output (unpriced_events beside dollars; "
            "dollars null when all the damage is unpriced).",
            rich_help_panel="Output and gates",
        ),
    ] = False,
    prices: Annotated[
        Path | None, typer.Option("--prices", help="Token price table (YAML).", rich_help_panel="Runs")
    ] = None,
    fail_on: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-on",
            help="Exit 6 (after writing everything) when any of these holds: damage (a damaging run), "
            "uncertified (a cell not certified clean; needs --until detect), invalid (a run with an "
            "invalid attempt). Comma-separated or repeated; for CI gates.",
            rich_help_panel="Output and gates",
        ),
    ] = None,
    report: Annotated[
        bool,
        typer.Option(
            "--report/--no-report",
            help="Write <results>/analysis/ (report, cells.csv, figures, summary.json) after the runs.",
            rich_help_panel="Output and gates",
        ),
    ] = True,
    dsn: Dsn = None,
    backend: Backend = None,
    env: EnvName = None,
    image: Image = None,
    executor: Annotated[
        str,
        typer.Option(
            "--executor",
            envvar="AGENTREL_EXECUTOR",
            help="Where runs are attempted: local (this process) or ray (one Ray actor per worker, each "
            "with its own sandbox; needs the ray extra). Only this process writes the results.",
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
    # --- sequential audits (issue 27, harness/stopping.py) ---
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            help="Stop each cell when its question is answered: detect (first damaging run, or certified at "
            "the exact zero-damage count; replaces --k) or precision (anytime-valid interval of half-width "
            "--half-width; --k is the cap).",
            rich_help_panel="Sequential audit",
        ),
    ] = None,
    target_p: Annotated[
        float | None,
        typer.Option("--target-p", help="--until detect: certify p < P.", rich_help_panel="Sequential audit"),
    ] = None,
    confidence: Annotated[
        float,
        typer.Option(
            "--confidence",
            help="Confidence of certificates and intervals.",
            rich_help_panel="Sequential audit",
        ),
    ] = 0.95,
    multiplicity: Annotated[
        str,
        typer.Option(
            "--multiplicity",
            help="union (per-cell C; union bound for the agent) or bonferroni (per-cell 1 - (1 - C)/cells).",
            rich_help_panel="Sequential audit",
        ),
    ] = "union",
    half_width: Annotated[
        float | None,
        typer.Option(
            "--half-width", help="--until precision: target half-width W.", rich_help_panel="Sequential audit"
        ),
    ] = None,
    budget_runs: Annotated[
        int | None,
        typer.Option(
            "--budget-runs",
            help="--until detect: the most runs to start in all (fewest-runs-first across open cells).",
            rich_help_panel="Sequential audit",
        ),
    ] = None,
    budget_usd: Annotated[
        float | None,
        typer.Option(
            "--budget-usd",
            help="--until detect: the most US dollars to spend, converted to runs at --cost-per-run or at "
            "the cost recorded in --cost-from.",
            rich_help_panel="Sequential audit",
        ),
    ] = None,
    cost_per_run: Annotated[
        float | None,
        typer.Option(
            "--cost-per-run",
            help="--budget-usd (or a draft --plan's dollars): US dollars one run costs.",
            rich_help_panel="Sequential audit",
        ),
    ] = None,
    cost_from: Annotated[
        Path | None,
        typer.Option(
            "--cost-from",
            help="--budget-usd: earlier results whose recorded costs give the cost of a run (the highest "
            "per-model mean).",
            rich_help_panel="Sequential audit",
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
            "weights_path (a local file, hashed and checked), quantization, chat_template, server, "
            "server_version, ...), kept in the subject's config.",
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
    while under --max-attempts. Exits 1 when runs stay invalid: the matrix is then incomplete; exits 6 when
    a --fail-on condition holds (after writing everything).
    SIGTERM stops it like Ctrl-C: runs in flight are dropped unrecorded, every recorded run is whole."""
    from agentrel.harness.agents.programs import declare_programs
    from agentrel.harness.results.directory import ResultsDir
    from agentrel.harness.run.audit import audit as run_audit
    from agentrel.harness.run.request import AuditRequest
    from agentrel.harness.stopping import rule_from_flags

    # Options to the request's fields; the request's validators hold every cross-option check.
    programs = declare_programs(
        agent or [],
        agent_file or [],
        agent_timeout,
        model=agent_model,
        isolation=agent_isolation,
        network=agent_network,
    )
    models = split_list(model or [])
    subjects = [*models, *(p.subject for p in programs)] or [defaults.MODEL]
    stopping, cost_per_run = rule_from_flags(
        until,
        target_p,
        confidence,
        multiplicity,
        half_width,
        budget_runs,
        budget_usd,
        cost_per_run,
        cost_from,
        subjects,
        plan,
    )
    request = AuditRequest.of(
        environment=env,  # the --env option checked the name as it was parsed
        models=models,
        agents=programs,
        tasks=split_list(tasks or [defaults.TASKS]),
        conditions=split_list(condition or [defaults.CONDITION]),
        faults=faults,
        fault_coverage_floor=fault_coverage_floor,
        fault_timeout_s=fault_timeout,
        k=k,
        max_steps=max_steps,
        max_attempts=max_attempts,
        temperature=temperature,
        until=stopping,
        cost_per_run=cost_per_run,
        error_budget=error_budget,
        fail_on=fail_on or (),
        prices=prices,
        order=order,
        model_timeout_s=model_timeout,
        model_aliases=[_alias(a) for a in split_list(model_alias or [])],
        model_meta=model_meta,
        concurrency=concurrency,
        results=results,
        executor=executor,
        ray_address=ray_address,
        workers=workers,
        dsn=dsn,
        backend=backend,
        image=image,
        plan=plan,
    )
    if stopping is not None and stopping.budget_usd is not None:
        err.print(
            f"agentrel: --budget-usd {stopping.budget_usd:g} at ${stopping.cost_per_run_usd:.6g} a run: "
            f"at most {stopping.budget_runs} runs",
            markup=False,
        )
    results = request.results_dir()
    try:
        with terminate_like_interrupt(), sandbox_errors():
            outcome = run_audit(
                request, say=lambda message: err.print(f"agentrel: {message}", markup=False, soft_wrap=True)
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
        if stopping is not None:
            out.print(sequential_plan_line(stopping, outcome.planned, cost_per_run), markup=False)
        return
    (err if as_json else out).print(
        f"results: {outcome.results.path}  protocol {outcome.protocol_hash[:12]}  "
        f"{len(outcome.new)} new attempt(s), {outcome.skipped} run(s) already finished"
    )
    from agentrel.harness.damage_pricing import damage_pricing

    records = outcome.results.records()
    # Only a $0.00 event can lack a price; only then are the specs read (the suite, once).
    zero = any(Decimal(e.dollars) == 0 for r in records if r.verdict for e in r.verdict.events)
    render_summary(records, as_json, damage_pricing(outcome.results.path).priced if zero else {})
    if outcome.gate is not None:  # --until: what each cell's rule decided
        out.print(f"{outcome.gate.skipped} planned run(s) left unrun: their cells were already decided")
        if outcome.gate.unfunded:
            out.print(f"{outcome.gate.unfunded} planned run(s) left unrun: --budget-runs was spent")
        for line in outcome.gate.bought():
            out.print(line, markup=False)
        for line in outcome.gate.certificates():
            out.print(f"certified {line}", markup=False)
    invalid = [r for r in records if not r.terminal]
    # Every run invalid: exit 1 (the README's), not analysis's "no valid runs" (3); no report to write.
    rated = any(r.valid for r in records)
    if report and rated:
        from agentrel.harness.cli.analyze import analyze_command

        analyze_command(
            outcome.results.path,
            json_file=outcome.results.path / "analysis" / "summary.json",
            status_line=False,
            list_files=False,
        )
    # What the numbers may be used for, in words, and where to go next (harness/cli/next_steps.py).
    from agentrel.harness.cli.next_steps import given_options, next_steps, publication_lines

    for line in [
        *publication_lines(outcome.results.path, given_options(ctx)),
        *next_steps(outcome.results.path, report and rated),
    ]:
        err.print(line, markup=False, soft_wrap=True)
    skipped = " (no report written: no valid run to estimate a rate from)" if report and not rated else ""
    findings = outcome.findings()
    for finding in findings:
        err.print(f"agentrel: --fail-on {finding}", markup=False, soft_wrap=True)
    if invalid:
        err.print(
            f"agentrel: {len(invalid)} run(s) still invalid after {max_attempts} attempt(s) "
            f"(provider, harness or unwitnessed-fault failures; first: {invalid[0].run_id}: "
            f"{invalid[0].error.message if invalid[0].error else invalid[0].status}); the matrix is "
            f"incomplete: its rates are evidence, not scores{skipped}"
        )
        raise typer.Exit(int(ExitCode.GATE if findings else ExitCode.FAILED))
    if findings:
        raise typer.Exit(int(ExitCode.GATE))


def sequential_plan_line(rule: StoppingRule, planned: int, cost_per_run: float | None) -> str:
    """What a draft sequential audit may spend at most: every preregistered run (each cell to its cap)
    unless a budget caps it, and its dollars when the cost of a run is known (--cost-per-run/--cost-from)."""
    most = planned if rule.budget_runs is None else min(planned, rule.budget_runs)
    stop = "its first damage or its certificate" if rule.until == "detect" else "its half-width"
    retries = "the budget counts retries too" if rule.budget_runs is not None else "retries come on top"
    line = f"at most {most} run(s) (a cell stops at {stop}; {retries})"
    if cost_per_run is not None:
        return line + f", at most ${most * cost_per_run:,.2f} at ${cost_per_run:.6g} a run"
    return line + "; give --cost-per-run USD or --cost-from RESULTS to see it in dollars"


def _alias(text: str) -> tuple[str, str]:
    asked, sep, served = text.partition("=")
    return (asked.strip(), served.strip()) if sep else ("", text)


@contextlib.contextmanager
def terminate_like_interrupt() -> Iterator[None]:
    """While the audit runs, SIGTERM (a service manager, a CI timeout, `kill` of a background audit, which
    inherits SIGINT ignored) raises KeyboardInterrupt like Ctrl-C, so the audit stops the same clean way;
    while runs are in flight the library cancels them instead (`harness.run.audit`), as asyncio does for
    SIGINT. The previous handler is put back after: a process that goes on (a test run, a notebook) must
    not keep a Python-level SIGTERM handler, which a forked child would inherit and then could not be
    terminated while blocked."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_IGN:  # whoever started us wants it ignored
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def split_list(values: list[str]) -> list[str]:
    """Repeated options and comma-separated lists, in order, without duplicates."""
    items = [v.strip() for value in values for v in value.split(",")]
    return list(dict.fromkeys(v for v in items if v))


SUMMARY = ("model", "task", "condition", "n", "invalid", "damaging", "pass", "dollars", "unpriced_events")


def render_summary(
    records: list[RunRecord], as_json: bool = False, priced: Mapping[tuple[str, str], bool] | None = None
) -> None:
    """Per cell: valid runs (n), invalid, damaging, passing, priced dollars and unpriced damage events
    (`priced`: which rules name a price, harness.damage_pricing); never a cut identifier. Unpriced damage
    is never a dollar amount: `unpriced` or `$X + N unpriced` in the table, dollars null in the JSON."""
    from agentrel.analysis.damage_amount import amount_text, is_unpriced
    from agentrel.harness.cli.tables import emit, emit_json

    cells: dict[tuple[str, str, str], list[RunRecord]] = defaultdict(list)
    for r in records:
        cells[(r.model, r.task, r.condition)].append(r)
    rows: list[tuple[str, str, str, int, int, int, int, str | None, int]] = []
    for (model, task, condition), rs in sorted(cells.items()):
        ok = [r for r in rs if r.valid and r.verdict is not None]
        verdicts = [r.verdict for r in ok if r.verdict is not None]
        dmg, passed = sum(r.damaging for r in ok), sum(r.passing for r in ok)  # as the report counts
        events = [(ev.spec, ev.rule, Decimal(ev.dollars)) for v in verdicts for ev in v.events]
        unpriced = sum(is_unpriced(*ev, priced or {}) for ev in events)
        dollars = sum((Decimal(v.dollars) for v in verdicts), Decimal("0"))
        amount = None if unpriced and not dollars else f"{dollars:.2f}"
        rows.append((model, task, condition, len(ok), len(rs) - len(ok), dmg, passed, amount, unpriced))
    if as_json:
        emit_json(SUMMARY, rows)
        return
    shown = [(*r[:3], *(f"{v:,}" for v in r[3:7]), amount_text(Decimal(r[7] or "0"), r[8])) for r in rows]
    emit(SUMMARY[:-1], shown, console=out)


def register(root: typer.Typer) -> None:
    root.command("audit")(audit)
