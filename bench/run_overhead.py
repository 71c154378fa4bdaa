"""Per-run sandbox overhead: template clone vs the naive rebuild, side by side in one run.

template path: CREATE DATABASE ... TEMPLATE (clone) + a run's writes + post-run full-state dump + DROP.
               The pre-run dump of the template is computed once and reused by digest; the post-run
               dump re-reads the tables the run wrote (sandbox/tracking.py) and takes the rest from it.
naive path:    CREATE DATABASE (empty) + schema + the seed loaded from a plain SQL script of one INSERT
               per row (what `pg_dump --inserts` or a hand-written seed.sql gives) + the same writes +
               a full dump + DROP,
               on the same storage (the RAM-backed run tablespace when there is one).

docker path:   the template path again, on the docker backend (AGENTREL_DOCKER_IMAGE, the image
               `agentrel sandbox image build` printed): the same clone inside the same Postgres, reached
               through the socket in the container's bind mount. Without that variable it prints `-`.

Runs on the user's own sandbox (AGENTREL_HOME or .agentrel/), the overhead a user really gets.
per environment: the template path again on each other environment (ENV_WRITES): τ²-airline, τ²-retail.
Last line: per_run_ms=<template> naive_ms=<naive> ratio=<naive/template> docker_per_run_ms=<docker>
           tau2_airline_per_run_ms=<the template path on tau2-airline>
           tau2_retail_per_run_ms=<the template path on tau2-retail>
           tryton_per_run_ms=<clone + Tryton server start + dump + drop on tryton-erp, the server a
           standby started during the previous run; `-` without the tryton extra>
           tryton_cold_per_run_ms=<the same with the server started on the run's first call>
           tryton_template_build_s=<its template's build, once per fingerprint; 0 if cached>
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentrel.dsl.state import Value
from agentrel.sandbox.dump import dump_database, dump_run
from agentrel.sandbox.environments.enterprise.schema import ddl, sorted_tables, table_infos
from agentrel.sandbox.environments.enterprise.seed import generate
from agentrel.sandbox.sandbox import Sandbox
from agentrel.sandbox.servers import SandboxError, Server
from agentrel.sandbox.servers.local import LocalCluster

RUNS = 20
# What a typical run writes: one update, one insert (as an agent resolving an incident with a note).
RUN_WRITES = (
    "UPDATE incidents SET state = 'resolved' WHERE id = 7;"
    "INSERT INTO work_notes (record_table, record_id, author_id, note, created_at) "
    "VALUES ('incidents', 7, 1, 'resolved', '2026-03-02T09:00:00Z');"
)
NAIVE_RUNS = 3
# The same typical run on each other environment (sandbox/environments/): a cancellation on τ²-airline
# (one reservation updated, one refund line inserted) and on τ²-retail (one order updated, one refund line
# inserted, as cancel_pending_order writes them for an order paid by card).
ENV_WRITES = {
    "tau2-airline": "UPDATE reservations SET status = 'cancelled' WHERE reservation_id = 'NQNU5R';"
    "INSERT INTO reservation_payments (reservation_id, ordinal, payment_id, amount) "
    "VALUES ('NQNU5R', 1, 'credit_card_4959530', -6178.00);",
    "tau2-retail": "UPDATE orders SET status = 'cancelled', cancel_reason = 'no longer needed' "
    "WHERE order_id = '#W3482034';"
    "INSERT INTO order_payments (order_id, ordinal, transaction_type, amount, payment_method_id) "
    "VALUES ('#W3482034', 1, 'refund', 1058.86, 'credit_card_3631888');",
}


def literal(v: Value) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    return "'" + v.replace("'", "''") + "'"


def seed_sql() -> str:
    state = generate()
    parts = [ddl()]
    for table in sorted_tables():
        ts = state.tables[table.name]
        cols = ", ".join(f'"{c}"' for c in ts.info.columns)
        for key in sorted(ts.rows):
            values = ", ".join(literal(v) for v in ts.rows[key])
            parts.append(f'INSERT INTO "{table.name}" ({cols}) VALUES ({values});')
        if ts.info.primary_key == ("id",):  # as pg_dump does: sequences continue after the data
            seq = f"pg_get_serial_sequence('{table.name}', 'id')"
            parts.append(f'SELECT setval({seq}, (SELECT MAX(id) FROM "{table.name}"));')
    return "\n".join(parts)


def naive_run(sb: Sandbox, name: str, script: str) -> None:
    space = sb.dbs.run_tablespace()  # the same storage as run databases: only the loading differs
    clause = sql.SQL(" TABLESPACE {}").format(sql.Identifier(space)) if space else sql.SQL("")
    sb.dbs.drop(name)
    with sb.dbs.admin() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}{}").format(sql.Identifier(name), clause))
    try:
        with psycopg.connect(sb.server.conninfo(name), autocommit=True) as conn:
            conn.execute(script)
            conn.execute(RUN_WRITES)
        dump_database(sb.server.conninfo(name), table_infos().values())
    finally:
        sb.dbs.drop(name)


def template_path(
    server: Server, env: str | None = None, writes: str = RUN_WRITES
) -> tuple[Sandbox, dict[str, list[float]], list[float]]:
    """RUNS runs of clone + writes + post-run dump + drop; per part and per run, in milliseconds."""
    from agentrel.sandbox.environments import load

    server.ensure_running()
    sb = Sandbox(server, env=load(env) if env else None)
    tpl = sb.seed_template()
    before = sb.dbs.template_state(tpl)
    parts: dict[str, list[float]] = {"clone": [], "dump": [], "drop": []}
    for _ in range(RUNS):
        t0 = time.perf_counter()
        name = sb.dbs.create_run(tpl)
        clone = time.perf_counter() - t0
        with psycopg.connect(server.conninfo(name), autocommit=True) as conn:
            conn.execute(writes)  # the agent's time, not the sandbox's: outside the clock
        t1 = time.perf_counter()
        dump_run(server.conninfo(name), before)
        t2 = time.perf_counter()
        sb.dbs.drop(name)
        t3 = time.perf_counter()
        for part, seconds in zip(parts, (clone, t2 - t1, t3 - t2), strict=True):
            parts[part].append(seconds * 1000)
    return sb, parts, [sum(p) for p in zip(*parts.values(), strict=True)]


TRYTON_RUNS = 5


def tryton_path(server: Server) -> tuple[str, str, str, str]:
    """(warm median per-run ms, cold median per-run ms, template build s, a line): a run on tryton-erp
    is a clone, its Tryton server started and answering the clerk's first call, a dump and a drop (the
    server exits with its database). Warm: the server is the standby started during the previous run
    (its imports done); cold: started on the run's first call, as without a standby. The template's
    build (minutes, once per fingerprint) is reported apart."""
    import importlib.util

    if importlib.util.find_spec("trytond") is None:
        return (
            "-",
            "-",
            "-",
            "tryton path: not measured (the tryton extra: pip install -e '.[tryton]' in the checkout)",
        )
    from agentrel.sandbox.environments import load
    from agentrel.sandbox.environments.tryton import server as tryton_server
    from agentrel.sandbox.environments.tryton import tools as tryton_tools
    from agentrel.sandbox.tools.base import ToolContext

    sb = Sandbox(server, env=load("tryton-erp"))
    t0 = time.perf_counter()
    tpl = sb.seed_template()
    build_s = time.perf_counter() - t0
    before = sb.dbs.template_state(tpl)
    clerk = sb.env.acting_user(before, "clerk")
    assert clerk is not None

    def one_run() -> tuple[float, float, float, float]:
        t0 = time.perf_counter()
        name = sb.dbs.create_run(tpl)
        t1 = time.perf_counter()
        with psycopg.connect(sb.dbs.tool_conninfo(name), autocommit=True) as conn:
            tryton_tools.client(ToolContext(conn, clerk)).call("model.ir.date.today", [])
        t2 = time.perf_counter()
        dump_run(server.conninfo(name), before)
        t3 = time.perf_counter()
        sb.dbs.drop(name)
        tryton_server.wait_gone(name)
        t4 = time.perf_counter()
        return t1 - t0, t2 - t1, t3 - t2, t4 - t3

    lines, medians = [], {}
    for mode in ("cold", "warm"):
        tryton_server.KEEP_STANDBY = mode == "warm"
        if mode == "warm":
            one_run()  # leaves the first standby behind
        parts: dict[str, list[float]] = {"clone": [], "server": [], "dump": [], "drop": []}
        for _ in range(TRYTON_RUNS):
            for part, seconds in zip(parts, one_run(), strict=True):
                parts[part].append(seconds * 1000)
        medians[mode] = statistics.median(sum(p) for p in zip(*parts.values(), strict=True))
        breakdown = ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in parts.items())
        lines.append(f"{mode} {medians[mode]:.1f} ms ({breakdown} ms)")
    tryton_server.KEEP_STANDBY = True
    line = (
        f"tryton path: {before.row_count()} rows; median over {TRYTON_RUNS} runs: {'; '.join(lines)}; "
        f"template {'built in' if build_s > 5 else 'cached,'} {build_s:.1f} s"
    )
    return f"{medians['warm']:.1f}", f"{medians['cold']:.1f}", f"{build_s if build_s > 5 else 0:.0f}", line


def docker_path() -> tuple[str, str]:
    """(median per-run ms, a line about it), or ('-', why not) when the docker backend is unavailable."""
    image = os.environ.get("AGENTREL_DOCKER_IMAGE")
    if not image:
        return "-", "docker path: not measured (set AGENTREL_DOCKER_IMAGE to a built image)"
    from agentrel.sandbox.servers.docker import DockerServer

    try:
        _, parts, runs = template_path(DockerServer(image))
    except SandboxError as exc:
        return "-", f"docker path: not measured ({exc})"
    breakdown = ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in parts.items())
    median = statistics.median(runs)
    return f"{median:.1f}", f"docker path: median {median:.1f} ms over {RUNS} runs ({breakdown} ms)"


def main() -> None:
    server = LocalCluster()
    sb, parts, template_ms = template_path(server)
    tpl = sb.seed_template()
    docker_ms, docker_line = docker_path()

    script = seed_sql()
    naive_ms = []
    for i in range(NAIVE_RUNS):
        t0 = time.perf_counter()
        naive_run(sb, f"agentrel_run_naive_{i}", script)
        naive_ms.append((time.perf_counter() - t0) * 1000)

    per_env = {}
    for env, writes in ENV_WRITES.items():
        esb, eparts, eruns = template_path(server, env, writes)
        etpl = esb.seed_template()
        per_env[env] = statistics.median(eruns)
        ebreak = ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in eparts.items())
        rows = esb.dbs.template_state(etpl).row_count()
        median = per_env[env]
        print(f"{env}: {rows} rows; template path median {median:.1f} ms over {RUNS} runs ({ebreak} ms)")

    tryton_ms, tryton_cold_ms, tryton_build_s, tryton_line = tryton_path(server)
    print(tryton_line)

    per_run, naive_median = statistics.median(template_ms), statistics.median(naive_ms)
    breakdown = ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in parts.items())
    print(f"data directory: {server.datadir}; {tpl.name}, {sb.dbs.template_state(tpl).row_count()} rows")
    print(f"template path: median {per_run:.1f} ms over {RUNS} runs ({breakdown} ms)")
    print(f"naive path: median {naive_median:.1f} ms over {NAIVE_RUNS} runs")
    print(docker_line)
    print(
        f"per_run_ms={per_run:.1f} naive_ms={naive_median:.1f} ratio={naive_median / per_run:.1f} "
        f"docker_per_run_ms={docker_ms} "
        + " ".join(f"{env.replace('-', '_')}_per_run_ms={ms:.1f}" for env, ms in per_env.items())
        + f" tryton_per_run_ms={tryton_ms} tryton_cold_per_run_ms={tryton_cold_ms}"
        + f" tryton_template_build_s={tryton_build_s}"
    )


if __name__ == "__main__":
    main()
