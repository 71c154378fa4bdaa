"""Helpers the τ² ports' tests share: a port's suite with its environment selected, and its initial state
loaded into a fresh database of the test cluster."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import psycopg

from agentrel.dsl.state import State
from agentrel.sandbox.dump import dump_database, load_state
from agentrel.sandbox.environments import registry

PRIMARY_KEYS = (
    "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND i.indisprimary"
)


@contextmanager
def suite_of(name: str) -> Iterator[tuple[Any, list[Any]]]:
    """The environment `name` and its suite."""
    from agentrel.harness.tasks import load_suite

    env = registry.load(name)
    yield env, load_suite(env=env)


@contextmanager
def port_database(cluster: Any, name: str, tables: ModuleType, state: State) -> Iterator[tuple[str, str]]:
    """A fresh database `name` holding the port's DDL and `state` (COPY), dropped after: yields its
    dump's digest and the connection string."""
    with psycopg.connect(cluster.conninfo("postgres"), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8'")
    try:
        with psycopg.connect(cluster.conninfo(name)) as conn:
            conn.execute(tables.ddl())
            load_state(conn, state, tables.TABLES)
        yield dump_database(cluster.conninfo(name), tables.TABLES.values()).digest(), cluster.conninfo(name)
    finally:
        with psycopg.connect(cluster.conninfo("postgres"), autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
