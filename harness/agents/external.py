"""An external agent program as a subject: `agentrel audit --agent NAME=COMMAND` (or `--agent-file`).

Per run, the run's tools are served over MCP streamable HTTP on 127.0.0.1 with a fresh bearer token
(`harness.mcp_episode`) and the command is started (no shell; `harness.agents.process`) with this
environment contract, the only AGENTREL_* variables it sees (its other variables are inherited):

    AGENTREL_MCP_URL              the run's MCP endpoint
    AGENTREL_MCP_TOKEN            the bearer token it requires (Authorization: Bearer …)
    AGENTREL_SYSTEM_PROMPT_FILE   the task's system prompt, UTF-8, exactly as a model subject receives it
    AGENTREL_USER_PROMPT_FILE     the task's user prompt, likewise
    AGENTREL_RUN_ID               the run's id
    AGENTREL_USAGE_FILE           where it may write {"input_tokens": N, "output_tokens": N, "model": "…"}
    AGENTREL_FINAL_MESSAGE_FILE   where it may write its final message to the user (UTF-8): judged as a
                                  model subject's last answer (a `REFUSAL:` line makes the run refused)

With `--agent-model SPEC` its model calls go through the run's model proxy (`model_proxy`):
AGENTREL_MODEL_BASE_URL, AGENTREL_MODEL_API_KEY (a per-run token, not a key) and AGENTREL_MODEL, also as
OPENAI_BASE_URL / OPENAI_API_KEY and ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY; every inherited variable
holding the upstream's key is removed. Its tokens and cost are then measured by the proxy, and its usage
file is only a cross-check; without a model proxy, a cost from its usage file is marked `reported`.

Inherited AGENTREL_* variables (the database DSN among them) are removed: the agent acts only through
the tools. The token never goes on the command line. The run ends when the process exits or its budget
passes; its process group is then killed. Who failed decides the status (see `ExternalAgent.run`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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


class ExternalSpec(BaseModel):
    """What the recipe carries to rebuild the agent in any executor slot: plain data, no secret."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    command: list[str] = Field(min_length=1)
    code: list[str] = Field(default_factory=list)  # declared code/config files (absolute paths)
    timeout_s: float = DEFAULT_TIMEOUT_S
    cwd: str | None = None
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
    if isinstance(data.get("cwd"), str):
        data["cwd"] = str(base / data["cwd"])
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
    return spec


class ExternalAgent:
    """An agent program, audited through the run's tools over MCP. Its identity in the protocol is its
    command and the digests of its declared code files (and of any argument that names a file)."""

    kind: AgentKind = "external"

    def __init__(self, spec: ExternalSpec) -> None:
        self.spec = spec
        self.name = spec.subject
        files = [*spec.code, *(a for a in spec.command[1:] if _is_file(a, spec.cwd))]
        # Hashed once, before any run: the files the runs use are the ones the protocol names.
        self.code = {f: _sha256(_at(f, spec.cwd)) for f in dict.fromkeys(files)}
        self.upstream = resolve_upstream(spec.model) if spec.model else None
        self._probe_model_env: dict[str, str] | None = None  # while the pre-audit probe runs

    def config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "command": list(self.spec.command),
            "code": dict(sorted(self.code.items())),
            "timeout_s": self.spec.timeout_s,
            # Only with a model proxy, so an agent audited without one keeps its config hash.
            **({"model": self.upstream.config()} if self.upstream is not None else {}),
        }

    def preflight(self) -> None:
        """Start the command once against a probe endpoint (no database; every tool call refused) and
        stop it as soon as it opens its MCP session: a command that exits before connecting stops the
        audit here, before any run."""
        import asyncio

        from agentrel.harness.agents.probe import probe

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
        from agentrel.harness.mcp_episode import EpisodeFace

        task = episode.task
        with tempfile.TemporaryDirectory(prefix="agentrel-agent-") as tmp:
            face = EpisodeFace(task, episode.tools, episode.call)
            # --- model proxy: started with the run, its variables in the agent's environment, its calls
            # collected into the result after the run (`model_env` lists the endpoint it must reach) ---
            proxy = self.model_proxy(episode)
            async with face, proxy or contextlib.nullcontext():
                model_env = proxy.environment() if proxy is not None else None
                # --- end model proxy ---
                assert face.token is not None
                env = self.environment(
                    Path(tmp),
                    face.url,
                    face.token,
                    task.system_prompt,
                    task.user_prompt,
                    episode.run_id,
                    model_env=model_env,
                )
                end = await run_process(
                    self.argv(env),
                    env,
                    self.spec.timeout_s,
                    cwd=Path(self.spec.cwd) if self.spec.cwd else None,
                    marker=f"AGENTREL_MCP_TOKEN={face.token}",
                )
            return self.result(end, face.connected, face.died, Path(tmp), face.token or "", proxy)

    def model_proxy(self, episode: Episode) -> ModelProxy | None:
        """The run's model proxy (not yet started), or None without --agent-model."""
        if self.upstream is None:
            return None
        from agentrel.harness.agents.model_proxy import ModelProxy

        scripted = self.upstream.scripted
        run = scripted.for_run(episode.task, episode.seed) if scripted is not None else None
        return ModelProxy(self.upstream, episode.seed, run)

    def environment(
        self,
        tmp: Path,
        url: str,
        token: str,
        system: str,
        user: str,
        run_id: str,
        *,
        model_env: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        """The agent's environment; the files it names (`RunFiles`) are in `tmp`. With a model proxy,
        `model_env` points its model client there (None: the probe's model, see `preflight`)."""
        files = RunFiles(tmp)
        system_file, user_file = files.system_prompt, files.user_prompt
        # Bytes, so no newline translation: the files hold exactly the prompts a model subject is sent.
        system_file.write_bytes(system.encode("utf-8"))
        user_file.write_bytes(user.encode("utf-8"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTREL_")}
        env.update(
            AGENTREL_MCP_URL=url,
            AGENTREL_MCP_TOKEN=token,
            AGENTREL_SYSTEM_PROMPT_FILE=str(system_file),
            AGENTREL_USER_PROMPT_FILE=str(user_file),
            AGENTREL_RUN_ID=run_id,
            AGENTREL_USAGE_FILE=str(files.usage),
            AGENTREL_FINAL_MESSAGE_FILE=str(files.final_message),
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


def read_final(path: Path, token: str) -> str | None:
    """The agent's final message, if it wrote one: bounded, undecodable bytes replaced, the run's token
    redacted (an agent may echo its environment). Empty or missing is no final message."""
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_FINAL_BYTES)
    except OSError:
        return None
    text = redact(raw.decode("utf-8", errors="replace"), [token])
    return text if text.strip() else None


def read_usage(path: Path) -> tuple[Usage, str | None, str]:
    """The agent's token usage, if it wrote it in the documented form; otherwise cost stays unknown."""
    if not path.exists():
        return Usage(), None, "not reported"
    try:
        report = UsageReport.model_validate_json(path.read_bytes()[:65536])
    except (ValidationError, OSError) as exc:
        why = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else type(exc).__name__
        return (
            Usage(),
            None,
            f"unreadable ({why}): expected {json.dumps(UsageReport.model_json_schema()['required'])}",
        )
    return Usage(report.input_tokens, report.output_tokens, 0), report.model, "reported"


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _at(file: str, cwd: str | None) -> Path:
    path = Path(file)
    return path if path.is_absolute() or cwd is None else Path(cwd) / path


def _is_file(arg: str, cwd: str | None) -> bool:
    return not _PLACEHOLDER.search(arg) and not arg.startswith("-") and _at(arg, cwd).is_file()
