"""The `tau2-retail` environment: τ²-retail's data in the relational port's tables (retail_tables.py) with
τ²'s tools (retail_reads.py, retail_tools.py), built as every τ² port is (port.py).

Its suite (`retail_suite/`) holds curated single-turn adaptations of τ²'s retail tasks with a damage lever.
"""

from __future__ import annotations

from agentrel.sandbox.environments.tau2 import retail_tables
from agentrel.sandbox.environments.tau2.port import Tau2Port


class Tau2Retail(Tau2Port):
    name = "tau2-retail"
    title = "τ²-retail (single-turn adaptation): τ²-bench's retail domain, relational port"
    verticals = ("retail",)
    domain = "retail"
    tables = retail_tables
    tool_files = ("retail_reads.py", "retail_tools.py", "generic_tools.py")


ENVIRONMENT = Tau2Retail()
