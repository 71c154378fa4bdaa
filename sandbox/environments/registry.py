"""Which environments exist, each loaded once per process as a value.

The built-in `agentrel-enterprise`, plus every entry point of the `agentrel.environments` group: a
package ships an environment by naming, in its own pyproject.toml,

    [project.entry-points."agentrel.environments"]
    my-crm = "my_crm.agentrel_env:ENVIRONMENT"

where ENVIRONMENT is an `Environment` instance (or a class or factory returning one) whose `name` is the
entry point's name.

An environment is a value handed down (the CLI's `--env` → `Sandbox(env=)` → suite, prices, catalogue):
nothing in this process reads or writes AGENTREL_ENV. A child process that needs the environment (a
tool server, a Ray actor) is given its name (`child_environ`, or its spec) and its entry point builds
the value again (`from_environ`); the CLI's `--env` option takes AGENTREL_ENV as its default.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
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
        from agentrel.sandbox.environments.enterprise.env import ENVIRONMENT

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


def default() -> Environment:
    """The built-in environment: what an audit runs on when it names none."""
    return load(DEFAULT)


def child_environ(name: str, base: Mapping[str, str]) -> dict[str, str]:
    """`base` (a child process's environment variables) naming the environment `name`, for a child that
    builds it again at its entry point (`from_environ`): the only place AGENTREL_ENV is written."""
    return {**base, ENV_VAR: name}


def from_environ(environ: Mapping[str, str]) -> Environment:
    """The environment a child process was started for (`child_environ`), else the built-in. Only entry
    points call this, with their own `os.environ`; library code is handed the value."""
    return load(environ.get(ENV_VAR) or DEFAULT)
