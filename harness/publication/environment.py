"""Environment conformance: what an audit ran on, read by typed source contracts, judged by a policy.

A factor is a controlled property of the execution environment (the Postgres server's version, the seed
digest, the Python and key library versions, the sandbox backend, the CPU count). The policy says, for
each, what it means, exactly how it is read (its source contract: kind, locator, named parser and the
parser's version), how the parsed value is normalized, how two values match, and what a missing or
drifting value does. An `ExecutionEnvironment` is what one audit observed: raw text, normalized value and
the contract each was read by. `conform()` is pure: two environments and a policy in, a proof out.

Two readings of "the same" factor through different contracts (the server's `SHOW server_version` and
the client's `psql --version`) are not comparable, however close their values: the source check comes
before any match rule, so a tolerance can never paper over a change of instrument.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.errors import UsageError, UserError
from harness.publication.canonical import canonical_bytes, canonical_hash

if TYPE_CHECKING:
    from sandbox.sandbox import Sandbox

__all__ = [
    "DEFAULT_POLICY",
    "ENVIRONMENT_FILE",
    "EnvironmentConformanceProof",
    "EnvironmentPolicy",
    "ExecutionEnvironment",
    "Factor",
    "FactorVerdict",
    "Observation",
    "SourceContract",
    "SourceReader",
    "conform",
    "environment_hash",
    "environment_policy_hash",
    "observe_environment",
    "observe_factor",
    "read_execution_environment",
    "write_execution_environment",
]

ENVIRONMENT_FILE = "execution_environment.json"
Value = int | str


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# -- parsers and normalizers: named and versioned, because the name is part of what was hashed ------------

_RELEASE = re.compile(r"^(\d+(?:\.\d+)*)")
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
    "release": (1, _strict(r"[0-9]+(\.[0-9]+)*([-+._a-zA-Z0-9]*)", str)),
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
SQL_SOURCES = ("SHOW server_version_num", "SHOW server_version", "SELECT version()")
PYTHON_SOURCES: dict[str, Callable[[], object]] = {
    "platform.python_version": platform.python_version,
    "os.cpu_count": os.cpu_count,
}
COMMANDS = ("psql --version", "pg_config --version")
SANDBOX_SOURCES = ("server.name", "seed_template.digest")


# -- the policy ------------------------------------------------------------------------------------------


class SourceContract(_Frozen):
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


class Exact(_Frozen):
    rule: Literal["exact"] = "exact"


class SameClass(_Frozen):
    """Values match when they fall in the same compatibility class (e.g. the same Postgres major)."""

    rule: Literal["class"] = "class"
    classifier: Literal["pg_major", "release_major", "release_major_minor"]


class Tolerance(_Frozen):
    """|candidate - reference| <= max(absolute, relative * |reference|)."""

    rule: Literal["tolerance"] = "tolerance"
    absolute: float = Field(default=0.0, ge=0)
    relative: float = Field(default=0.0, ge=0)


MatchRule = Annotated[Exact | SameClass | Tolerance, Field(discriminator="rule")]


class Factor(_Frozen):
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


class EnvironmentPolicy(_Frozen):
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
        source=SourceContract(kind="importlib.metadata", locator=name, parser="release", parser_version=1),
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
                kind="python", locator="platform.python_version", parser="release", parser_version=1
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
            definition="Logical CPUs of the auditing host, which bounds concurrency and so timing faults.",
            source=SourceContract(kind="python", locator="os.cpu_count", parser="integer", parser_version=1),
            value_type="integer",
            unit="logical CPUs",
            match=Tolerance(relative=0.5),
        ),
    )
)


# -- observation -----------------------------------------------------------------------------------------


class Observation(_Frozen):
    factor: str
    source: SourceContract
    raw: str | None  # the text as read, before parsing
    value: Value | None  # normalized
    error: str | None = None  # why it could not be read or parsed


class ExecutionEnvironment(_Frozen):
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
            return self.sandbox.seed_template().digest
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


# -- conformance (pure) ----------------------------------------------------------------------------------

VerdictCode = Literal[
    "match",  # equal, in the same class, or within tolerance
    "missing",  # a required factor was not observed (or could not be read) on one side
    "missing_noted",  # an optional factor was not observed: recorded, not decisive
    "source_mismatch",  # read by another contract than the policy's: not comparable at all
    "not_reproducible",  # the recorded value does not follow from the recorded raw text
    "drift",  # observed on both sides by the policy's contract, and the match rule fails
    "drift_noted",  # as drift, on a factor whose policy only notes drift
]
FAILING: frozenset[str] = frozenset({"missing", "source_mismatch", "not_reproducible", "drift"})


class FactorVerdict(_Frozen):
    factor: str
    passed: bool
    code: VerdictCode
    reason: str
    reference: Value | None
    candidate: Value | None


class EnvironmentConformanceProof(_Frozen):
    format: Literal["agentrel-environment-conformance/1"] = "agentrel-environment-conformance/1"
    policy_hash: str
    reference_hash: str
    candidate_hash: str
    decision: Literal["conforming", "non_conforming"]
    reason_codes: tuple[str, ...]  # sorted, distinct; empty when conforming
    factors: tuple[FactorVerdict, ...]


def _usable(obs: Observation | None) -> bool:
    return obs is not None and obs.error is None and obs.raw is not None and obs.value is not None


def _matches(rule: Exact | SameClass | Tolerance, ref: Value, cand: Value) -> tuple[bool, str]:
    if isinstance(rule, Exact):
        return ref == cand, "exact"
    if isinstance(rule, SameClass):
        classify = CLASSIFIERS[rule.classifier]
        a, b = classify(ref), classify(cand)
        return a == b, f"{rule.classifier} {a!r} vs {b!r}"
    bound = max(rule.absolute, rule.relative * abs(float(ref)))
    return abs(float(cand) - float(ref)) <= bound, f"|difference| <= {bound:g}"


def _judge(factor: Factor, ref: Observation | None, cand: Observation | None) -> FactorVerdict:
    def verdict(code: VerdictCode, reason: str) -> FactorVerdict:
        return FactorVerdict(
            factor=factor.name,
            passed=code not in FAILING,
            code=code,
            reason=reason,
            reference=ref.value if ref else None,
            candidate=cand.value if cand else None,
        )

    absent = [side for side, o in (("reference", ref), ("candidate", cand)) if not _usable(o)]
    if absent:
        why = "; ".join(
            f"{side}: {(o.error if o else None) or 'not observed'}"
            for side, o in (("reference", ref), ("candidate", cand))
            if side in absent
        )
        return verdict("missing" if factor.on_missing == "fail" else "missing_noted", why)
    assert ref is not None and cand is not None
    # The instrument first: no match rule applies to values read by different contracts.
    for side, obs in (("reference", ref), ("candidate", cand)):
        if obs.source != factor.source:
            return verdict(
                "source_mismatch", f"{side} read by {obs.source}, the policy reads {factor.source}"
            )
    for side, obs in (("reference", ref), ("candidate", cand)):
        try:
            again: Value | None = factor.normalize(obs.raw or "")
        except ValueError:
            again = None
        if again != obs.value:
            return verdict("not_reproducible", f"{side} raw {obs.raw!r} gives {again!r}, not {obs.value!r}")
    assert ref.value is not None and cand.value is not None
    ok, how = _matches(factor.match, ref.value, cand.value)
    if ok:
        return verdict("match", how)
    return verdict("drift" if factor.on_drift == "fail" else "drift_noted", f"{how}: fails")


def conform(
    reference: ExecutionEnvironment,
    candidate: ExecutionEnvironment,
    policy: EnvironmentPolicy = DEFAULT_POLICY,
) -> EnvironmentConformanceProof:
    """Every factor of `policy`, judged on both environments; conforming only if none fails.

    An environment observed under another policy fails as a whole (`policy_mismatch`): its readings
    were taken to other rules, whatever the individual factors say."""
    digest = environment_policy_hash(policy)
    factors = tuple(_judge(f, reference.get(f.name), candidate.get(f.name)) for f in policy.factors)
    codes: set[str] = {v.code for v in factors if not v.passed}
    if reference.policy_hash != digest or candidate.policy_hash != digest:
        codes.add("policy_mismatch")
    return EnvironmentConformanceProof(
        policy_hash=digest,
        reference_hash=environment_hash(reference),
        candidate_hash=environment_hash(candidate),
        decision="non_conforming" if codes else "conforming",
        reason_codes=tuple(sorted(codes)),
        factors=factors,
    )


def failing_summary(proof: EnvironmentConformanceProof) -> str:
    """One clause naming the first failing factor, for one-line refusals."""
    bad = [v for v in proof.factors if not v.passed]
    if not bad:
        return "observed under another environment policy" if proof.reason_codes else "conforming"
    first = bad[0]
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    return f"{first.factor}: {first.code}: {first.reason}{more}"


# -- the file --------------------------------------------------------------------------------------------


def read_execution_environment(path: Path) -> ExecutionEnvironment:
    try:
        return ExecutionEnvironment.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise UserError(f"{path}: cannot read the execution environment: {exc.strerror}") from None
    except ValidationError as exc:
        from harness.yamlfile import field_problem

        raise UserError(f"{path}: not an execution environment: {field_problem(exc)}") from None


def write_execution_environment(
    results_dir: Path, env: ExecutionEnvironment, policy: EnvironmentPolicy = DEFAULT_POLICY
) -> Path:
    """Write `results_dir/execution_environment.json` atomically, or keep the one already there.

    A results directory describes one environment: a resume whose observation conforms to the recorded
    one under `policy` keeps the recorded file (first observation stands); one that does not conform is
    refused, since its runs would be pooled with runs made elsewhere."""
    path = results_dir / ENVIRONMENT_FILE
    if path.exists():
        old = read_execution_environment(path)
        if old == env:
            return path
        proof = conform(old, env, policy)
        if proof.decision != "conforming":
            raise UsageError(
                f"{path}: this host's environment does not conform to the one the recorded runs were made "
                f"in ({failing_summary(proof)}); use another --results directory"
            )
        return path
    results_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{ENVIRONMENT_FILE}.{os.getpid()}.tmp")
    with tmp.open("wb") as fh:
        fh.write(canonical_bytes(env.model_dump(mode="json")))
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)
    dir_fd = os.open(results_dir, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return path
