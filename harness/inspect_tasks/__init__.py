"""AgentRel's tasks as Inspect AI tasks (the `inspect` extra: `pip install -e '.[inspect]'` in the checkout).

`inspect eval agentrel/<task id> --model M` runs one task: its tools are served by AgentRel's MCP face
(`agentrel mcp serve --task ID`, one process and one fresh run database per sample and epoch), the
model drives them through Inspect's own tool loop, and the score is AgentRel's verdict read from the
state diff when the face shuts down. A run with no verdict scores "INVALID", a value of its own that
every metric counts beside its rates, never Inspect's unscored NaN.

Inspect finds the tasks through the `inspect_ai` entry point (`harness.inspect_tasks.registry`).
"""

from agentrel.harness.inspect_tasks.score import INVALID, state_diff_verdict
from agentrel.harness.inspect_tasks.tasks import NAMESPACE, agentrel_task

__all__ = ["INVALID", "NAMESPACE", "agentrel_task", "state_diff_verdict"]
