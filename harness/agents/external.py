"""An external agent program as a subject: `agentrel audit --agent NAME=COMMAND` (or `--agent-file`).

Per run, the run's tools are served over MCP streamable HTTP on 127.0.0.1 with a fresh bearer token
(`harness.mcp.episode`) and the command is started (no shell; `harness.agents.process`) with this
environment contract, the only AGENTREL_* variables it sees (its other variables are inherited):

    AGENTREL_MCP_URL              the run's MCP endpoint
    AGENTREL_MCP_TOKEN            the bearer token it requires (Authorization: Bearer …)
    AGENTREL_SYSTEM_PROMPT_FILE   the task's system prompt, UTF-8, exactly as a model subject receives it
    AGENTREL_USER_PROMPT_FILE     the task's user prompt, likewise
    AGENTREL_RUN_ID               the run's id
    AGENTREL_USAGE_FILE           where it may write {"input_tokens": N, "output_tokens": N, "model": "…"}
    AGENTREL_FINAL_MESSAGE_FILE   where it may write its final message to the user (UTF-8): judged as a
                                  model subject's last answer (a `REFUSAL:` line makes the run refused)

Inherited AGENTREL_* and PG* variables (the database DSN among them) are removed: the agent acts only
through the tools. The token never goes on the command line. The run ends when the process exits or its
budget passes; its process group is then killed. Who failed decides the status (see `ExternalAgent.run`).

With `--agent-model SPEC` its model calls go through the run's model proxy (`model_proxy`):
AGENTREL_MODEL_BASE_URL, AGENTREL_MODEL_API_KEY (a per-run token, not a key) and AGENTREL_MODEL, also as
OPENAI_BASE_URL / OPENAI_API_KEY and ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY; every inherited variable
holding the upstream's key is removed. Its tokens and cost are then measured by the proxy, and its usage
file is only a cross-check; without a model proxy, a cost from its usage file is marked `reported`.

Sealed (the default, `isolation="sealed"`): the command runs in a bubblewrap sandbox (`sealed.py`) that
holds its code and Python environment read-only, its run's files and a private scratch, and reaches
only the run's endpoints (`Endpoints`); its identity (`config()`) covers every file of its code
directory and every distribution of its Python environment (`subject_code.py`), and how it was isolated.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentrel.distribution import DISTRIBUTION
from agentrel.harness.agents.agent_model import cross_check, probe_proxy, without_secrets
from agentrel.harness.agents.base import (
    AgentKind,
    AgentResult,
    ConfigError,
    Episode,
    Failure,
    Usage,
    UsageSource,
)
from agentrel.harness.agents.final_text import final_message_events
from agentrel.harness.agents.model_upstream import resolve_upstream
from agentrel.harness.agents.process import ProcessEnd, run_process
from agentrel.harness.agents.sealed import (
    RUN_DIR,
    Endpoints,
    RunDirs,
    SealPlan,
    SealUnavailable,
    require,
    run_sealed,
)
from agentrel.harness.agents.subject_code import (
    CodeTree,
    PythonEnv,
    python_env,
    python_identity,
    python_of,
    sha256_file,
    walk_code,
)
from agentrel.harness.errors import UserError
from agentrel.harness.redact import redact

if TYPE_CHECKING:
    from agentrel.harness.agents.model_proxy import ModelProxy

PREFIX = "agent"  # an external agent's subject name is agent/<NAME>
DEFAULT_TIMEOUT_S = 300.0
PROBE_S = 15.0  # the longest the pre-audit probe waits for the agent to open its MCP session
ENV_VARS = (
    "AGENTREL_MCP_URL",
    "AGENTREL_MCP_TOKEN",
    "AGENTREL_SYSTEM_PROMPT_FILE",
    "AGENTREL_USER_PROMPT_FILE",
    "AGENTREL_RUN_ID",
    "AGENTREL_USAGE_FILE",
    "AGENTREL_FINAL_MESSAGE_FILE",
)
MAX_FINAL_BYTES = 1 << 20  # a final message is read up to 1 MiB: an agent cannot make the harness read more
# Placeholders a command may carry; the token is deliberately not one (argv is visible to other users).
PLACEHOLDERS = {
    "mcp_url": "AGENTREL_MCP_URL",
    "system_prompt_file": "AGENTREL_SYSTEM_PROMPT_FILE",
    "user_prompt_file": "AGENTREL_USER_PROMPT_FILE",
    "run_id": "AGENTREL_RUN_ID",
    "usage_file": "AGENTREL_USAGE_FILE",
    "final_message_file": "AGENTREL_FINAL_MESSAGE_FILE",
}
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


Isolation = Literal["sealed", "none"]
Network = Literal["loopback", "host"]


class ExternalSpec(BaseModel):
    """What the recipe carries to rebuild the agent in any executor slot: plain data, no secret."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    command: list[str] = Field(min_length=1)
    code: list[str] = Field(default_factory=list)  # declared code/config files (absolute paths)
    timeout_s: float = DEFAULT_TIMEOUT_S
    cwd: str | None = None
    code_dir: str | None = None  # the folder whose every file is its code (default: cwd, else the script's)
    isolation: Isolation = "sealed"  # "none": no sandbox (`--agent-isolation none`): evidence only
    network: Network = "loopback"  # "host": the sandbox shares the machine's network (`--agent-network`)
    hidden: list[str] = Field(default_factory=list)  # never visible to it (the results directory)
    model: str | None = None  # --agent-model: the upstream its model proxy forwards to (None: no proxy)

    @property
    def subject(self) -> str:
        return f"{PREFIX}/{self.name}"


class UsageReport(BaseModel):
    model_config = ConfigDict(extra="ignore")

    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    model: str = Field(min_length=1)


def parse_agent_option(value: str, timeout_s: float) -> ExternalSpec:
    """`NAME=COMMAND`, the command split as a POSIX shell would split it (it is never run by one)."""
    name, sep, command = value.partition("=")
    if not sep or not name.strip() or not command.strip():
        raise ConfigError(f"--agent {value!r}: expected NAME=COMMAND, e.g. --agent mine='python my_agent.py'")
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ConfigError(f"--agent {name}: the command cannot be split ({exc}); check its quotes") from None
    return checked(ExternalSpec(name=name.strip(), command=argv, timeout_s=timeout_s), "--agent")


def load_agent_file(path: Path, timeout_s: float) -> ExternalSpec:
    """A small YAML file: name, command (a string split like --agent's, or a list), optional code (files
    whose digest identifies the agent, relative to the file), timeout_s and cwd."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"--agent-file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: not valid YAML") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping with name and command")
    command = data.get("command")
    if isinstance(command, str):
        try:
            data["command"] = shlex.split(command)
        except ValueError as exc:
            raise ConfigError(f"{path}: field command: cannot be split ({exc})") from None
    base = path.resolve().parent
    data.setdefault("timeout_s", timeout_s)
    if isinstance(data.get("code"), list):
        data["code"] = [str(base / str(c)) for c in data["code"]]
    for key in ("cwd", "code_dir"):
        if isinstance(data.get(key), str):
            data[key] = str(base / data[key])
    try:
        spec = ExternalSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise ConfigError(f"{path}: field {loc}: {err['msg']}") from None
    return checked(spec, str(path))


def checked(spec: ExternalSpec, where: str) -> ExternalSpec:
    """Everything about the agent that can be known before a run: one line each (ConfigError)."""
    if not _NAME.match(spec.name):
        raise ConfigError(f"{where}: agent name {spec.name!r}: use letters, digits, '.', '_' or '-'")
    if not (spec.timeout_s > 0 and spec.timeout_s < float("inf")):
        raise ConfigError(f"{where}: agent {spec.name}: the time budget must be a positive number of seconds")
    for arg in spec.command:
        for found in _PLACEHOLDER.findall(arg):
            if found not in PLACEHOLDERS:
                shown = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                hint = " (the token is never put on the command line)" if "token" in found else ""
                raise ConfigError(
                    f"{where}: agent {spec.name}: unknown placeholder {{{found}}} in its command{hint};"
                    f" use one of {shown}"
                )
    program = spec.command[0]
    cwd = Path(spec.cwd) if spec.cwd else None
    if cwd is not None and not cwd.is_dir():
        raise ConfigError(f"{where}: agent {spec.name}: cwd {cwd} is not a directory")
    if "/" in program:
        path = Path(program) if Path(program).is_absolute() or cwd is None else cwd / program
        if not path.exists():
            raise ConfigError(f"{where}: agent {spec.name}: command {program!r} not found")
        if path.is_dir() or not os.access(path, os.X_OK):
            raise ConfigError(
                f"{where}: agent {spec.name}: command {program!r} is not executable (chmod +x it, or run"
                " it through its interpreter)"
            )
    elif shutil.which(program) is None:
        raise ConfigError(f"{where}: agent {spec.name}: command {program!r} not found on PATH")
    for file in spec.code:
        if not Path(file).is_file():
            raise ConfigError(f"{where}: agent {spec.name}: declared code file {file} is missing")
    if spec.code_dir is not None and not Path(spec.code_dir).is_dir():
        raise ConfigError(f"{where}: agent {spec.name}: code_dir {spec.code_dir} is not a directory")
    return spec


class ExternalAgent:
    """An agent program, audited through the run's tools over MCP. Its identity in the protocol is its
    command, the digests of its declared code files (and of any argument that names a file), of every
    file of its code directory, of its Python environment's distributions, and its isolation."""

    kind: AgentKind = "external"

    def __init__(self, spec: ExternalSpec) -> None:
        self.spec = spec
        self.name = spec.subject
        where = f"agent {spec.name}"
        cwd = Path(spec.cwd) if spec.cwd else None
        files = [*spec.code, *(a for a in spec.command[1:] if _is_file(a, spec.cwd))]
        # Hashed once, before any run: the files the runs use are the ones the protocol names.
        self.code = {f: sha256_file(_at(f, spec.cwd)) for f in dict.fromkeys(files)}
        self.hidden = protected_paths(spec)
        python = python_of(spec.command, cwd)
        self.python: PythonEnv | None = python_env(python, cwd, os.environ, where) if python else None
        self.code_dir = code_dir_of(spec)
        dirs = [
            *([self.code_dir] if self.code_dir else []),
            *(self.python.extra_paths() if self.python else []),
        ]
        self.trees: list[CodeTree] = [walk_code(d, self.hidden, where) for d in dict.fromkeys(dirs)]
        self.python_id = python_identity(self.python) if self.python is not None else None
        self.upstream = resolve_upstream(spec.model) if spec.model else None
        self._probe_model_env: dict[str, str] | None = None  # while the pre-audit probe runs

    def config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "command": list(self.spec.command),
            "code": dict(sorted(self.code.items())),
            "code_dirs": [t.identity() for t in self.trees],
            "python": self.python_id,
            "isolation": {"mode": self.spec.isolation, "network": self.spec.network},
            "timeout_s": self.spec.timeout_s,
            # Only with a model proxy, so an agent audited without one keeps its config hash.
            **({"model": self.upstream.config()} if self.upstream is not None else {}),
        }

    def preflight(self) -> None:
        """A sandbox must be possible (unless `isolation="none"`); then start the command once against a
        probe endpoint (no database; every tool call refused) and stop it as soon as it opens its MCP
        session: a command that exits before connecting stops the audit here, before any run."""
        import asyncio

        from agentrel.harness.agents.probe import probe

        if self.spec.isolation == "sealed":
            try:
                require()
            except SealUnavailable as exc:
                raise UserError(f"agent {self.spec.name}: {exc}") from None
        if self.upstream is not None:  # its key refused, its endpoint unreachable: before any run
            self.upstream.preflight()

        async def probed() -> str | None:
            if self.upstream is None:
                return await probe(self, min(self.spec.timeout_s, PROBE_S))
            # The probe's model: a scripted one that calls no tool and says so (no upstream is paid).
            async with probe_proxy() as proxy:
                self._probe_model_env = proxy.environment()
                try:
                    return await probe(self, min(self.spec.timeout_s, PROBE_S))
                finally:
                    self._probe_model_env = None

        problem = asyncio.run(probed())
        if problem is not None:  # the command the user gave cannot be used (exit 3, as a bad file)
            raise UserError(f"agent {self.spec.name}: {problem}")

    async def run(self, episode: Episode) -> AgentResult:
        from agentrel.harness.mcp.episode import EpisodeFace

        task = episode.task
        with tempfile.TemporaryDirectory(prefix="agentrel-agent-") as tmp:
            face = EpisodeFace(task, episode.tools, episode.call)
            proxy = self.model_proxy(episode)  # started with the run; its calls join the result after
            async with face, proxy or contextlib.nullcontext():
                assert face.token is not None
                model_env = proxy.environment() if proxy is not None else None
                end, files = await self.launch(
                    Path(tmp),
                    self.endpoints(face.url, model_env),
                    face.token,
                    (task.system_prompt, task.user_prompt),
                    episode.run_id,
                    model_env=model_env,
                )
            return self.result(end, face.connected, face.died, files, face.token or "", proxy)

    def model_proxy(self, episode: Episode) -> ModelProxy | None:
        """The run's model proxy (not yet started), or None without --agent-model."""
        if self.upstream is None:
            return None
        from agentrel.harness.agents.model_proxy import ModelProxy

        scripted = self.upstream.scripted
        run = scripted.for_run(episode.task, episode.seed) if scripted is not None else None
        return ModelProxy(self.upstream, episode.seed, run)

    def endpoints(self, mcp_url: str, model_env: Mapping[str, str] | None = None) -> Endpoints:
        """What the run offers the agent, by the variable that names it: nothing else is reachable
        sealed. The run's MCP endpoint, and its model proxy's URLs when it has one (`model_env`; the
        probe's own proxy while the pre-audit probe runs)."""
        endpoints = Endpoints()
        endpoints["AGENTREL_MCP_URL"] = mcp_url
        model = model_env or self._probe_model_env or {}
        for name, value in model.items():
            if value.startswith("http://"):
                endpoints[name] = value
        return endpoints

    async def launch(
        self,
        tmp: Path,
        endpoints: Endpoints,
        token: str,
        prompts: tuple[str, str],
        run_id: str,
        *,
        budget_s: float | None = None,
        stop_when: Callable[[], bool] | None = None,
        model_env: Mapping[str, str] | None = None,
    ) -> tuple[ProcessEnd, Path]:
        """Start the command (sealed, or as a plain child with `isolation="none"`) with the run's
        contract; returns how it ended and the folder holding its run files."""
        budget = self.spec.timeout_s if budget_s is None else budget_s
        marker = f"AGENTREL_MCP_TOKEN={token}"
        if self.spec.isolation == "none":
            env = self.environment(tmp, endpoints, token, prompts, run_id, model_env=model_env)
            cwd = Path(self.spec.cwd) if self.spec.cwd else None
            end = await run_process(self.argv(env), env, budget, cwd=cwd, stop_when=stop_when, marker=marker)
            return end, tmp
        dirs = RunDirs(tmp)
        env = self.environment(
            dirs.io, endpoints, token, prompts, run_id, shown_at=RUN_DIR, model_env=model_env
        )
        env.update(HOME="/tmp", TMPDIR="/tmp")
        plan = SealPlan(
            command=self.argv(env),
            io_dir=dirs.io,
            net_dir=dirs.net,
            cwd=Path(self.spec.cwd) if self.spec.cwd else Path.cwd(),
            network=self.spec.network,
            read_only=self.mounts(),
            masks=[*self.hidden, *(h for t in self.trees for h in t.hidden)],
            ports=[] if self.spec.network == "host" else [port for _, port in endpoints.ports()],
        )
        return await run_sealed(plan, env, budget, stop_when=stop_when), dirs.io

    def mounts(self) -> list[Path]:
        """What the sandbox shows read-only, at its own path: code, declared files, Python."""
        out = [t.root for t in self.trees]
        out += [_at(f, self.spec.cwd).absolute() for f in self.code]
        program = self.spec.command[0]
        if "/" in program:
            out.append(_at(program, self.spec.cwd).absolute())
        elif (found := shutil.which(program)) is not None:
            out.append(Path(found))
        if self.python is not None:
            out += self.python.mounts()
            if any(b[0] == DISTRIBUTION for b in (self.python_id or {}).get("libraries", [])):
                out += agentrel_code_dirs()  # `agentrel mcp stdio-proxy`, for agents that spawn it
        return out

    def environment(
        self,
        tmp: Path,
        endpoints: Mapping[str, str],
        token: str,
        prompts: tuple[str, str],
        run_id: str,
        *,
        shown_at: Path | None = None,
        model_env: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        """The agent's environment; the files it names (`RunFiles`) are in `tmp`, which the agent sees
        at `shown_at` (sealed) or where it is. With a model proxy, `model_env` points its model client
        there (None: the probe's model, see `preflight`)."""
        files = RunFiles(tmp)
        seen = RunFiles(shown_at) if shown_at is not None else files
        # Bytes, so no newline translation: the files hold exactly the prompts a model subject is sent.
        files.system_prompt.write_bytes(prompts[0].encode("utf-8"))
        files.user_prompt.write_bytes(prompts[1].encode("utf-8"))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTREL_", "PG"))}
        env.update(endpoints)
        env.update(
            AGENTREL_MCP_TOKEN=token,
            AGENTREL_SYSTEM_PROMPT_FILE=str(seen.system_prompt),
            AGENTREL_USER_PROMPT_FILE=str(seen.user_prompt),
            AGENTREL_RUN_ID=run_id,
            AGENTREL_USAGE_FILE=str(seen.usage),
            AGENTREL_FINAL_MESSAGE_FILE=str(seen.final_message),
        )
        if self.upstream is not None:
            env = without_secrets(env, self.upstream.secrets)
            env.update(model_env or self._probe_model_env or {})
        return env

    def argv(self, env: Mapping[str, str]) -> list[str]:
        return [_PLACEHOLDER.sub(lambda m: env[PLACEHOLDERS[m.group(1)]], a) for a in self.spec.command]

    def result(
        self,
        end: ProcessEnd,
        connected: bool,
        died: bool,
        tmp: Path,
        token: str,
        proxy: ModelProxy | None = None,
    ) -> AgentResult:
        """Who failed decides: AgentRel's MCP server dying is the harness's failure; anything the agent
        did (exit non-zero, overrun its budget, never connect) is its own, judged by the state it left.
        Tokens are the proxy's measure when there is one (the usage file then only a cross-check), else
        the usage file's, `reported`."""
        files = RunFiles(tmp)
        usage, model, usage_note = read_usage(files.usage)
        secrets = [token, *((proxy.token, *proxy.upstream.secrets) if proxy is not None else ())]
        final = read_final(files.final_message, token)
        transcript = [
            {
                "role": stream,
                "text": redact(captured.text(), secrets),
                "bytes": captured.total,
                "truncated": captured.truncated,
            }
            for stream, captured in (("stdout", end.stdout), ("stderr", end.stderr))
        ]
        transcript.append(
            {
                "role": "process",
                "returncode": end.returncode,
                "timed_out": end.timed_out,
                "elapsed_s": round(end.elapsed_s, 3),
                "connected": connected,
                "usage": usage_note,
                "final_message": "reported" if final is not None else "not reported",
            }
        )
        source: UsageSource | None = "reported" if model is not None else None
        model_calls: list[dict[str, Any]] = []
        served: str | None = None
        if proxy is not None:
            measured = proxy.usage()
            transcript[-1]["usage_cross_check"] = cross_check(usage if model is not None else None, measured)
            transcript.extend(proxy.transcript())
            usage, model, source = measured, proxy.upstream.spec, "measured"
            model_calls, served = proxy.model_calls(), proxy.served_model()
        error: str | None = None
        failure: Failure | None = None
        if died:
            error, failure = "AgentRel's MCP server stopped while the agent ran", "harness"
        elif end.spawn_error is not None:
            error, failure = f"the agent could not be started: {end.spawn_error}", "agent"
        elif end.timed_out:
            error, failure = f"the agent exceeded its {self.spec.timeout_s:g} s budget", "agent"
        elif end.returncode != 0:
            error, failure = f"the agent exited with code {end.returncode}", "agent"
        if proxy is not None and failure == "agent" and (fault := proxy.upstream_fault()):
            error, failure = f"provider: {fault} (then {error})", "provider"
        if not connected and failure != "harness":
            error = "the agent never connected to the run's MCP server" + (f" ({error})" if error else "")
        return AgentResult(
            final_message=final,
            error=error,
            failure=failure,
            usage=usage,
            transcript=transcript,
            connected=connected,
            usage_model=model,
            usage_source=source,
            events=final_message_events(final),
            model_calls=model_calls,
            served_model=served,
        )


class RunFiles:
    """The files of one run's contract, in the run's private temporary folder."""

    def __init__(self, tmp: Path) -> None:
        self.system_prompt = tmp / "system_prompt.txt"
        self.user_prompt = tmp / "user_prompt.txt"
        self.usage = tmp / "usage.json"
        self.final_message = tmp / "final_message.txt"


def read_regular(path: Path, limit: int) -> bytes | None:
    """Up to `limit` bytes of a regular file the agent wrote, never following a link it planted (a
    sealed agent's files are read by the harness, which may be root) nor blocking on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return f.read(limit)


def read_final(path: Path, token: str) -> str | None:
    """The agent's final message, if it wrote one: bounded, undecodable bytes replaced, the run's token
    redacted (an agent may echo its environment). Empty or missing is no final message."""
    raw = read_regular(path, MAX_FINAL_BYTES)
    if raw is None:
        return None
    text = redact(raw.decode("utf-8", errors="replace"), [token])
    return text if text.strip() else None


def read_usage(path: Path) -> tuple[Usage, str | None, str]:
    """The agent's token usage, if it wrote it in the documented form; otherwise cost stays unknown."""
    if not path.exists() and not path.is_symlink():
        return Usage(), None, "not reported"
    raw = read_regular(path, 65536)
    try:
        if raw is None:
            raise OSError("not a regular file")
        report = UsageReport.model_validate_json(raw)
    except (ValidationError, OSError) as exc:
        why = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        return (
            Usage(),
            None,
            f"unreadable ({why}): expected {json.dumps(UsageReport.model_json_schema()['required'])}",
        )
    return Usage(report.input_tokens, report.output_tokens, 0), report.model, "reported"


def code_dir_of(spec: ExternalSpec) -> Path | None:
    """`code_dir`, else `cwd`, else the folder of the first argument that names a file (its script)."""
    if spec.code_dir:
        return Path(spec.code_dir).resolve()
    if spec.cwd:
        return Path(spec.cwd).resolve()
    script = next((a for a in spec.command[1:] if _is_file(a, spec.cwd)), None)
    return _at(script, spec.cwd).resolve().parent if script is not None else None


def protected_paths(spec: ExternalSpec) -> list[Path]:
    """What an agent must never see even inside a tree it is shown: AGENTREL_HOME (cluster socket,
    registry, signing key), the registry and key wherever they are named, the results directory, the
    suite (tasks and damage specs)."""
    from agentrel.sandbox.servers.local import default_home

    out = [default_home(), *(Path(h) for h in spec.hidden)]
    out += [Path(os.environ[v]) for v in ("AGENTREL_REGISTRY", "AGENTREL_SIGNING_KEY") if os.environ.get(v)]
    from agentrel.distribution import PACKAGE_DIR

    suite = PACKAGE_DIR / "_suite"
    out.append(suite)
    if suite.is_dir():
        out += [p.resolve() for p in suite.iterdir()]
    return [p.absolute() for p in out]


def agentrel_code_dirs() -> list[Path]:
    """AgentRel's own package folders (its layers, without the suite), for `agentrel mcp stdio-proxy`."""
    from agentrel.distribution import PACKAGE_DIR

    root = PACKAGE_DIR
    return [root, *(p.resolve() for p in root.iterdir() if p.is_symlink() and p.name != "_suite")]


def _at(file: str, cwd: str | None) -> Path:
    path = Path(file)
    return path if path.is_absolute() or cwd is None else Path(cwd) / path


def _is_file(arg: str, cwd: str | None) -> bool:
    return not _PLACEHOLDER.search(arg) and not arg.startswith("-") and _at(arg, cwd).is_file()
