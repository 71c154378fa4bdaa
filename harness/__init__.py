"""Runs agents against the sandbox: CLI, agent adapters, run matrix, records."""
