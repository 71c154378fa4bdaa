"""Print the allow-list skeleton of a task's damage spec from the row diff of its oracle run.

    python scripts/spec_skeleton.py --env tau2-retail tau2-retail-air-purifier

Runs the task's oracle plan on a fresh clone of its template (the same run session `tasks prove` uses),
diffs the run's state against the template's, and prints one `allow` rule per changed row: the row's
primary key (`before.` for updates and deletes, `after.` for inserts, since an insert has no before),
the values the change wrote (every column of an insert; an update's changed columns, and
`only_changed(...)` of them). A spec made of these rules alone passes the oracle and labels every other
change, a different value on the same key included, as the fallback's; the author merges
the rules (keys into `in [...]` lists, ordinals into wider matches where the effect allows it), and
writes the damage rules and the requirements by hand (docs/how-to/your-own-environment.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Iterable, Mapping
from typing import Any

from agentrel.dsl.diff import RowChange
from agentrel.dsl.state import TableInfo


def _literal(value: Any, kind: str) -> str:
    """A dump value as a DSL literal of its column's kind (numeric text compares as a number)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) or kind == "numeric":
        return str(value)
    return json.dumps(value)


def allow_rule(change: RowChange, info: TableInfo) -> str:
    """One change as an allow rule matching exactly that row and that effect: its key, and the values it
    wrote (every column of an insert, the changed columns of an update, with nothing else changed)."""
    side = "after" if change.kind == "insert" else "before"
    where = [
        f"{side}.{c} == {_literal(v, info.kind(c))}"
        for c, v in zip(info.primary_key, change.key, strict=True)
    ]
    after = dict(zip(change.columns, change.after_row or (), strict=False))
    written = [c for c in info.columns if c not in info.primary_key] if change.kind == "insert" else []
    written += list(change.changed_columns) if change.kind == "update" else []
    where += [f"after.{c} == {_literal(after[c], info.kind(c))}" for c in written]
    if change.kind == "update":
        where.append(f"only_changed({', '.join(change.changed_columns)})")
    key = ", ".join(str(k) for k in change.key)
    return f'allow "{change.kind} {change.table} ({key})":\n    {change.kind} {change.table} where ' + (
        "\n        and ".join(where)
    )


def skeleton(changes: Iterable[RowChange], infos: Mapping[str, TableInfo]) -> str:
    return "\n".join(allow_rule(c, infos[c.table]) for c in changes) + "\n"


def oracle_changes(env_name: str, task_id: str) -> tuple[list[RowChange], Mapping[str, TableInfo]]:
    from agentrel.dsl.diff import diff
    from agentrel.harness.prove import scripted_run
    from agentrel.harness.run.episode import prepare
    from agentrel.harness.tasks import load_suite
    from agentrel.sandbox.environments import load
    from agentrel.sandbox.sandbox import Sandbox

    env = load(env_name)
    task = next((t for t in load_suite(env=env) if t.id == task_id), None)
    if task is None:
        raise SystemExit(f"no task {task_id!r} in environment {env_name}")
    sb = Sandbox.open(env=env)
    prepared = prepare(sb, task)
    run = asyncio.run(scripted_run(sb, prepared, task.oracle, "oracle"))
    assert run.after is not None
    return diff(prepared.before, run.after), env.table_infos()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="agentrel-enterprise")
    parser.add_argument("task")
    args = parser.parse_args()
    changes, infos = oracle_changes(args.env, args.task)
    print(skeleton(changes, infos), end="")


if __name__ == "__main__":
    main()
