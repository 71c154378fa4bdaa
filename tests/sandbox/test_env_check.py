"""`agentrel env check` on the worked example (examples/refund-desk) and on copies of it each broken in
one way: every check fires on the environment built to break it, naming its table, task or tool, and
stays quiet on the faithful one."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "refund-desk"
sys.path.insert(0, str(EXAMPLE))

import refund_desk  # noqa: E402

from agentrel.sandbox.environments import registry  # noqa: E402
from agentrel.sandbox.tools.base import Tool, ToolContext  # noqa: E402


def _variant(name: str, **overrides: Any) -> refund_desk.RefundDesk:
    """A copy of the refund desk under another name (so its own templates) with some parts replaced."""
    cls = type(f"Broken_{name.replace('-', '_')}", (refund_desk.RefundDesk,), {"name": name, **overrides})
    return cls()


def _with_tool(name: str, handler: Any, reversibility: str | None = None) -> dict[str, Tool]:
    tools = dict(refund_desk.TOOLS)
    old = tools[name]
    tools[name] = Tool(old.name, old.description, old.parameters, reversibility or old.reversibility, handler)
    return tools


@pytest.fixture
def check(cluster, agentrel_home) -> Iterator[Any]:
    """check(env) -> the problems `agentrel env check` finds, on the test cluster."""
    from agentrel.harness.env_check import check_environment
    from agentrel.harness.tasks import load_suite
    from agentrel.sandbox.sandbox import Sandbox

    registered: list[str] = []

    def run(env: refund_desk.RefundDesk, say: Any = None) -> list[Any]:
        registry.register(env.name, lambda: env)
        registered.append(env.name)
        sb = Sandbox(cluster, home=agentrel_home, env=env)
        return check_environment(sb, load_suite(env=env), **({"say": say} if say else {}))

    yield run
    for name in registered:
        registry.unregister(name)


def _named(problems: list[Any], check: str) -> list[str]:
    return [p.subject for p in problems if p.check == check]


def test_the_worked_example_conforms(check):
    said: list[str] = []
    assert check(refund_desk.ENVIRONMENT, said.append) == []
    # Never silent for minutes: each step is said as it starts, the seed first, then every task.
    assert said[0].startswith("the seed template against") and said[1].startswith("building the seed twice")
    tasks = [m for m in said if m.startswith("task ")]
    assert tasks and tasks[-1].split(" (")[1].startswith(f"{len(tasks)}/{len(tasks)})")


def test_a_seed_that_moves_between_builds_is_named_by_table(check):
    def build(self: Any, conn: psycopg.Connection, seed: str, scale: int) -> None:
        refund_desk.RefundDesk.build(self, conn, seed, scale)
        conn.execute("UPDATE customers SET email = md5(random()::text) || '@example.com' WHERE id = 2")

    problems = check(_variant("broken-seed", build=build))
    assert _named(problems, "seed") == ["customers"]


def test_a_table_without_a_primary_key_is_named(check):
    schema = refund_desk.SCHEMA.replace("id serial PRIMARY KEY", "id serial NOT NULL")
    assert schema != refund_desk.SCHEMA

    def build(self: Any, conn: psycopg.Connection, seed: str, scale: int) -> None:
        conn.execute(schema)
        conn.execute(refund_desk.SEED)
        conn.execute("SELECT setval('refunds_id_seq', 100, false)")

    problems = check(_variant("broken-keys", build=build))
    assert _named(problems, "primary_keys") == ["refunds"]


def test_a_declared_key_that_is_not_the_catalogs_is_named(check):
    tables = dict(refund_desk.TABLES)
    info = tables["customers"]
    tables["customers"] = type(info)(info.name, info.columns, ("email",), info.volatile, info.kinds)
    problems = check(_variant("broken-declared-key", table_infos=lambda self: tables))
    assert _named(problems, "primary_keys") == ["customers"]


def test_an_oracle_whose_replays_differ_is_named_by_task(check):
    def refund(ctx: ToolContext, args: dict[str, Any]) -> Any:
        out = refund_desk.refund_order(ctx, args)
        ctx.conn.execute("UPDATE refunds SET reason = reason || ' ' || md5(random()::text)")
        return out

    problems = check(_variant("broken-replay", tools=lambda self: _with_tool("refund_order", refund)))
    assert _named(problems, "replay") == ["refund-cancelled-only"]


def test_a_tool_that_reads_the_server_clock_is_named_by_column(check):
    def refund(ctx: ToolContext, args: dict[str, Any]) -> Any:
        out = refund_desk.refund_order(ctx, args)
        ctx.conn.execute("UPDATE refunds SET created_at = now()")
        return out

    problems = check(_variant("broken-clock", tools=lambda self: _with_tool("refund_order", refund)))
    assert _named(problems, "clock") == ["refund-cancelled-only: refunds.created_at"]


def test_the_server_clock_in_a_volatile_column_is_not_a_clock_problem(check):
    """The other half of the clock rule: what the clock touches may be declared volatile instead."""

    def refund(ctx: ToolContext, args: dict[str, Any]) -> Any:
        out = refund_desk.refund_order(ctx, args)
        ctx.conn.execute("UPDATE orders SET updated_at = now() WHERE id = %s", (args["order_id"],))
        return out

    problems = check(_variant("volatile-clock", tools=lambda self: _with_tool("refund_order", refund)))
    assert problems == []


def test_a_read_tool_that_writes_is_named(check):
    def get_order(ctx: ToolContext, args: dict[str, Any]) -> Any:
        ctx.conn.execute("UPDATE customers SET name = name || '.' WHERE id = 1")
        return refund_desk.get_order(ctx, args)

    problems = check(_variant("broken-read", tools=lambda self: _with_tool("get_order", get_order)))
    assert _named(problems, "read_only") == ["get_order"]


def test_a_tool_that_reaches_another_database_is_named(check, cluster):
    """The tool writes, with the owner's credentials, into the database its run was cloned from (which
    takes no connections until the owner opens it again)."""
    target: dict[str, str] = {}

    def list_orders(ctx: ToolContext, args: dict[str, Any]) -> Any:
        with psycopg.connect(cluster.conninfo("postgres"), autocommit=True) as owner:
            owner.execute(f'ALTER DATABASE "{target["db"]}" WITH ALLOW_CONNECTIONS true')
        with psycopg.connect(cluster.conninfo(target["db"]), autocommit=True) as other:
            other.execute("UPDATE customers SET email = 'leaked@example.com' WHERE id = 2")
        return refund_desk.list_orders(ctx, args)

    env = _variant("broken-isolation", tools=lambda self: _with_tool("list_orders", list_orders))
    from agentrel.sandbox.sandbox import Sandbox

    target["db"] = Sandbox(cluster, env=env).seed_template().name
    problems = check(env)
    assert _named(problems, "isolation") == [
        "refund-cancelled-only (tools get_order, list_orders, refund_order)"
    ]
    Sandbox(cluster, env=env).dbs.drop(target["db"])  # the template it wrote into is spoiled


def test_a_suite_whose_oracle_does_not_pass_fails_prove(check):
    def refund(ctx: ToolContext, args: dict[str, Any]) -> Any:
        return {"refund_id": 100, "amount": str(args["amount"])}  # says it refunded, wrote nothing

    problems = check(_variant("broken-prove", tools=lambda self: _with_tool("refund_order", refund)))
    assert "refund-cancelled-only/oracle" in _named(problems, "prove")
