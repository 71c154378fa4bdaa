"""Which environments exist and which one this process audits.

The built-in `agentrel-enterprise`, plus every entry point of the `agentrel.environments` group: a
package ships an environment by naming, in its own pyproject.toml,

    [project.entry-points."agentrel.environments"]
    my-crm = "my_crm.agentrel_env:ENVIRONMENT"

where ENVIRONMENT is an `Environment` instance (or a class or factory returning one) whose `name` is the
entry point's name. The selected environment is read from AGENTREL_ENV at call time, so `--env NAME`
(which sets it) also reaches the subprocesses an audit starts (tool servers, executors).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from importlib.metadata import entry_points

from agentrel.sandbox.environments.contract import Environment
from agentrel.sandbox.servers.base import SandboxError

ENV_VAR = "AGENTREL_ENV"
GROUP = "agentrel.environments"
DEFAULT = "agentrel-enterprise"


class UnknownEnvironment(SandboxError):
    """A name no installed environment answers to."""


def _builtin() -> dict[str, Callable[[], object]]:
    def enterprise() -> object:
        from agentrel.sandbox.environments.enterprise import ENVIRONMENT

        return ENVIRONMENT

    def tau2_airline() -> object:
        from agentrel.sandbox.environments.tau2.airline_env import ENVIRONMENT

        return ENVIRONMENT

    def tau2_retail() -> object:
        from agentrel.sandbox.environments.tau2.retail_env import ENVIRONMENT

        return ENVIRONMENT

    def tryton_erp() -> object:
        from agentrel.sandbox.environments.tryton.env import ENVIRONMENT

        return ENVIRONMENT

    found = {DEFAULT: enterprise, "tau2-airline": tau2_airline, "tau2-retail": tau2_retail}
    # The Tryton ERP needs the `tryton` extra (trytond and its modules): offered where it is installed.
    if importlib.util.find_spec("trytond") is not None:
        found["tryton-erp"] = tryton_erp
    return found


_loaded: dict[str, Environment] = {}
_extra: dict[str, Callable[[], object]] = {}  # registered in-process (tests, notebooks)


def register(name: str, factory: Callable[[], object]) -> None:
    """Make an environment selectable in this process without packaging it (tests, notebooks)."""
    _extra[name] = factory
    _loaded.pop(name, None)


def unregister(name: str) -> None:
    _extra.pop(name, None)
    _loaded.pop(name, None)


def _sources() -> dict[str, Callable[[], object]]:
    found: dict[str, Callable[[], object]] = {}
    for ep in entry_points(group=GROUP):
        found[ep.name] = ep.load
    return {**found, **_builtin(), **_extra}  # a built-in name cannot be shadowed by a package


def names() -> list[str]:
    return sorted(_sources())


def load(name: str) -> Environment:
    """The environment called `name`, loaded once per process."""
    if name in _loaded:
        return _loaded[name]
    sources = _sources()
    if name not in sources:
        known = ", ".join(sorted(sources))
        extra = " (it needs the tryton extra: pip install -e '.[tryton]' in the AgentRel checkout)"
        hint = extra if name == "tryton-erp" else ""
        raise UnknownEnvironment(
            f"no environment named {name!r}{hint} (installed: {known}); `agentrel env list`"
        )
    try:
        obj = sources[name]()
    except Exception as exc:  # a broken plugin package: say which, never a traceback
        raise SandboxError(f"environment {name!r} failed to load: {type(exc).__name__}: {exc}") from None
    if isinstance(obj, type) or (callable(obj) and not isinstance(obj, Environment)):
        obj = obj()
    if not isinstance(obj, Environment):
        raise SandboxError(f"environment {name!r} is a {type(obj).__name__}, not an agentrel Environment")
    if obj.name != name:
        raise SandboxError(f"environment entry point {name!r} loads an environment named {obj.name!r}")
    _loaded[name] = obj
    return obj


def current_name() -> str:
    return os.environ.get(ENV_VAR) or DEFAULT


def current() -> Environment:
    """The environment this process audits: AGENTREL_ENV, else the built-in."""
    return load(current_name())


def select(name: str) -> Environment:
    """Make `name` the current environment (checked first) for this process and its children."""
    env = load(name)
    os.environ[ENV_VAR] = name
    return env
