"""Where a task suite is read from: the folder that holds `tasks/` and `damage_specs/`.

Each environment names its suite (`Environment.suite_root()`); the built-in's is the checkout's folders,
linked from `agentrel/_suite/`, or a wheel's copy of them, so one path serves both installs.
`AGENTREL_SUITE_DIR` names any other folder with the same layout (a task's `spec:` is relative to it).
Commands that read an audit after the fact (analyze, export, publish) take no `--env`: they read the
suite and injection catalogue of `recorded_environment(manifest)`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrel.sandbox.defaults import PACKAGED_SUITE

if TYPE_CHECKING:
    from agentrel.sandbox.environments.contract import Environment

ENV = "AGENTREL_SUITE_DIR"
PACKAGED = PACKAGED_SUITE  # the built-in environment owns where its suite is (sandbox/defaults.py)


def suite_root(env: Environment | None = None) -> Path:
    """The override, else `env`'s suite (None: the built-in's)."""
    # Read at call time, not import time, so the override also reaches an already imported harness.
    override = os.environ.get(ENV)
    if override:
        return Path(override).expanduser().absolute()
    return env.suite_root() if env is not None else PACKAGED


def packaged_root() -> Path:
    """The built-in environment's suite: the checkout's folders, or the wheel's copy of them."""
    return PACKAGED


def tasks_dir(env: Environment | None = None) -> Path:
    return suite_root(env) / "tasks"


def recorded_environment(manifest: Mapping[str, Any]) -> Environment:
    """The environment the runs were recorded on (the manifest names it; one from before environments
    names none: the built-in). With AGENTREL_SUITE_DIR set, the suite is that folder whatever the
    environment, and an environment this installation lacks falls back to the built-in; otherwise it is
    named here, in one line (a SandboxError)."""
    from agentrel.sandbox.environments import registry
    from agentrel.sandbox.servers.base import SandboxError

    environment = manifest.get("environment")
    name = environment.get("name") if isinstance(environment, dict) else None
    if not isinstance(name, str):
        return registry.default()
    if os.environ.get(ENV):
        try:
            return registry.load(name)
        except SandboxError:
            return registry.default()
    return registry.load(name)
