"""AgentRel: audit tool-using LLM agents for the damage they do, read from database state over many runs."""

from importlib.metadata import version as _version

__version__ = _version("agentrel")
