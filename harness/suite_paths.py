"""Where the task suite is read from: the folder that holds `tasks/` and `damage_specs/`.

In a checkout both are top-level folders of the repository, linked from `agentrel/_suite/`; a wheel has
no repository beside it and carries them as `agentrel/_suite/`, so one path serves both installs.
`AGENTREL_SUITE_DIR` names any other folder with the same layout (a task's `spec:` is relative to it);
without it the suite is the current environment's (`--env`), the built-in's being the packaged one.
Commands that read an audit after the fact (analyze, export, publish) take no `--env`: they read its
suite and injection catalogue inside `recorded_environment(manifest)`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from agentrel.sandbox.defaults import PACKAGED_SUITE

ENV = "AGENTREL_SUITE_DIR"
PACKAGED = PACKAGED_SUITE  # the built-in environment owns where its suite is (sandbox/defaults.py)


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


@contextlib.contextmanager
def recorded_environment(manifest: Mapping[str, Any]) -> Iterator[None]:
    """The environment the runs were recorded on (the manifest names it) made current for the block,
    unless AGENTREL_SUITE_DIR names another suite: its suite and injection catalogue are read inside."""
    from agentrel.sandbox.environments.registry import ENV_VAR, load

    environment = manifest.get("environment")
    name = environment.get("name") if isinstance(environment, dict) else None
    if not isinstance(name, str) or os.environ.get(ENV):
        yield
        return
    load(name)  # an environment this installation lacks is named here, in one line
    saved = os.environ.get(ENV_VAR)
    os.environ[ENV_VAR] = name
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(ENV_VAR, None)
        else:
            os.environ[ENV_VAR] = saved
