"""Environments: the contract a Postgres-backed system meets to be audited, and the installed ones."""

from agentrel.sandbox.environments.contract import Environment, table_info
from agentrel.sandbox.environments.registry import current, load, names, select

__all__ = ["Environment", "current", "load", "names", "select", "table_info"]
