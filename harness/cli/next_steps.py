"""What an audit says when it ends: whether its numbers may be published, in words, and what to do next.

"Not publishable" is not an error: the runs are real evidence. It means nothing bound the protocol before
the runs, or the matrix is incomplete, so a score could have been re-rolled or cherry-picked. The lines
say which, with the commands that make a publishable audit.
"""

from __future__ import annotations

import shlex
from pathlib import Path

FREEZE_CODES = {"freeze_missing", "run_not_frozen", "run_before_freeze"}


def publication_lines(
    results: Path, models: list[str], k: int, tasks: list[str], conditions: list[str] | None = None
) -> list[str]:
    """Whether `results` is publishable, in sentences; for an unfrozen audit, the plan-freeze-run-publish
    sequence for the same matrix in a new directory."""
    from agentrel.harness.errors import UserError
    from agentrel.harness.publication.publish import eligibility_of
    from agentrel.harness.publication.reasons import meaning

    try:
        proof = eligibility_of(results)
    except UserError as exc:
        return [f"Publication could not be checked: {exc}"]
    if proof.eligible:
        return [
            f"This audit is publishable (frozen protocol {proof.protocol_hash[:12]}, every registered run "
            f"measured): `agentrel publish {shlex.quote(str(results))}` writes its scorecard."
        ]
    heads = list(dict.fromkeys(code.partition(":")[0] for code in proof.reasons))
    words = "; ".join(meaning(h) for h in heads)
    lines = [
        f"This audit is evidence, not a publishable score: {words} "
        f"(reason codes: {', '.join(proof.reasons)})."
    ]
    if FREEZE_CODES & set(heads):
        fresh = shlex.quote(f"{results}-frozen")
        matrix = " ".join(f"-m {shlex.quote(m)}" for m in models)
        matrix += f" --k {k} --tasks {shlex.quote(','.join(tasks))}"
        if conditions and conditions != ["clean"]:
            matrix += f" --condition {shlex.quote(','.join(conditions))}"
        lines += [
            "A publishable audit fixes its protocol before its runs, so no matrix can be re-rolled until it "
            "looks clean. In a new results directory:",
            f"  agentrel audit {matrix} --results {fresh} --plan",
            f"  agentrel protocol freeze {fresh} --by YOUR-NAME",
            f"  agentrel audit {matrix} --results {fresh}",
            f"  agentrel publish {fresh}",
        ]
    return lines


def next_steps(results: Path, report: bool) -> list[str]:
    """Where to look next."""
    where = shlex.quote(str(results))
    lines = ["Next:"]
    if report:
        lines.append(f"  open {results / 'analysis' / 'report.html'} (or report.md): findings first")
    lines += [
        f"  agentrel view {where}      browse every run: verdict, changed rows with their rules, transcript",
        f"  agentrel export damages {where} -o damages.csv      every damage event with its price",
        f"  agentrel required-k --from {where}      repeats each cell needs to show its damage",
    ]
    return lines
