"""`agentrel analyze` and `agentrel required-k`: parse options, call analysis/, render."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from agentrel.harness.errors import EnvironmentFailure, UsageError, UserError
from agentrel.harness.results import layout

if TYPE_CHECKING:
    from agentrel.analysis.normalized import LoadedInput

INPUT_HELP = "A results directory (runs.jsonl + manifest.json) or an outcomes CSV."
MIXED_HELP = "Pool records that carry different protocol hashes (refused by default)."

err = Console(stderr=True, highlight=False)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the library's input errors (and unwritable outputs) into the CLI's one-line UserError."""
    from agentrel.analysis.normalized import InputError, MixedProtocolsError

    try:
        yield
    except MixedProtocolsError as exc:
        raise UserError(f"{exc}; pass --allow-mixed-protocols to pool them anyway") from None
    except InputError as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:
        raise EnvironmentFailure(f"{exc.filename or ''}: {exc.strerror or exc}") from None


def load(path: Path, allow_mixed: bool) -> LoadedInput:
    """Load an input with a status line on stderr (analysis.normalized.LoadedInput)."""
    from agentrel.analysis.inputs import load_input

    with user_errors(), err.status(f"loading {path}"):
        return load_input(path, allow_mixed_protocols=allow_mixed)


def publication_status(results: Path, workers: int | None = None) -> str:
    """Whether what `analyze` shows may be published (`agentrel publish` decides the same way)."""
    from agentrel.harness.errors import UserError
    from agentrel.harness.publication.validate import eligibility_of, status_line

    directory = results if results.is_dir() else results.parent
    try:
        return status_line(eligibility_of(directory, workers=workers))
    except UserError as exc:
        return f"evidence only, not publishable (cannot validate: {exc})"


@contextmanager
def publication_check(results: Path, wanted: bool) -> Iterator[Callable[[], str] | None]:
    """`publication_status` started in a process of its own, as the wait for its line (None when not
    wanted). The check reads, hashes and labels every record again, about as long as analysis's own work
    in this process: on a second core the two overlap (a 100,000-run analysis waited for both in turn).
    Whatever happens meanwhile, the check ends with the block."""
    if not wanted:
        yield None
        return
    import multiprocessing

    # A fresh interpreter (never a fork of this process, whose status spinner is a thread), started
    # without waiting: a forkserver that preloads the publication modules held this process up to 0.4 s
    # before its own work; the worker imports what it needs while analysis runs. Its one worker reads and
    # labels in process (workers=1).
    pool = multiprocessing.get_context("spawn").Pool(1)
    try:
        pending = pool.apply_async(_status_here, (dict(os.environ), os.getcwd(), results))

        def wait() -> str:
            with err.status("checking whether the results may be published"):
                return pending.get()

        yield wait
    finally:
        pool.terminate()
        pool.join()


def _status_here(environ: dict[str, str], cwd: str, results: Path) -> str:
    """`publication_status` in the worker, with this process's environment and directory as they are
    when the check starts (AGENTREL_HOME names the registry and the key it trusts)."""
    os.environ.clear()
    os.environ.update(environ)
    os.chdir(cwd)
    return publication_status(results, 1)


def run_counts(loaded: LoadedInput, cells: int) -> str:
    """'N valid runs, 3 invalid (provider_invalid 2, ...) in M cells; R retried attempts' for stderr."""
    from agentrel.analysis.normalized import describe_invalid

    line = f"{len(loaded.runs)} valid runs, {describe_invalid(loaded.invalid_by_status())} in {cells} cells"
    return line + (f"; {len(loaded.superseded)} retried attempts" if len(loaded.superseded) else "")


def _default_out(path: Path) -> Path:
    if path.is_dir() or path.name.endswith(".jsonl"):
        return (path if path.is_dir() else path.parent) / "analysis"
    return Path("results") / f"{path.stem}-analysis"


InputArg = Annotated[Path, typer.Argument(help=INPUT_HELP)]
MixedOpt = Annotated[bool, typer.Option("--allow-mixed-protocols", help=MIXED_HELP)]
SeedOpt = Annotated[
    int, typer.Option("--seed", envvar="AGENTREL_SEED", help="Seed for every resampling step.")
]


def analyze_command(
    input: InputArg,
    out: Annotated[
        Path | None, typer.Option("--out", help="Report directory [default: <results>/analysis].")
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the JSON summary on stdout (the files written go to stderr)."),
    ] = False,
    json_file: Annotated[
        Path | None, typer.Option("--json-file", help="Also write the JSON summary to this file.")
    ] = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", min=0, help="Cluster-bootstrap resamples.")] = 2000,
    seed: SeedOpt = 0,
    allow_mixed_protocols: MixedOpt = False,
    no_figures: Annotated[bool, typer.Option("--no-figures", help="Skip the PNG figures.")] = False,
    status_line: Annotated[bool, typer.Option(hidden=True)] = True,
    list_files: Annotated[bool, typer.Option(hidden=True)] = True,
    target_p: Annotated[
        float | None,
        typer.Option(
            "--target-p",
            help="Add certificates at this per-run damage rate [an --until detect audit: its frozen P].",
        ),
    ] = None,
    confidence: Annotated[
        float | None, typer.Option("--confidence", help="Confidence of the certificates [0.95].")
    ] = None,
    multiplicity: Annotated[
        str | None,
        typer.Option("--multiplicity", help="union (per-cell C, union bound) or bonferroni [union]."),
    ] = None,
) -> None:
    """Estimate the operational axes, damage rates, miss rates, overdispersion, repeats and dollars;
    write the reports (with a certificate section for an --until detect audit, or with --target-p)."""
    check_certificate_options(target_p, confidence, multiplicity)
    from agentrel.analysis.decisions.certificates import loaded_certificates
    from agentrel.analysis.outputs import write_report, write_summary_json
    from agentrel.analysis.pipeline import analyze

    # The audit says whether it is publishable in words at its end instead (status_line False).
    is_results = input.is_dir() or input.name.endswith(".jsonl")
    with publication_check(input, is_results and status_line) as publishable:
        loaded = load(input, allow_mixed_protocols)
        rule = certificate_rule(loaded, target_p, confidence, multiplicity)
        if loaded.kind == "results" and not loaded.events.empty:
            from agentrel.analysis.export import damages_frame, unpriced_counts
            from agentrel.harness.damage_pricing import damage_pricing

            loaded.unpriced = unpriced_counts(damages_frame(loaded, damage_pricing(input)))
        out_dir = out or _default_out(input)
        with user_errors(), err.status("analysing") as status:
            result = analyze(loaded, n_boot=bootstrap, seed=seed, progress=lambda m: status.update(m))
            status.update("writing report and figures")
            certificates = loaded_certificates(loaded, *rule) if rule is not None else None  # type: ignore[arg-type]
            written = write_report(result, out_dir, figures=not no_figures, certificates=certificates)
            if json_file is not None:
                written.append(write_summary_json(result, json_file))
        if publishable is not None:
            err.print(f"agentrel: {publishable()}", markup=False, soft_wrap=True)
        err.print(run_counts(loaded, len(result.cells)), markup=False, soft_wrap=True)
        from agentrel.analysis.report_paired import power_lines

        for line in power_lines(result):  # a comparison: the power it had for what it observed
            err.print(line, markup=False, soft_wrap=True)
        if loaded.faults is not None:
            from agentrel.analysis.faults import fault_lines

            for line in fault_lines(loaded.faults):
                err.print(line, markup=False, soft_wrap=True)
        for path in written if list_files else []:  # an audit names the report in its next steps instead
            typer.echo(str(path), err=as_json)
        if as_json:
            from agentrel.analysis.summary import build_summary

            typer.echo(build_summary(result).to_json())


# --- certificates (issue 27): one section, the same object `agentrel certify` prints ----------------


def check_certificate_options(
    target_p: float | None, confidence: float | None, multiplicity: str | None
) -> None:
    """Bad certificate options are one UsageError line, before anything is read."""
    from agentrel.analysis.decisions.certify import MULTIPLICITIES

    for flag, value in (("--target-p", target_p), ("--confidence", confidence)):
        if value is not None and not (math.isfinite(value) and 0.0 < value < 1.0):
            raise UsageError(f"{flag} must be strictly between 0 and 1, got {value}")
    if multiplicity is not None and multiplicity not in MULTIPLICITIES:
        raise UsageError(f"--multiplicity must be one of {', '.join(MULTIPLICITIES)}, got {multiplicity!r}")


def certificate_rule(
    loaded: LoadedInput, target_p: float | None, confidence: float | None, multiplicity: str | None
) -> tuple[float, float, str, str] | None:
    """(P, C, multiplicity, source) of the certificate section, or None for none: the options when
    --target-p is given, else the rule an `--until detect` audit's manifest froze (as loaded)."""
    from agentrel.harness.stopping import StoppingRule

    if target_p is not None:
        return target_p, confidence or 0.95, multiplicity or "union", "options given to analyze"
    rule = None
    if loaded.stopping is not None:
        try:
            rule = StoppingRule.from_manifest(loaded.stopping)
        except ValueError:
            where = loaded.source / layout.MANIFEST if loaded.source.is_dir() else loaded.source
            raise UserError(f"{where}: its stopping rule cannot be read; restore the file") from None
    if rule is None or rule.until != "detect" or rule.target_p is None:
        if confidence is not None or multiplicity is not None:
            raise UsageError(
                "--confidence and --multiplicity go with --target-p (or an --until detect audit)"
            )
        return None
    return (
        rule.target_p,
        confidence or rule.confidence,
        multiplicity or rule.multiplicity,
        "the audit's frozen --until detect rule",
    )


def _suite_size() -> int | None:
    """Tasks in the suite this agentrel reads (None when it cannot be read: the sentence is left out)."""
    from agentrel.harness.tasks import task_files

    try:
        return len(task_files())
    except UserError:
        return None


def _print_single(
    p: float | None,
    x: int | None,
    n: int | None,
    alpha: Fraction,
    conservative: bool,
    confidence: float,
    as_json: bool,
    cost_per_run: float | None,
) -> None:
    import json

    from agentrel.analysis.plain import detection_sentence, suite_sentence, zero_bound_sentence
    from agentrel.analysis.required_k import required_k, required_k_from_counts

    target = float(1 - alpha)
    answer: dict[str, object] = {"target": target, "confidence": confidence, "x": x, "n": n}
    if p is not None:
        k = required_k(p, alpha)
        answer.update(k=k, p=p, basis="given")
        sentence = (
            detection_sentence(k, p, target)
            if k is not None
            else "No finite number of runs: at a damage rate of 0 there is nothing to see."
        )
    else:
        assert x is not None and n is not None
        res = required_k_from_counts(x, n, alpha, conservative=conservative, confidence=confidence)
        k = res.k
        answer.update(k=k, p=res.p_used, basis=res.basis, p_upper=res.p_upper)
        if k is None:
            sentence = zero_bound_sentence(n, res.p_upper or 0.0, confidence)
        else:
            basis = (
                f"the one-sided {confidence:.0%} lower bound of {x} in {n}"
                if conservative
                else f"{x} of {n} observed"
            )
            sentence = detection_sentence(k, res.p_used, target, basis)
    tasks = _suite_size()
    lines = [sentence]
    if k is not None and tasks:
        lines.append(suite_sentence(k, tasks, cost_per_run))
        answer.update(suite_tasks=tasks, suite_runs=k * tasks)
        if cost_per_run is not None:
            answer.update(cost_per_run_usd=cost_per_run, suite_cost_usd=round(k * tasks * cost_per_run, 2))
    answer["sentence"] = " ".join(lines)
    if as_json:
        typer.echo(json.dumps(answer, sort_keys=True))
        return
    for line in lines:
        typer.echo(line)


def _print_plan(
    path: Path, target: float, confidence: float, allow_mixed: bool, damaging_only: bool, as_json: bool
) -> None:
    from agentrel.analysis.audit_plan import audit_plan
    from agentrel.analysis.doc import agent_label, fmt, fmt_k, fmt_money, pool_label
    from agentrel.analysis.pipeline import cell_frame, core_statistics
    from agentrel.harness.cli.tables import emit

    loaded = load(path, allow_mixed)
    with user_errors():
        cells = cell_frame(loaded, n_boot=1, seed=0, alpha=1.0 - target)
        plan = audit_plan(cells, target=target, confidence=confidence)
        pools = core_statistics(cells, n_boot=0, seed=0, alpha=1.0 - target)
    rows = plan[plan["x"] > 0] if damaging_only else plan
    rows = rows.assign(_hit=rows["x"] > 0).sort_values(["_hit", "p_hat", "n"], ascending=False)
    if as_json:
        import json

        records = rows.drop(columns=["_hit"]).to_json(orient="records")
        typer.echo(
            json.dumps(
                {
                    "target": target,
                    "confidence": confidence,
                    "cells": json.loads(records),
                    "pools": [
                        {
                            "pool": pool_label(p),
                            "condition": p.spec.condition,
                            "runs": p.runs,
                            "invalid": p.invalid,
                            "k_beta": p.required_k_beta,
                        }
                        for p in pools
                    ],
                },
                indent=1,
            )
        )
        return
    known = rows["cost_usd_per_run"].notna().any()
    heads = ["agent", "task", "condition", "x/n", "invalid", "p̂", "k", "k conservative", "p upper (x=0)"]
    if known:
        heads += ["$/run", "audit $ (k conservative)"]
    table_rows = []
    for r in rows.itertuples(index=False):
        cells_ = [
            agent_label(r.model, r.agent_kind),
            r.task,
            r.condition,
            f"{r.x}/{r.n}",
            str(r.invalid),
            fmt(r.p_hat),
            fmt_k(r.k_point),
            fmt_k(r.k_conservative),
            fmt(r.p_upper, 4),
        ]
        if known:
            cells_ += [fmt_money(r.cost_usd_per_run), fmt_money(r.audit_cost_conservative)]
        table_rows.append(cells_)
    out = Console(highlight=False, soft_wrap=True)
    emit(
        heads, table_rows, title=f"Repeats to see each cell's damage with probability {target:g}", console=out
    )
    pool_rows = []
    for p in pools:
        k = p.required_k_beta
        pool_rows.append(
            [
                pool_label(p),
                p.spec.condition,
                str(p.runs),
                str(p.invalid),
                fmt(p.fit.a),
                fmt(p.fit.b),
                fmt_k(k) if k is not None else ("–" if p.damaged_runs == 0 else "> 4.6e18"),
            ]
        )
    emit(
        ["pool", "condition", "n", "invalid", "a", "b", "k"],
        pool_rows,
        title="Heterogeneity-aware repeats (p ~ fitted beta across a pool's cells)",
        console=out,
    )


def required_k_command(
    p: Annotated[float | None, typer.Option("--p", help="Per-run damage probability.")] = None,
    x: Annotated[int | None, typer.Option("--x", min=0, help="Damaging runs observed.")] = None,
    n: Annotated[int | None, typer.Option("--n", min=1, help="Runs observed.")] = None,
    alpha: Annotated[float | None, typer.Option("--alpha", help="Allowed miss probability.")] = None,
    target: Annotated[float | None, typer.Option("--target", help="Detection probability [0.95].")] = None,
    conservative: Annotated[bool, typer.Option("--conservative", help="Use the lower bound of p.")] = False,
    confidence: Annotated[float, typer.Option("--confidence", help="Confidence of the bounds.")] = 0.95,
    from_: Annotated[Path | None, typer.Option("--from", help=f"Per-cell table. {INPUT_HELP}")] = None,
    damaging_only: Annotated[bool, typer.Option("--damaging-only", help="Only cells that damaged.")] = False,
    allow_mixed_protocols: MixedOpt = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the answer as one JSON object.")] = False,
    cost_per_run: Annotated[
        float | None,
        typer.Option("--cost-per-run", min=0.0, help="US dollars one run costs: adds the suite's cost."),
    ] = None,
) -> None:
    """Smallest k with (1 - p)^k <= alpha: repeats an audit needs to see damage at least once, as a
    sentence with the suite's total (and its cost with --cost-per-run)."""
    if alpha is not None and target is not None:
        raise UsageError("give --alpha or --target, not both")
    for flag, value in (("--alpha", alpha), ("--target", target), ("--confidence", confidence)):
        if value is not None and not math.isfinite(value):
            raise UsageError(f"{flag} must be a number strictly between 0 and 1, got {value}")
    # Exact rationals from what the user typed: --target 0.95 means alpha = 1/20, not 0.0500...04.
    miss = (
        Fraction(repr(alpha))
        if alpha is not None
        else 1 - Fraction(repr(target if target is not None else 0.95))
    )
    if not 0 < miss < 1 or not 0.0 < confidence < 1.0:
        raise UsageError("--alpha, --target and --confidence must lie strictly between 0 and 1")
    modes = [p is not None, x is not None or n is not None, from_ is not None]
    if sum(modes) != 1:
        raise UsageError("give exactly one of --p P, --x X --n N, or --from INPUT")
    if from_ is not None:
        _print_plan(from_, float(1 - miss), confidence, allow_mixed_protocols, damaging_only, as_json)
        return
    if p is not None and not 0.0 <= p <= 1.0:
        raise UsageError(f"--p must lie in [0, 1], got {p}")
    if p is None and (x is None or n is None or x > n):
        raise UsageError("--x and --n go together, with 0 <= x <= n")
    with user_errors():
        _print_single(p, x, n, miss, conservative, confidence, as_json, cost_per_run)


def _collector_paused(command: Callable[..., None]) -> Callable[..., None]:
    """`command` with the cyclic garbage collector held: the `agentrel analyze` process builds hundreds of
    thousands of acyclic objects that all survive (records, rows, frames), and each collection would only
    re-scan them: at 100,000 runs that was more than half of reading the records (bench/analysis_scale.py).
    Only the command's own process: the library (`agentrel.analyze`) never pauses a caller's collector."""

    @functools.wraps(command)
    def paused(*args: Any, **kwargs: Any) -> None:
        from agentrel.harness.gc_paused import collector_paused

        with collector_paused():
            command(*args, **kwargs)

    return paused


def register(app: typer.Typer) -> None:
    """Add `analyze` and `required-k` to the root app."""
    app.command("analyze")(_collector_paused(analyze_command))
    app.command("required-k")(required_k_command)
