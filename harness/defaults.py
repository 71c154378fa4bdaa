"""The audit's defaults, defined once: the CLI's options, the library's `agentrel.audit` and the harness
read them from here, so the three never drift apart."""

from __future__ import annotations

MODEL = "reference/stochastic"
K = 16  # runs per (model, task, condition) cell
TASKS = "*"
CONDITION = "clean"
CONCURRENCY = 4  # runs in flight
MAX_STEPS = 30  # the tool loop's step budget
MAX_ATTEMPTS = 3  # attempts per run when the provider or the harness fails
TEMPERATURE = 0.6
FAULT_TIMEOUT_S = 2.5  # fault runs: the tool client's transport timeout
