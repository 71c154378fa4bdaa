"""The built-in environment `agentrel-enterprise`: AgentRel's own 39-table ITSM/CSM sandbox behind the
contract, exactly as it was built before the contract existed (same schema, seed, tools and suite)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import psycopg

from agentrel.dsl.state import State, TableInfo
from agentrel.sandbox.defaults import PACKAGED_SUITE
from agentrel.sandbox.environments.contract import Environment
from agentrel.sandbox.environments.enterprise.seed.core import NOW
from agentrel.sandbox.tools.base import Tool


class Enterprise(Environment):
    name = "agentrel-enterprise"
    title = "AgentRel's enterprise ITSM/CSM sandbox (39 tables, 20 tasks)"
    verticals = ("itsm", "csm")

    clock = NOW  # the seed's "today", which every tool uses as now
    transactional_tools = True  # every tool writes through its call's connection (tools/)

    def versions(self) -> Mapping[str, str]:
        from agentrel.sandbox.environments.enterprise import seed as seedgen
        from agentrel.sandbox.environments.enterprise.schema import schema_digest

        return {"schema": schema_digest(), "seed_generator": seedgen.GENERATOR_VERSION}

    def build(self, conn: psycopg.Connection, seed: str, scale: int) -> State:
        from agentrel.sandbox.dump import load_state
        from agentrel.sandbox.environments.enterprise import seed as seedgen
        from agentrel.sandbox.environments.enterprise.schema import ddl, sorted_tables

        state = seedgen.generate(seed, scale)
        conn.execute(ddl())
        load_state(conn, state, [t.name for t in sorted_tables()])
        return state

    def table_infos(self) -> Mapping[str, TableInfo]:
        from agentrel.sandbox.environments.enterprise.schema import table_infos

        return table_infos()

    def tools(self) -> Mapping[str, Tool]:
        from agentrel.sandbox.environments.enterprise.tools import all_tools

        return all_tools()

    def acting_user(self, before: State, name: str) -> int | None:
        users = before.tables["users"]
        at = users.info.columns.index("user_name")
        found = next((key[0] for key, row in users.rows.items() if row[at] == name), None)
        return found if isinstance(found, int) else None

    def suite_root(self) -> Path:
        return PACKAGED_SUITE


ENVIRONMENT = Enterprise()
