"""Environment conformance: real reads on the test cluster, and known-answer conformance fixtures."""

from __future__ import annotations

import hashlib

import pytest
from pydantic import ValidationError

from agentrel.harness.errors import UsageError
from agentrel.harness.protocol.conformance import (
    conform,
    read_execution_environment,
    write_execution_environment,
)
from agentrel.harness.protocol.environment import (
    DEFAULT_POLICY,
    EnvironmentPolicy,
    ExecutionEnvironment,
    Factor,
    Observation,
    SourceContract,
    SourceReader,
    Tolerance,
    environment_hash,
    environment_policy_hash,
    observe_environment,
    observe_factor,
)
from agentrel.harness.results import layout

SERVER_TEXT = SourceContract(
    kind="sql", locator="SHOW server_version", parser="pg_version_text", parser_version=1
)
CLIENT_BANNER = SourceContract(
    kind="command", locator="psql --version", parser="psql_version_banner", parser_version=1
)


def _factor(name: str) -> Factor:
    return next(f for f in DEFAULT_POLICY.factors if f.name == name)


def _policy_with(factor: Factor) -> EnvironmentPolicy:
    return EnvironmentPolicy(
        factors=tuple(factor if f.name == factor.name else f for f in DEFAULT_POLICY.factors)
    )


def _env(policy: EnvironmentPolicy = DEFAULT_POLICY, **raw: str | None) -> ExecutionEnvironment:
    """An environment as if observed under `policy`: every factor from a plausible raw text, or
    `raw[name]` (None leaves the factor out)."""
    plausible = {
        "postgres_server_version": "150018",
        "seed_digest": "ab" * 32,
        "python_version": "3.11.7",
        "psycopg_version": "3.3.9",
        "lark_version": "1.3.1",
        "pydantic_version": "2.14.4",
        "scipy_version": "1.17.1",
        "run_database_storage": "local",
        "cpu_count": "4",
    }
    values = {**plausible, **raw}
    observations = tuple(
        Observation(
            factor=f.name, source=f.source, raw=values[f.name], value=f.normalize(values[f.name] or "")
        )
        for f in policy.factors
        if values[f.name] is not None
    )
    return ExecutionEnvironment(policy_hash=environment_policy_hash(policy), observations=observations)


def _verdict(proof, factor: str):
    return next(v for v in proof.factors if v.factor == factor)


# -- real reads ---------------------------------------------------------------------------------------


def test_a_real_observation_reads_every_factor_by_its_contract(sandbox):
    env = observe_environment(sandbox)
    assert [o.factor for o in env.observations] == [f.name for f in DEFAULT_POLICY.factors]
    assert all(o.error is None for o in env.observations), [o.error for o in env.observations]
    pg = env.get("postgres_server_version")
    assert pg is not None and pg.source.id == "sql:SHOW server_version_num"
    assert isinstance(pg.value, int) and pg.value >= 120000 and pg.raw == str(pg.value)
    assert env.get("seed_digest").value == sandbox.seed_template().digest
    assert env.get("run_database_storage").value == "local"
    assert conform(env, env).decision == "conforming"
    assert environment_hash(env) == environment_hash(observe_environment(sandbox))


def test_the_same_factor_read_by_two_sources_is_rejected_before_any_tolerance(sandbox):
    """The server's `SHOW server_version` and the client's `psql --version`: both read for real, both
    plausible, here even equal in value, and still not comparable."""
    base = _factor("postgres_server_version")
    lenient = base.model_copy(update={"source": SERVER_TEXT, "match": Tolerance(absolute=10**6)})
    policy = _policy_with(lenient)
    reader = SourceReader(sandbox)
    try:
        server = observe_factor(lenient, reader)
        client = observe_factor(lenient.model_copy(update={"source": CLIENT_BANNER}), reader)
    finally:
        reader.close()
    for obs in (server, client):
        assert obs.error is None and isinstance(obs.value, int) and obs.value >= 120000, obs
    reference = _env(policy)
    candidate = _env(policy)
    swap = tuple(client if o.factor == base.name else o for o in candidate.observations)
    candidate = candidate.model_copy(update={"observations": swap})
    reference = reference.model_copy(
        update={"observations": tuple(server if o.factor == base.name else o for o in reference.observations)}
    )
    proof = conform(reference, candidate, policy)
    verdict = _verdict(proof, base.name)
    assert (verdict.passed, verdict.code) == (False, "source_mismatch")
    assert "command:psql --version" in verdict.reason
    assert proof.decision == "non_conforming" and proof.reason_codes == ("source_mismatch",)
    # Both read by the policy's own contract, the same values pass.
    assert conform(reference, reference, policy).decision == "conforming"


@pytest.mark.parametrize(
    ("candidate", "code"), [("4", "match"), ("6", "match"), ("2", "match"), ("7", "drift")]
)
def test_same_source_inside_the_tolerance_passes_outside_fails(candidate, code):
    proof = conform(_env(cpu_count="4"), _env(cpu_count=candidate))
    verdict = _verdict(proof, "cpu_count")
    assert verdict.code == code and verdict.passed is (code == "match")
    assert proof.decision == ("conforming" if code == "match" else "non_conforming")


def test_compatibility_classes_and_exact_rules():
    same_major = conform(_env(postgres_server_version="150002"), _env(postgres_server_version="150018"))
    assert same_major.decision == "conforming"
    other_major = conform(_env(postgres_server_version="150018"), _env(postgres_server_version="160004"))
    assert _verdict(other_major, "postgres_server_version").code == "drift"
    assert conform(_env(python_version="3.11.2"), _env(python_version="3.11.9")).decision == "conforming"
    assert conform(_env(python_version="3.11.9"), _env(python_version="3.12.1")).decision == "non_conforming"
    assert conform(_env(lark_version="1.3.1"), _env(lark_version="1.3.2")).reason_codes == ("drift",)
    assert conform(_env(run_database_storage="local"), _env(run_database_storage="docker")).reason_codes == (
        "drift",
    )


def test_a_missing_required_factor_fails_closed():
    proof = conform(_env(), _env(seed_digest=None))
    assert _verdict(proof, "seed_digest").code == "missing" and proof.decision == "non_conforming"
    unread = _env()
    broken = tuple(
        o.model_copy(update={"raw": None, "value": None, "error": "OperationalError('no server')"})
        if o.factor == "postgres_server_version"
        else o
        for o in unread.observations
    )
    proof = conform(_env(), unread.model_copy(update={"observations": broken}))
    assert _verdict(proof, "postgres_server_version").code == "missing"
    assert "no server" in _verdict(proof, "postgres_server_version").reason


def test_a_missing_optional_factor_is_noted_not_decisive():
    optional = _factor("cpu_count").model_copy(update={"required": False, "on_missing": "note"})
    policy = _policy_with(optional)
    proof = conform(_env(policy), _env(policy, cpu_count=None), policy)
    assert _verdict(proof, "cpu_count").code == "missing_noted" and proof.decision == "conforming"


def test_a_value_that_does_not_follow_from_its_raw_text_is_not_reproducible():
    env = _env()
    edited = tuple(
        o.model_copy(update={"value": 160002}) if o.factor == "postgres_server_version" else o
        for o in env.observations
    )
    proof = conform(_env(), env.model_copy(update={"observations": edited}))
    assert _verdict(proof, "postgres_server_version").code == "not_reproducible"


def test_an_environment_observed_under_another_policy_does_not_conform():
    other = _policy_with(_factor("cpu_count").model_copy(update={"match": Tolerance(relative=0.9)}))
    proof = conform(_env(), _env(other))
    assert proof.reason_codes == ("policy_mismatch",) and proof.decision == "non_conforming"


def test_policies_fail_closed_and_run_nothing_they_do_not_name():
    with pytest.raises(ValidationError, match="fails closed"):
        Factor.model_validate({**_factor("seed_digest").model_dump(), "on_drift": "note"})
    with pytest.raises(ValidationError, match="not one of"):
        SourceContract(kind="command", locator="rm -rf /", parser="integer", parser_version=1)
    with pytest.raises(ValidationError, match="not one of"):
        SourceContract(kind="sql", locator="DROP DATABASE postgres", parser="integer", parser_version=1)
    with pytest.raises(ValidationError, match="unknown parser"):
        SourceContract(kind="sql", locator="SELECT 1", parser="guess", parser_version=1)
    future = _factor("cpu_count").model_copy(
        update={"source": _factor("cpu_count").source.model_copy(update={"parser_version": 2})}
    )
    obs = observe_factor(future, SourceReader(None))  # type: ignore[arg-type]
    assert obs.value is None and "integer/2 is not this code's /1" in (obs.error or "")


def test_known_answer_hashes():
    """The environment hash is SHA-256 over RFC 8785 bytes written out by hand here; the policy's hash is
    pinned, since a change to it changes every execution_environment_hash (a protocol change, on purpose)."""
    obs = Observation(factor="cpu_count", source=_factor("cpu_count").source, raw="4", value=4)
    env = ExecutionEnvironment(policy_hash="p", observations=(obs,))
    canonical = (
        '{"format":"agentrel-execution-environment/1","observations":[{"error":null,"factor":"cpu_count",'
        '"raw":"4","source":{"kind":"python","locator":"os.sched_getaffinity","parser":"integer",'
        '"parser_version":1},'
        '"value":4}],"policy_hash":"p"}'
    )
    assert environment_hash(env) == hashlib.sha256(canonical.encode()).hexdigest()
    assert (
        environment_policy_hash(DEFAULT_POLICY)
        == "72a29f2aff8a2743ce359224dafbd124498f11c11a1c8783820682d8f2e670ff"
    )


def test_the_file_is_written_once_and_a_nonconforming_resume_is_refused(tmp_path):
    env = _env()
    path = write_execution_environment(tmp_path / "r", env)
    assert path.name == layout.EXECUTION_ENVIRONMENT and read_execution_environment(path) == env
    assert not list((tmp_path / "r").glob(".*tmp"))
    before = path.read_bytes()
    write_execution_environment(tmp_path / "r", env)
    write_execution_environment(tmp_path / "r", _env(cpu_count="5"))  # conforms: the first one stands
    assert path.read_bytes() == before
    with pytest.raises(UsageError, match="seed_digest: drift"):
        write_execution_environment(tmp_path / "r", _env(seed_digest="cd" * 32))
    assert path.read_bytes() == before


# -- issue 22 section 7: observations that only look like versions, and the CPUs the process may use -----

TAIL = "-ERROR.SessionExpired.login"


@pytest.mark.parametrize(
    "factor", ["python_version", "lark_version", "pydantic_version", "scipy_version", "psycopg_version"]
)
def test_a_version_with_an_error_tail_does_not_conform(factor):
    """The attack: a reader that returned an error page glued to a release. The whole raw text must be a
    version, so observing records no value, and a value recorded beside such a raw is not reproducible."""
    f = _factor(factor)
    release = {"python_version": "3.11.7", "lark_version": "1.3.1"}.get(factor, "2.14.4")
    with pytest.raises(ValueError, match="does not match"):
        f.normalize(release + TAIL)

    class Liar:
        def read(self, source):
            return release + TAIL

    observed = observe_factor(f, Liar())  # type: ignore[arg-type]
    assert observed.value is None and observed.raw == release + TAIL
    forged = tuple(
        o.model_copy(update={"raw": release + TAIL, "value": release}) if o.factor == factor else o
        for o in _env().observations
    )
    proof = conform(_env(), _env().model_copy(update={"observations": forged}))
    assert _verdict(proof, factor).code == "not_reproducible" and proof.decision == "non_conforming"


@pytest.mark.parametrize(
    ("text", "release"),
    [("3.11.7", "3.11.7"), ("2.0.0rc1", "2.0.0"), ("1.3.1.post1", "1.3.1"), ("3.3.9+local.1", "3.3.9"),
     ("3.14.0a1+", "3.14.0")],
)  # fmt: skip
def test_real_version_texts_still_parse(text, release):
    from agentrel.harness.protocol.environment import PARSERS

    assert PARSERS["release"][1](text) == text
    assert _factor("lark_version").normalize(text) == release


def test_cpu_count_reads_the_cpus_the_process_may_use():
    """Pinned to one CPU (as `taskset -c 0` does), the observation says 1, whatever the host has."""
    import subprocess
    import sys

    code = (
        "import os\n"
        "os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})\n"
        "from agentrel.harness.protocol.environment import DEFAULT_POLICY, SourceReader, observe_factor\n"
        "f = next(f for f in DEFAULT_POLICY.factors if f.name == 'cpu_count')\n"
        "print(observe_factor(f, SourceReader(None)).value, os.cpu_count())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    pinned, host = (int(x) for x in done.stdout.split())
    assert pinned == 1
    assert _factor("cpu_count").source.locator == "os.sched_getaffinity"
    if host > 1:  # the attack the old contract let through: os.cpu_count reports the host, not the process
        assert host != pinned
