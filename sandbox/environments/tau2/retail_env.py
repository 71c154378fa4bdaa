"""The `tau2-retail` environment: τ²-retail's data, read out of the pinned wheel at build time, in the
relational port's tables (retail_tables.py) with τ²'s tools (retail_reads.py, retail_tools.py).

Its suite (`retail_suite/`) holds curated single-turn adaptations of τ²'s retail tasks with a damage
lever. A simulated-user participant (τ²'s multi-turn setting) is not built: the seam for it is the agent
side, not this environment.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agentrel.dsl.state import State, TableInfo
from agentrel.sandbox.environments.contract import Environment
from agentrel.sandbox.environments.tau2 import retail_tables, wheel

if TYPE_CHECKING:
    import psycopg

    from agentrel.sandbox.tools.base import Tool

HERE = Path(__file__).parent
TOOL_FILES = ("retail_reads.py", "retail_tools.py", "generic_tools.py")


class Tau2Retail(Environment):
    name = "tau2-retail"
    title = "τ²-retail (single-turn adaptation): τ²-bench's retail domain, relational port"
    verticals = ("retail",)
    clock = None  # no retail tool writes a time, and no column reads the server's clock

    def versions(self) -> Mapping[str, str]:
        return {
            "wheel": f"{wheel.PROJECT}=={wheel.VERSION} sha256:{wheel.SHA256}",
            "tables": hashlib.sha256(retail_tables.ddl().encode()).hexdigest(),
            "tools": hashlib.sha256(b"".join((HERE / f).read_bytes() for f in TOOL_FILES)).hexdigest(),
        }

    def build(self, conn: psycopg.Connection, seed: str, scale: int) -> State:
        from agentrel.sandbox.dump import load_state

        state = self.initial_state()
        conn.execute(retail_tables.ddl())
        load_state(conn, state, retail_tables.TABLES)
        return state

    def initial_state(self) -> State:
        return retail_tables.to_state(wheel.read_json(wheel.fetch(), "retail", "db.json"))

    def table_infos(self) -> Mapping[str, TableInfo]:
        return retail_tables.TABLES

    def tools(self) -> Mapping[str, Tool]:
        from agentrel.sandbox.environments.tau2.retail_tools import TOOLS

        return TOOLS

    def acting_user(self, before: State, name: str) -> int | None:
        return 0  # the agent is the store's service agent: no row of the diff is its identity

    def suite_root(self) -> Path:
        return HERE / "retail_suite"


ENVIRONMENT = Tau2Retail()
