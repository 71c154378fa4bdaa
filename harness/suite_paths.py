"""Where the task suite is read from: the folder that holds `tasks/` and `damage_specs/`.

In a checkout both are top-level folders of the repository, linked from `agentrel/_suite/`; a wheel has
no repository beside it and carries them as `agentrel/_suite/`, so one path serves both installs.
`AGENTREL_SUITE_DIR` names any other folder with the same layout (a task's `spec:` is relative to it);
without it the suite is the current environment's (`--env`), the built-in's being the packaged one.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

ENV = "AGENTREL_SUITE_DIR"
PACKAGED = Path(str(resources.files("agentrel"))) / "_suite"


def suite_root() -> Path:
    """The override, else the current environment's suite (sandbox/environments/)."""
    # Read at call time, not import time, so the override also reaches an already imported harness.
    override = os.environ.get(ENV)
    if override:
        return Path(override).expanduser().absolute()
    from agentrel.sandbox.environments import current

    return current().suite_root()


def packaged_root() -> Path:
    """The built-in environment's suite: the checkout's folders, or the wheel's copy of them."""
    return PACKAGED


def tasks_dir() -> Path:
    return suite_root() / "tasks"
