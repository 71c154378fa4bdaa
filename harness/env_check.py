"""`agentrel env check`: the conformance gate every environment passes before its runs mean anything.

Each check turns a promise of the contract (sandbox/environments/contract.py) into an observation on a
real server, and each failure names what broke it (a table, a task, a tool):

- seed: the build, run twice into empty databases, gives equal dumps;
- primary_keys: every table in the diff exists with a primary key, the one declared;
- replay: every task's oracle, replayed twice from its template, gives equal after-states once volatile
  columns are masked (so created ids are stable);
- clock: no non-volatile column written by a replay holds an instant of the replay's own wall clock
  (the clock is pinned, or what it touches is volatile);
- read_only: every call of a tool declared `read` leaves the run database's state unchanged;
- isolation: replaying a task's plans leaves every other database unchanged (its template, the seed
  template and a sibling clone of the template);
- prove: `tasks prove` passes on the suite (every oracle PASS, every counterexample its expected label).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from agentrel.dsl.state import State, TableInfo
from agentrel.harness.errors import UserError
from agentrel.harness.prove import prove_task, scripted_run
from agentrel.harness.run.episode import PreparedTask, prepare
from agentrel.harness.tasks import Task, load_suite
from agentrel.sandbox.databases import Template
from agentrel.sandbox.dump import dump_database
from agentrel.sandbox.environments.contract import record_link_problems
from agentrel.sandbox.sandbox import Sandbox
from agentrel.sandbox.tools import ToolBox

CHECKS = ("seed", "primary_keys", "replay", "clock", "read_only", "isolation", "prove")


@dataclass(frozen=True)
class Problem:
    check: str
    subject: str  # the table, task or tool at fault
    detail: str

    def __str__(self) -> str:
        return f"{self.check}: {self.subject}: {self.detail}"


# -- pure helpers ------------------------------------------------------------------------------------


def masked_digest(state: State) -> str:
    """SHA-256 of the state with every volatile column blanked: what two faithful replays share."""
    h = hashlib.sha256()
    for name in sorted(state.tables):
        table = state.tables[name]
        blank = {i for i, c in enumerate(table.info.columns) if c in table.info.volatile}
        h.update(f"\n{name}".encode())
        for key in sorted(table.rows, key=repr):
            row = table.rows[key]
            h.update(repr(tuple(None if i in blank else v for i, v in enumerate(row))).encode())
    return h.hexdigest()


def differing_tables(a: State, b: State, masked: bool = False) -> list[str]:
    """Tables whose rows differ between two states of one schema (volatile columns blanked if `masked`)."""
    out = []
    for name in sorted(set(a.tables) | set(b.tables)):
        ta, tb = a.tables.get(name), b.tables.get(name)
        if ta is None or tb is None:
            out.append(name)
            continue
        if masked:
            if masked_digest(_only(a, name)) != masked_digest(_only(b, name)):
                out.append(name)
        elif ta.rows != tb.rows:
            out.append(name)
    return out


def _only(state: State, name: str) -> State:
    one = State()
    one.tables[name] = state.tables[name]
    return one


def clock_columns(
    before: State, after: State, start: datetime, end: datetime, slack: timedelta = timedelta(seconds=2)
) -> list[str]:
    """`table.column` of every non-volatile timestamp or date a run wrote whose value falls in the run's
    own wall-clock window [start, end]: a tool that read the server's clock."""
    found: set[str] = set()
    for name, (upserts, _) in after.delta(before).items():
        info: TableInfo = after.tables[name].info
        for col in info.columns:
            kind = info.kind(col)
            if col in info.volatile or kind not in ("timestamp", "date"):
                continue
            at = info.columns.index(col)
            for row in upserts.values():
                if _in_window(row[at], kind, start - slack, end + slack):
                    found.add(f"{name}.{col}")
    return sorted(found)


def _in_window(value: object, kind: str, lo: datetime, hi: datetime) -> bool:
    if not isinstance(value, str):
        return False
    try:
        if kind == "date":
            return lo.date() <= datetime.fromisoformat(value).date() <= hi.date()
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return lo <= (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)) <= hi


# -- the checks ----------------------------------------------------------------------------------------


def check_seed(sb: Sandbox) -> list[Problem]:
    """Build the seed twice into fresh databases; their dumps must be equal, and every table in the diff
    must exist in the catalog with the primary key it declares."""
    names = [sb.dbs._tmp_name(), sb.dbs._tmp_name()]  # run-shaped names: a crash is cleaned as an orphan
    try:
        states = [sb.dbs.build_seed(n, sb.seed, sb.scale) for n in names]
        keys = _catalog_keys(sb, names[0])
    finally:
        for n in names:
            sb.dbs.drop(n)
    problems = [
        Problem("seed", t, "two builds of the seed differ in this table (the build is not deterministic)")
        for t in differing_tables(states[0], states[1])
    ]
    for name, info in sb.env.table_infos().items():
        if name not in keys:
            problems.append(Problem("primary_keys", name, "the build created no such table"))
        elif not keys[name]:
            problems.append(Problem("primary_keys", name, "no primary key: the diff cannot pair its rows"))
        elif keys[name] != info.primary_key:
            problems.append(
                Problem(
                    "primary_keys",
                    name,
                    f"declared primary key ({', '.join(info.primary_key)}) is not the catalog's "
                    f"({', '.join(keys[name])})",
                )
            )
    infos = sb.env.table_infos()
    problems += [Problem("record_links", "", p) for p in record_link_problems(sb.env.record_links, infos)]
    return problems


def _catalog_keys(sb: Sandbox, dbname: str) -> dict[str, tuple[str, ...]]:
    """table -> its primary key columns in key order (empty: none), for the tables of schema public."""
    import psycopg

    with psycopg.connect(sb.server.conninfo(dbname), autocommit=True) as conn:
        tables = conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')"
        ).fetchall()
        keys: dict[str, tuple[str, ...]] = {r[0]: () for r in tables}
        rows = conn.execute(
            "SELECT c.relname, a.attname FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON true "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum "
            "WHERE i.indisprimary AND n.nspname = 'public' ORDER BY c.relname, k.ord"
        ).fetchall()
    for table, column in rows:
        keys[table] = (*keys[table], column)
    return keys


def check_task(sb: Sandbox, prepared: PreparedTask) -> list[Problem]:
    """Replay, clock, read-only and isolation checks for one task, then its proof."""
    task = prepared.task
    problems: list[Problem] = []
    guarded = _guarded(sb, prepared.template)
    runs = []
    for _ in range(2):
        start = datetime.now(UTC)
        run = asyncio.run(scripted_run(sb, prepared, task.oracle, "oracle"))
        runs.append((run, start, datetime.now(UTC)))
    (first, s1, e1), (second, _, _) = runs
    assert first.after is not None and second.after is not None
    for table in differing_tables(first.after, second.after, masked=True):
        problems.append(
            Problem(
                "replay",
                task.id,
                f"two replays of the oracle differ in table {table} beyond its volatile columns "
                "(ids or values that are not a function of the template and the calls)",
            )
        )
    for col in clock_columns(prepared.before, first.after, s1, e1):
        problems.append(
            Problem(
                "clock",
                f"{task.id}: {col}",
                "holds the replay's own wall-clock time: pin the tools' clock or declare the column volatile",
            )
        )
    problems += _read_only(sb, prepared)
    problems += _isolation(sb, prepared, guarded)
    for row in prove_task(sb, prepared):
        if not row.ok:
            problems.append(
                Problem(
                    "prove",
                    f"{row.task}/{row.script}",
                    f"expected {row.expected}, got {row.got}; {row.detail}",
                )
            )
    return problems


def _read_only(sb: Sandbox, prepared: PreparedTask) -> list[Problem]:
    """Each script call of a tool declared read, on a fresh clone: the state must not change."""
    problems = []
    seen: set[tuple[str, str]] = set()
    for script in prepared.task.scripts().values():
        for step in script.steps:
            tool = prepared.tools.get(step.tool)
            if tool is None or tool.mutates or (step.tool, repr(step.args)) in seen:
                continue
            seen.add((step.tool, repr(step.args)))
            run = sb.dbs.create_run(prepared.template)
            try:
                with ToolBox(sb.dbs.tool_conninfo(run), {tool.name: tool}, prepared.acting_user_id) as box:
                    box.call(tool.name, step.args)
                after = dump_database(sb.server.conninfo(run), sb.env.table_infos().values())
            finally:
                sb.dbs.drop(run)
            changed = differing_tables(prepared.before, after)
            if changed:
                problems.append(
                    Problem(
                        "read_only",
                        tool.name,
                        f"declared read, but a call changed table(s) {', '.join(changed)} "
                        f"(task {prepared.task.id})",
                    )
                )
    return problems


@dataclass(frozen=True)
class _Guarded:
    sibling: str
    databases: dict[str, str]  # name -> digest it must keep


def _guarded(sb: Sandbox, template: Template) -> _Guarded:
    sibling = sb.dbs.create_run(template)
    seed = sb.seed_template()
    return _Guarded(
        sibling, {template.name: template.digest, seed.name: seed.digest, sibling: template.digest}
    )


def _isolation(sb: Sandbox, prepared: PreparedTask, guarded: _Guarded) -> list[Problem]:
    """After the task's replays: its template, the seed template and a sibling clone are as they were."""
    problems = []
    try:
        for name, digest in guarded.databases.items():
            got = sb.dbs.dump(name).digest()  # templates take no connections: read through a clone
            if got != digest:
                what = "a sibling run database" if name == guarded.sibling else f"database {name}"
                tools = sorted({s.tool for sc in prepared.task.scripts().values() for s in sc.steps})
                problems.append(
                    Problem(
                        "isolation",
                        f"{prepared.task.id} (tools {', '.join(tools)})",
                        f"its plans changed {what}: a tool reached beyond its run database",
                    )
                )
    finally:
        sb.dbs.drop(guarded.sibling)
    return problems


def check_environment(
    sb: Sandbox, tasks: Iterable[Task] | None = None, say: Callable[[str], None] = lambda message: None
) -> list[Problem]:
    """Every check on the sandbox's environment; an empty list means it conforms. `say` hears each step
    as it starts (the seed twice, then each task), so a long check is never silent."""
    say("the seed template against its recorded digest (rebuilt if changed out of band)")
    sb.checked_seed_digest()  # dumped now: a template changed out of band is rebuilt
    say("building the seed twice and comparing (keys, clock columns)")
    problems = check_seed(sb)
    if any(p.check == "seed" for p in problems):
        return problems  # nothing built on a seed that moves can be checked
    suite = list(tasks) if tasks is not None else load_suite(env=sb.env)
    if not suite:
        problems.append(Problem("prove", sb.env.name, "the suite has no tasks"))
    for number, task in enumerate(suite, 1):
        say(f"task {task.id} ({number}/{len(suite)}): oracle replays, read-only tools, isolation, proofs")
        try:
            prepared = prepare(sb, task)
        except UserError as exc:
            problems.append(Problem("prove", task.id, str(exc)))
            continue
        problems += check_task(sb, prepared)
    return problems
