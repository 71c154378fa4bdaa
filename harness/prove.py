"""Prove a task's spec: run its oracle and every counterexample on a real sandbox, compare expectations."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from harness.episode import PreparedTask, scripted_episode
from harness.tasks import Expectation, Task
from sandbox.sandbox import Sandbox


@dataclass(frozen=True)
class ProofRow:
    task: str
    script: str
    expected: str
    got: str
    ok: bool
    detail: str = ""


def _describe(outcome: str, sub_label: str, rules: list[str], dollars: Decimal | None) -> str:
    parts = [outcome]
    if sub_label:
        parts.append(sub_label)
    if rules:
        parts.append("rules=" + ",".join(rules))
    if dollars is not None:
        parts.append(f"${dollars:.2f}")
    return " ".join(parts)


def check(expect: Expectation, verdict) -> tuple[bool, str]:
    fired = sorted({e.rule for e in verdict.events})
    problems = []
    if verdict.outcome != expect.outcome:
        problems.append(f"outcome {verdict.outcome}")
    if expect.sub_label and verdict.sub_label != expect.sub_label:
        problems.append(f"sub_label {verdict.sub_label}")
    missing = [r for r in expect.rules if r not in fired]
    if missing:
        problems.append(f"rule(s) {missing} did not fire")
    if expect.dollars is not None and Decimal(verdict.dollars) != expect.dollars:
        problems.append(f"dollars {verdict.dollars}")
    unmet = [r.label for r in verdict.requirements if not r.met]
    if expect.outcome == "PASS" and unmet:
        problems.append(f"unmet: {unmet}")
    return not problems, "; ".join(problems)


def prove_task(sb: Sandbox, prepared: PreparedTask) -> list[ProofRow]:
    task: Task = prepared.task
    rows = []
    for name, script in task.scripts().items():
        expect = task.oracle_expect if name == "oracle" else script.expect
        assert expect is not None
        episode = scripted_episode(sb, prepared, script, name)
        v = episode.verdict
        failed_calls = [c.tool for c in episode.calls if not c.ok]
        ok, detail = check(expect, v)
        if name == "oracle" and failed_calls:
            ok, detail = (
                False,
                (detail + "; " if detail else "") + f"oracle tool call(s) failed: {failed_calls}",
            )
        got = _describe(v.outcome, v.sub_label, sorted({e.rule for e in v.events}), Decimal(v.dollars))
        rows.append(
            ProofRow(
                task.id,
                name,
                _describe(expect.outcome, expect.sub_label, expect.rules, expect.dollars),
                got,
                ok,
                detail,
            )
        )
    return rows
