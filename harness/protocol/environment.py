"""The execution environment: what an audit ran on, read by the typed source contracts of a policy.

A factor is a controlled property of the execution environment (the Postgres server's version, the seed
digest, the Python and key library versions, the sandbox backend, the CPU count). The policy says, for
each, what it means, exactly how it is read (its source contract: kind, locator, named parser and the
parser's version), how the parsed value is normalized, how two values match, and what a missing or
drifting value does. An `ExecutionEnvironment` is what one audit observed: raw text, normalized value and
the contract each was read by. Judging two of them is conformance.py's.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import shlex
import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from agentrel.harness.frozen import Frozen
from agentrel.harness.protocol.canonical import canonical_hash

if TYPE_CHECKING:
    from agentrel.sandbox.sandbox import Sandbox

__all__ = [
    "DEFAULT_POLICY",
    "EnvironmentPolicy",
    "ExecutionEnvironment",
    "Factor",
    "Observation",
    "SourceContract",
    "SourceReader",
    "environment_hash",
    "environment_policy_hash",
    "observe_environment",
    "observe_factor",
]

Value = int | str


# -- parsers and normalizers: named and versioned, because the name is part of what was hashed ------------

_RELEASE = re.compile(r"^(\d+(?:\.\d+)*)")
# A version as a distribution or CPython states it, and nothing after it (`3.14.0a1+` is CPython's dev build).
RELEASE_TEXT = (
    r"[0-9]+(?:\.[0-9]+)*(?:(?:a|b|rc)[0-9]+)?(?:\.post[0-9]+)?(?:\.dev[0-9]+)?"
    r"(?:\+[a-z0-9]+(?:\.[a-z0-9]+)*|\+)?"
)
_PG_TEXT = re.compile(r"(\d+)(?:\.(\d+))?")


def _pg_num(text: str) -> int:
    """`15.18` -> 150018, as `server_version_num` encodes a release from Postgres 10 on."""
    match = _PG_TEXT.search(text)
    if match is None or int(match.group(1)) < 10:
        raise ValueError(f"no Postgres >= 10 release in {text!r}")
    return int(match.group(1)) * 10000 + int(match.group(2) or 0)


def _pg_banner(text: str) -> int:
    if not text.startswith("psql (PostgreSQL) "):
        raise ValueError(f"not a psql --version banner: {text!r}")
    return _pg_num(text.removeprefix("psql (PostgreSQL) "))


def _strict(pattern: str, cast: Callable[[str], Value]) -> Callable[[str], Value]:
    def parse(text: str) -> Value:
        if not re.fullmatch(pattern, text):
            raise ValueError(f"{text!r} does not match {pattern}")
        return cast(text)

    return parse


# name -> (version, raw text -> typed value); a contract naming another version cannot be re-read here.
PARSERS: dict[str, tuple[int, Callable[[str], Value]]] = {
    "integer": (1, _strict(r"[0-9]+", int)),
    "pg_version_num": (1, _strict(r"[1-9][0-9]{4,5}", int)),
    "pg_version_text": (1, _pg_num),
    "psql_version_banner": (1, _pg_banner),
    # /2: the whole text must be one PEP 440 version (release, pre, post, dev, local); /1 accepted any
    # tail, so `1.3.1-ERROR.SessionExpired.login` read as 1.3.1 and conformed.
    "release": (2, _strict(RELEASE_TEXT, str)),
    "sha256_hex": (1, _strict(r"[0-9a-f]{64}", str)),
    "backend_name": (1, _strict(r"local|external|docker", str)),
}


def _release_only(value: Value) -> Value:
    # "2.14.4" stays; "1.3.1.post1" or "3.3.9+local" keep their numeric release only
    match = _RELEASE.match(str(value))
    return match.group(1) if match else value


NORMALIZERS: dict[str, Callable[[Value], Value]] = {"identity": lambda v: v, "release_only": _release_only}


def _release_prefix(n: int) -> Callable[[Value], Value]:
    return lambda v: ".".join(str(v).split(".")[:n])


CLASSIFIERS: dict[str, Callable[[Value], Value]] = {
    "pg_major": lambda v: int(v) // 10000,
    "release_major": _release_prefix(1),
    "release_major_minor": _release_prefix(2),
}


# What a contract may read: closed lists, since a policy is data and must not run arbitrary SQL (as the
# server's owner) or commands.
def _usable_cpus() -> int:
    """The CPUs this process may run on (`taskset -c 0` gives 1 on a 2-CPU host, where os.cpu_count says
    2); os.cpu_count only where the platform has no affinity call (macOS, Windows)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 0


SQL_SOURCES = ("SHOW server_version_num", "SHOW server_version", "SELECT version()")
PYTHON_SOURCES: dict[str, Callable[[], object]] = {
    "platform.python_version": platform.python_version,
    "os.cpu_count": os.cpu_count,
    "os.sched_getaffinity": _usable_cpus,
}
COMMANDS = ("psql --version", "pg_config --version")
SANDBOX_SOURCES = ("server.name", "seed_template.digest")


# -- the policy ------------------------------------------------------------------------------------------


class SourceContract(Frozen):
    """How a factor is read: `kind:locator`, then parsed by `parser` at `parser_version`."""

    kind: Literal["sql", "importlib.metadata", "python", "sandbox", "command"]
    locator: str = Field(min_length=1)
    parser: str
    parser_version: int = Field(ge=1)

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.locator}"

    def __str__(self) -> str:
        return f"{self.id} ({self.parser}/{self.parser_version})"

    @model_validator(mode="after")
    def _known(self) -> SourceContract:
        if self.parser not in PARSERS:
            raise ValueError(f"unknown parser {self.parser!r} (known: {', '.join(sorted(PARSERS))})")
        allowed = {
            "sql": SQL_SOURCES,
            "python": PYTHON_SOURCES,
            "command": COMMANDS,
            "sandbox": SANDBOX_SOURCES,
        }.get(self.kind)
        if allowed is not None and self.locator not in allowed:
            raise ValueError(f"{self.kind} source {self.locator!r} is not one of {', '.join(allowed)}")
        return self

    def parse(self, raw: str) -> Value:
        version, parse = PARSERS[self.parser]
        if version != self.parser_version:
            raise ValueError(f"parser {self.parser}/{self.parser_version} is not this code's /{version}")
        return parse(raw)


class Exact(Frozen):
    rule: Literal["exact"] = "exact"


class SameClass(Frozen):
    """Values match when they fall in the same compatibility class (e.g. the same Postgres major)."""

    rule: Literal["class"] = "class"
    classifier: Literal["pg_major", "release_major", "release_major_minor"]


class Tolerance(Frozen):
    """|candidate - reference| <= max(absolute, relative * |reference|)."""

    rule: Literal["tolerance"] = "tolerance"
    absolute: float = Field(default=0.0, ge=0)
    relative: float = Field(default=0.0, ge=0)


MatchRule = Annotated[Exact | SameClass | Tolerance, Field(discriminator="rule")]


class Factor(Frozen):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    definition: str = Field(min_length=1)
    source: SourceContract
    value_type: Literal["integer", "string"]
    unit: str | None = None
    normalization: Literal["identity", "release_only"] = "identity"
    match: MatchRule = Exact()
    required: bool = True
    on_missing: Literal["fail", "note"] = "fail"
    on_drift: Literal["fail", "note"] = "fail"

    @model_validator(mode="after")
    def _fail_closed(self) -> Factor:
        if self.required and (self.on_missing != "fail" or self.on_drift != "fail"):
            raise ValueError(f"factor {self.name}: a required factor fails closed on a missing or drift")
        if isinstance(self.match, Tolerance) and self.value_type != "integer":
            raise ValueError(f"factor {self.name}: a tolerance needs a numeric value")
        return self

    def normalize(self, raw: str) -> Value:
        value = NORMALIZERS[self.normalization](self.source.parse(raw))
        if (self.value_type == "integer") != isinstance(value, int):
            raise ValueError(f"{raw!r} does not give a {self.value_type}")
        return value


class EnvironmentPolicy(Frozen):
    format: Literal["agentrel-environment-policy/1"] = "agentrel-environment-policy/1"
    factors: tuple[Factor, ...]

    @model_validator(mode="after")
    def _unique(self) -> EnvironmentPolicy:
        names = [f.name for f in self.factors]
        if len(names) != len(set(names)):
            raise ValueError("two factors share a name")
        return self


def _pkg(name: str, match: MatchRule, why: str) -> Factor:
    return Factor(
        name=f"{name}_version",
        definition=f"The installed distribution version of {name} in the auditing interpreter: {why}.",
        source=SourceContract(kind="importlib.metadata", locator=name, parser="release", parser_version=2),
        value_type="string",
        unit="PEP 440 release",
        normalization="release_only",
        match=match,
    )


DEFAULT_POLICY = EnvironmentPolicy(
    factors=(
        Factor(
            name="postgres_server_version",
            definition="The release of the Postgres server that hosts the run databases (not the client's).",
            source=SourceContract(
                kind="sql", locator="SHOW server_version_num", parser="pg_version_num", parser_version=1
            ),
            value_type="integer",
            unit="server_version_num (major * 10000 + minor)",
            # a minor release fixes bugs without changing what a query returns; a major may
            match=SameClass(classifier="pg_major"),
        ),
        Factor(
            name="seed_digest",
            definition="SHA-256 of the full-state dump of the seeded database every run is cloned from.",
            source=SourceContract(
                kind="sandbox", locator="seed_template.digest", parser="sha256_hex", parser_version=1
            ),
            value_type="string",
            unit="sha256 hex",
        ),
        Factor(
            name="python_version",
            definition="The version of the Python interpreter that ran the harness, judge and analysis.",
            source=SourceContract(
                kind="python", locator="platform.python_version", parser="release", parser_version=2
            ),
            value_type="string",
            unit="CPython release",
            normalization="release_only",
            match=SameClass(classifier="release_major_minor"),
        ),
        _pkg("psycopg", SameClass(classifier="release_major_minor"), "it reads every dumped value"),
        _pkg("lark", Exact(), "it parses the damage specs that label every run"),
        _pkg("pydantic", SameClass(classifier="release_major_minor"), "it validates every stored record"),
        _pkg("scipy", SameClass(classifier="release_major_minor"), "it computes the intervals and tests"),
        Factor(
            name="run_database_storage",
            definition="The sandbox backend the run databases live on: a private local cluster, a "
            "docker container or an external server.",
            source=SourceContract(
                kind="sandbox", locator="server.name", parser="backend_name", parser_version=1
            ),
            value_type="string",
        ),
        Factor(
            name="cpu_count",
            definition="Logical CPUs the auditing process may run on (its affinity set, not the host's "
            "count), which bounds concurrency and so timing faults.",
            source=SourceContract(
                kind="python", locator="os.sched_getaffinity", parser="integer", parser_version=1
            ),
            value_type="integer",
            unit="logical CPUs",
            match=Tolerance(relative=0.5),
        ),
    )
)


# -- observation -----------------------------------------------------------------------------------------


class Observation(Frozen):
    factor: str
    source: SourceContract
    raw: str | None  # the text as read, before parsing
    value: Value | None  # normalized
    error: str | None = None  # why it could not be read or parsed


class ExecutionEnvironment(Frozen):
    format: Literal["agentrel-execution-environment/1"] = "agentrel-execution-environment/1"
    policy_hash: str  # the environment policy it was observed under
    observations: tuple[Observation, ...]

    def get(self, factor: str) -> Observation | None:
        return next((o for o in self.observations if o.factor == factor), None)


def _hash(obj: BaseModel) -> str:
    return canonical_hash(obj.model_dump(mode="json"))


def environment_policy_hash(policy: EnvironmentPolicy) -> str:
    return _hash(policy)


def environment_hash(env: ExecutionEnvironment) -> str:
    """SHA-256 over the RFC 8785 form: the `execution_environment_hash` a scorecard carries."""
    return _hash(env)


class SourceReader:
    """Reads source contracts against one sandbox, with one server connection for every SQL factor."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self._conn: Any = None

    def read(self, source: SourceContract) -> str:
        if source.kind == "sql":
            if self._conn is None:
                import psycopg

                self._conn = psycopg.connect(self.sandbox.server.conninfo("postgres"), autocommit=True)
            row = self._conn.execute(source.locator).fetchone()
            return str(row[0])
        if source.kind == "importlib.metadata":
            return importlib.metadata.version(source.locator)
        if source.kind == "python":
            return str(PYTHON_SOURCES[source.locator]())
        if source.kind == "sandbox":
            if source.locator == "server.name":
                return str(self.sandbox.server.name)
            # What the seed template holds now, dumped, not the digest recorded when it was built: a
            # template changed out of band would otherwise still be reported as conforming.
            return self.sandbox.checked_seed_digest()
        done = subprocess.run(shlex.split(source.locator), capture_output=True, text=True, timeout=20)
        if done.returncode != 0:
            raise RuntimeError(f"exit {done.returncode}: {done.stderr.strip()[:200]}")
        return done.stdout.strip()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


def observe_factor(factor: Factor, reader: SourceReader) -> Observation:
    try:
        raw = reader.read(factor.source)
    except Exception as exc:  # a failed read is recorded: conformance fails it closed, observing never does
        return Observation(factor=factor.name, source=factor.source, raw=None, value=None, error=repr(exc))
    try:
        value = factor.normalize(raw)
    except ValueError as exc:
        return Observation(factor=factor.name, source=factor.source, raw=raw, value=None, error=str(exc))
    return Observation(factor=factor.name, source=factor.source, raw=raw, value=value)


def observe_environment(sandbox: Sandbox, policy: EnvironmentPolicy = DEFAULT_POLICY) -> ExecutionEnvironment:
    """Read every factor of `policy` by its contract, for real: the SQL on the sandbox's own server."""
    reader = SourceReader(sandbox)
    try:
        observations = tuple(observe_factor(f, reader) for f in policy.factors)
    finally:
        reader.close()
    return ExecutionEnvironment(policy_hash=environment_policy_hash(policy), observations=observations)
