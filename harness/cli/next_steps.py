"""What an audit says when it ends: whether its numbers may be published, in words, and what to do next.

"Not publishable" is not an error: the runs are real evidence. It means nothing bound the protocol before
the runs, or the matrix is incomplete, so a score could have been re-rolled or cherry-picked. The lines
say which, with the commands that make a publishable audit.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

FREEZE_CODES = {"freeze_missing", "run_not_frozen", "run_before_freeze"}
NOT_REPLAYED = {"results", "plan"}  # the advice gives its own results directory, and plans first


def command(argv0: str | None = None, found: str | None = None) -> str:
    """How the user can type `agentrel` again: the plain name when it is on PATH (or when we were not
    started as the console script), else the script's own path, as after `make audit` (`.venv/bin/...`,
    never activated). `argv0` and `found` (what PATH resolves `agentrel` to) are for tests."""
    script = argv0 if argv0 is not None else sys.argv[0]
    on_path = found if argv0 is not None else shutil.which("agentrel")
    if Path(script).name != "agentrel":
        return "agentrel"  # `python -m agentrel...`: the user's own way in
    if on_path is not None and os.path.realpath(on_path) == os.path.realpath(script):
        return "agentrel"
    return shlex.quote(script)


def path_hint() -> list[str]:
    """A line saying how to put `agentrel` on PATH, when the commands above had to spell its path."""
    name = command()
    if name == "agentrel":
        return []
    venv = Path(sys.argv[0]).parent / "activate"
    how = f"`source {shlex.quote(str(venv))}`" if venv.exists() else "activate its environment"
    return [f"(agentrel is not on your PATH: {how} to type `agentrel` instead of {name})"]


def given_options(ctx: Any, skip: set[str] = NOT_REPLAYED) -> list[str]:
    """The options the user typed on this command line (`ctx`, the command's click context), in the
    command's declared order, as argv: the same audit again, whatever subjects (`--agent`,
    `--agent-file`), environment, faults or stopping rule it named. Defaults are left out: they are the
    same for the same version. Secret-shaped values (a DSN's password) are redacted: the lines go to a
    terminal and to CI logs. (Typed `Any`: typer vendors its own click, whose classes are not click's.)"""
    from agentrel.harness.redact import redact

    argv: list[str] = []
    for param in ctx.command.params:
        name = param.name or ""
        if param.param_type_name != "option" or name in skip:
            continue
        source = ctx.get_parameter_source(name)
        if source is None or source.name != "COMMANDLINE":
            continue
        value = ctx.params[name]
        flag = param.opts[0]
        if param.is_flag:
            argv.append(flag if value else (param.secondary_opts or [flag])[0])
        elif param.multiple:
            for item in value:
                argv += [flag, redact(str(item))]
        else:
            argv += [flag, redact(str(value.value if hasattr(value, "value") else value))]
    return argv


def publication_lines(results: Path, options: list[str]) -> list[str]:
    """Whether `results` is publishable, in sentences; for an unfrozen audit, the plan-freeze-run-publish
    sequence for the same audit (`options`, from `given_options`) in a new directory."""
    from agentrel.harness.errors import UserError
    from agentrel.harness.publication.reasons import meaning
    from agentrel.harness.publication.validate import eligibility_of

    try:
        proof = eligibility_of(results)
    except UserError as exc:
        return [f"Publication could not be checked: {exc}"]
    if proof.eligible:
        return [
            f"This audit is publishable (frozen protocol {proof.protocol_hash[:12]}, every registered run "
            f"measured): `{command()} publish {shlex.quote(str(results))}` writes its scorecard."
        ]
    heads = list(dict.fromkeys(code.partition(":")[0] for code in proof.reasons))
    words = "; ".join(meaning(h) for h in heads)
    lines = [
        f"This audit is evidence, not a publishable score: {words} "
        f"(reason codes: {', '.join(proof.reasons)})."
    ]
    if FREEZE_CODES & set(heads):
        fresh = shlex.quote(f"{results}-frozen")
        matrix = shlex.join(options)
        me = command()
        lines += [
            "A publishable audit fixes its protocol before its runs, so no matrix can be re-rolled until it "
            "looks clean. In a new results directory:",
            f"  {me} audit {matrix} --results {fresh} --plan",
            f"  {me} protocol freeze {fresh} --by YOUR-NAME",
            f"  {me} audit {matrix} --results {fresh}",
            f"  {me} publish {fresh}",
        ]
    return lines


def next_steps(results: Path, report: bool) -> list[str]:
    """Where to look next."""
    from agentrel.sandbox.servers.local import default_home

    where = shlex.quote(str(results))
    me = command()
    lines = ["Next:"]
    if report:
        lines.append(f"  open {results / 'analysis' / 'report.html'} (or report.md): findings first")
    lines += [
        f"  {me} view {where}      browse every run: verdict, changed rows with their rules, transcript",
        f"  {me} export damages {where} -o damages.csv      every damage event with its price",
        f"  {me} required-k --from {where}      repeats each cell needs to show its damage",
        f"  {me} sandbox down      stop the private Postgres when done (it stays up for the next audit;"
        f" AgentRel's state is in {default_home()}, AGENTREL_HOME moves it)",
        *path_hint(),
    ]
    return lines
