"""Environments: the contract a Postgres-backed system meets to be audited, and the installed ones."""

from agentrel.sandbox.environments.contract import Environment, RecordLink, table_info
from agentrel.sandbox.environments.registry import default, load, names

__all__ = ["Environment", "RecordLink", "default", "load", "names", "table_info"]
