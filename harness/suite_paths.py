"""Where the task suite is read from: the folder that holds `tasks/` and `damage_specs/`.

In a checkout both are top-level folders of the repository. A wheel has no repository beside it, so
pyproject.toml copies them into the package as `harness/_suite/`, which wins when present.
`AGENTREL_SUITE_DIR` names any other folder with the same layout (a task's `spec:` is relative to it).
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "AGENTREL_SUITE_DIR"
_HERE = Path(__file__).resolve().parent
PACKAGED = _HERE / "_suite"
CHECKOUT = _HERE.parent


def suite_root() -> Path:
    # Read at call time, not import time, so the override also reaches an already imported harness.
    override = os.environ.get(ENV)
    if override:
        return Path(override).expanduser().absolute()
    return PACKAGED if PACKAGED.is_dir() else CHECKOUT


def tasks_dir() -> Path:
    return suite_root() / "tasks"
