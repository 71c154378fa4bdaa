"""The tool loop shared by chat-model adapters, and the checks that stand between a provider and the loop.

An adapter only knows its wire format: how to start a conversation, send one request, read a turn
(text + tool calls + usage + stop reason), and append tool results. The loop, the step budget, retries
and the classification of what came back live here once:

- a response that is not a model's answer (a redirect, a 200 whose body is an HTML page, no choices,
  zero content blocks, a turn with neither text nor tool calls, a turn cut off at the token limit with no
  usable tool call, a content filter) is a **provider** failure: retried with backoff, and if it persists
  the run ends as provider-failed, never as the agent's final answer;
- refused credentials (401/403, `authentication_error`, `permission_error`) stop the audit at once;
- a request the model's context window cannot hold is the agent's own end once it has taken a turn (its
  conversation outgrew the window: a valid run, judged by its state), and a provider failure when the
  task's first request already does not fit (the agent never acted); neither is retried, since the same
  request overflows again;
- a text answer that is no model's (an HTML document, a redirect's status text, only invisible
  characters) and a response served by another model than the one asked, or by a different one than the
  run's earlier responses (`honesty`), are provider failures too: retried, and never acted on, so every
  tool call of a run comes from responses of one served model;
- whatever the model itself sent (an ill-typed message, unreadable tool arguments, an unknown tool) is the
  model's: a tool error it sees, or an agent error that ends a valid run.

Each request carries a `seed` derived from the run's seed and the model call's ordinal (where the wire
format has the field), so a cell's K runs draw what AgentRel's per-run seeds say, not what the server's
lifetime happens to be; each answered call's seed and served model id go into the transcript.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import httpx

from agentrel.harness.agents.base import (
    AgentError,
    AgentKind,
    AgentResult,
    ConfigError,
    Episode,
    Failure,
    Usage,
)
from agentrel.harness.agents.final_text import final_message_events
from agentrel.harness.agents.honesty import not_an_answer, served_problem
from agentrel.harness.agents.retry import ProviderError, RetryDecision, classify_status, with_retries
from agentrel.harness.agents.weights_check import CLAIMED, verify_weights
from agentrel.harness.errors import AuthFailure
from agentrel.harness.host_names import is_loopback
from agentrel.harness.redact import redact
from agentrel.harness.run.pipeline import loads, parse_arguments

INVALID = RetryDecision(True, "transient")
AUTH_ERROR_TYPES = frozenset({"authentication_error", "permission_error"})
# A 400 saying the request no longer fits the context window, in the words of OpenAI
# (`context_length_exceeded`), vLLM ("maximum context length"), llama.cpp's server
# (`exceed_context_size_error`) and Anthropic ("prompt is too long").
CONTEXT_OVERFLOW = re.compile(
    r"context_length_exceeded|exceed_context_size|maximum context length|prompt is too long", re.IGNORECASE
)
SEED_RULE = "agentrel-request-seed/1: int(sha256(run seed|model_call|ordinal)[:8], 16) mod 2^31"
DEFAULT_TIMEOUT_S = 120.0


def request_seed(run_seed: str, ordinal: int) -> int:
    """The `seed` of a run's `ordinal`-th model call (1-based): the same for a retry of that call, and in
    [0, 2^31) so every server that honours the field (OpenAI, vLLM, llama.cpp's uint32) takes it."""
    digest = hashlib.sha256(f"{run_seed}|model_call|{ordinal}".encode()).hexdigest()
    return int(digest[:8], 16) % 2**31


class ContextOverflow(Exception):
    """The request does not fit the model's context window (not retried: it would overflow again)."""


class ModelOutputError(AgentError):
    """The model's turn is well-formed JSON but not a readable answer (e.g. `content` is a number)."""


@dataclass
class ToolCallRequest:
    id: str
    name: str
    arguments: Any  # the model's JSON text (OpenAI) or an object (Anthropic); parsed by the pipeline


@dataclass
class Turn:
    text: str | None
    tool_calls: list[ToolCallRequest]
    usage: Usage
    stop: str | None = None  # normalized: "end", "tool_use", "length", "filtered", or the provider's word
    raw: dict[str, Any] = field(default_factory=dict)
    served: str | None = None  # the model id the response says served it (`model`), if it says


class Wire(Protocol):
    """A provider's wire format. Stateless: one instance serves concurrent runs."""

    models_path: str  # the cheapest authenticated GET, used by preflight
    sends_seed: bool  # whether request() puts the seed in the body (the format has the field)

    def start(self, system: str, user: str) -> list[dict[str, Any]]: ...
    def request(
        self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], seed: int
    ) -> tuple[str, dict[str, Any]]: ...
    def parse(self, body: dict[str, Any]) -> Turn:
        """Raise ProviderError for a body that is not a model turn, ModelOutputError for a turn the
        model garbled."""
        ...

    def tool_schema(self, tool: Any) -> dict[str, Any]: ...
    def append(
        self, messages: list[dict[str, Any]], turn: Turn, results: list[tuple[str, str, bool]]
    ) -> None: ...


class ChatAgent:
    """A model behind an HTTP API, driven through the task's tools until it answers without a tool call."""

    kind: AgentKind = "model"

    def __init__(
        self,
        name: str,
        model: str,
        base_url: str,
        headers: dict[str, str],
        wire: Wire,
        sampling: dict[str, Any],
        key_var: str = "",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        attempts: int = 6,
        base_delay: float = 1.0,
    ) -> None:
        self.name, self.model, self.base_url = name, model, base_url.rstrip("/")
        self._headers = headers  # holds the API key: never logged, never in config()
        self._secrets = _secrets_of(headers, self.base_url)
        self.wire, self.sampling, self.key_var = wire, sampling, key_var
        self.timeout_s, self.attempts, self.base_delay = timeout_s, attempts, base_delay
        self.aliases: tuple[str, ...] = ()  # served ids the user declared for this model
        self.server: dict[str, Any] = {}  # what the server said about itself at preflight (a claim)
        self.weights: dict[str, Any] | None = None  # the local weights file, hashed and checked
        self.declared: dict[str, Any] = {}  # --model-meta: what the user says the server does not

    def configure(
        self,
        *,
        timeout_s: float | None = None,
        aliases: Sequence[str] = (),
        declared: dict[str, Any] | None = None,
    ) -> None:
        """The audit's per-subject options (--model-timeout, --model-alias, --model-meta)."""
        if timeout_s is not None:
            self.timeout_s = timeout_s
        self.aliases = tuple(sorted(set(aliases)))
        self.declared = dict(declared or {})

    def config(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "model": self.model,
            "base_url": public_url(self.base_url),
            "sampling": self.sampling,
            "timeout_s": self.timeout_s,
            "request_seed": SEED_RULE if self.wire.sends_seed else None,
        }
        # Only when there is something to say, so a subject without them keeps its config hash.
        if self.aliases:
            config["served_aliases"] = list(self.aliases)
        if self.server:  # unverified: recorded as what the server claims, never as a measurement
            config["server"] = {"provenance": CLAIMED, **self.server}
        if self.weights is not None:
            config["weights_verified"] = self.weights
        # The local path names this machine's file, not the subject: its digest stands for it.
        declared = {k: v for k, v in self.declared.items() if k != "weights_path"}
        if declared:
            config["declared"] = declared
        return config

    def credentials(self) -> tuple[dict[str, str], list[str]]:
        """The request headers holding the key, and every secret to redact: for the model proxy, which
        forwards an agent program's calls with them (`model_upstream`). Never logged."""
        return dict(self._headers), list(self._secrets)

    def preflight(self) -> None:
        """One authenticated request before any run: unreachable endpoints and refused keys stop here.
        What the server says about itself (its model listing, llama.cpp's /props) joins the config."""
        try:
            resp = httpx.get(self.base_url + self.wire.models_path, headers=self._headers, timeout=15)
        except httpx.HTTPError as exc:
            raise ConfigError(
                f"{self.name}: cannot reach {public_url(self.base_url)} ({type(exc).__name__}); "
                "check the base URL and the network"
            ) from None
        self._check_auth(resp.status_code, self._scrub(resp.text))
        from agentrel.harness.agents.server_info import describe_server

        self.server = describe_server(
            self.model, self.aliases, resp, lambda path: self._get_root(path), self._scrub
        )
        host = httpx.URL(self.base_url).host
        self.weights = verify_weights(self.name, self.declared, self.server, is_loopback(host))

    def _get_root(self, path: str) -> httpx.Response | None:
        """GET `path` at the server's root (the base URL without its /v1), or None when unreachable."""
        root = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url
        try:
            return httpx.get(root + path, headers=self._headers, timeout=15)
        except httpx.HTTPError:
            return None

    def _check_auth(self, status: int, text: str) -> None:
        error_type = _error_type(text)
        if status in (401, 403) or error_type in AUTH_ERROR_TYPES:
            what = f"HTTP {status}" + (f" {error_type}" if error_type else "")
            hint = f"; check {self.key_var}" if self.key_var else ""
            raise AuthFailure(f"{self.name}: the provider refused the credentials ({what}){hint}")

    def _scrub(self, text: str) -> str:
        return redact(text, self._secrets)

    async def _send(
        self,
        client: httpx.AsyncClient,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        seed: int,
        served: Sequence[str | None],
    ) -> Turn:
        path, body = self.wire.request(system, messages, tools, seed)
        try:
            resp = await client.post(self.base_url + path, json=body, headers=self._headers)
        except httpx.TimeoutException:
            raise ProviderError("request timed out", RetryDecision(True, "transient")) from None
        except httpx.TransportError as exc:
            raise ProviderError(
                f"transport error {type(exc).__name__}", RetryDecision(True, "transient")
            ) from None
        text = self._scrub(resp.text)  # a provider may echo the key back in any body
        self._check_auth(resp.status_code, text)
        if resp.status_code != 200:
            where = f" to {public_url(resp.headers.get('location', ''))}" if resp.is_redirect else ""
            detail = text[:200].replace("\n", " ")
            if resp.status_code in (400, 413) and CONTEXT_OVERFLOW.search(text):
                raise ContextOverflow(f"HTTP {resp.status_code}: {detail}")
            raise ProviderError(
                f"HTTP {resp.status_code}{where}: {detail}",
                classify_status(resp.status_code, resp.headers.get("retry-after")),
            )
        turn = self.wire.parse(_decode(text, resp.headers.get("content-type", "")))
        _check_turn(turn)
        if why := served_problem(self.model, served, turn.served, self.aliases):
            raise ProviderError(why, INVALID)  # refused before any of its tool calls runs
        return turn

    async def run(self, episode: Episode) -> AgentResult:
        task = episode.task
        messages = self.wire.start(task.system_prompt, task.user_prompt)
        tools = [self.wire.tool_schema(t) for t in episode.tools.values()]
        usage = Usage()
        calls: list[dict[str, Any]] = []  # each answered model call: ordinal, seed sent, served id
        served: list[str | None] = []
        tool_errors: list[str] = []

        def ended(final: str | None, **kw: Any) -> AgentResult:
            return AgentResult(
                final,
                usage=usage,
                transcript=messages,
                model_calls=calls,
                served_model=served[0] if served else None,
                events=final_message_events(final, tool_errors) if final is not None else [],
                **kw,
            )

        client = httpx.AsyncClient(timeout=self.timeout_s, follow_redirects=False, verify=_tls_context())
        async with client:
            for step in range(episode.max_steps):
                seed = request_seed(episode.seed, step + 1)
                try:
                    turn = await with_retries(
                        functools.partial(
                            self._send, client, task.system_prompt, messages, tools, seed, served
                        ),
                        attempts=self.attempts,
                        base_delay=self.base_delay,
                    )
                except ProviderError as exc:
                    return ended(None, error=f"provider: {exc}", failure="provider")
                except ContextOverflow as exc:
                    first = step == 0  # the task alone does not fit: the agent never acted
                    why = (
                        f"provider: the task's first request exceeds the model's context window ({exc})"
                        if first
                        else f"model: the conversation outgrew the model's context window ({exc})"
                    )
                    failure: Failure = "provider" if first else "agent"
                    return ended(None, error=why, failure=failure)
                except AgentError as exc:
                    return ended(None, error=f"model: {exc}", failure="agent")
                usage.add(turn.usage)
                served.append(turn.served)
                calls.append(
                    {
                        "ordinal": step + 1,
                        "seed": seed if self.wire.sends_seed else None,
                        "served_model": turn.served,
                    }
                )
                if not turn.tool_calls:
                    self.wire.append(messages, turn, [])
                    return ended(turn.text or "")
                results = []
                for call in turn.tool_calls:
                    result = await episode.call(call.name, call.arguments)
                    results.append((call.id, result.text(), not result.ok))
                    if not result.ok:
                        tool_errors.append(result.text())
                self.wire.append(messages, turn, results)
        return ended(None, stalled=True)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default verifying context, built once: building it loads the CA bundle, ~20 ms of CPU on
    the event loop, which paid per run held 128 concurrent runs back (bench/model_bound.py)."""
    return httpx.create_ssl_context()


def _decode(text: str, content_type: str) -> dict[str, Any]:
    try:
        body = loads(text)
    except RecursionError:
        # Valid JSON nested past the parser's limit: that is what the model wrote in its tool input.
        raise ModelOutputError("the model's turn is nested too deeply to read") from None
    except ValueError:
        kind = content_type.split(";")[0].strip() or "no content type"
        raise ProviderError(f"HTTP 200 with a body that is not JSON ({kind})", INVALID) from None
    if not isinstance(body, dict):
        raise ProviderError(f"HTTP 200 with a JSON {type(body).__name__}, not an object", INVALID)
    return body


def _check_turn(turn: Turn) -> None:
    if turn.stop == "filtered":
        raise ProviderError("the provider's content filter cut the turn", INVALID)
    if turn.stop == "length" and not any(parse_arguments(c.arguments)[1] is None for c in turn.tool_calls):
        raise ProviderError("the turn hit the token limit with no usable tool call", INVALID)
    if not turn.tool_calls and not (turn.text and turn.text.strip()):
        raise ProviderError("an assistant turn with neither text nor tool calls", INVALID)
    if not turn.tool_calls and (why := not_an_answer(turn.text)):
        raise ProviderError(why, INVALID)


def _error_type(text: str) -> str | None:
    """The `error.type` of an error body ({"error": {"type": ...}}), if it has one."""
    if "error" not in text:
        return None
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return None
    error = body.get("error") if isinstance(body, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    return kind if isinstance(kind, str) else None


def text_of(content: Any) -> str | None:
    """A message's text: a string, null, or a list of text parts; anything else is the model's error."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        parts = [p.get("text") for p in content if p.get("type") == "text"]
        if all(isinstance(p, str) for p in parts):
            return "\n".join(parts)  # type: ignore[arg-type]
    raise ModelOutputError(f"the message content is {json_kind(content)}, not text")


def json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "an object" if isinstance(value, dict) else f"a {type(value).__name__}"


def tokens(usage: Any, key: str) -> int:
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def public_url(url: str) -> str:
    """The URL without credentials or query (where keys hide), for manifests and messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _secrets_of(headers: dict[str, str], base_url: str) -> list[str]:
    secrets = []
    for name, value in headers.items():
        if name.lower() in ("authorization", "x-api-key", "api-key"):
            secrets.append(value)
            secrets.append(value.split(" ", 1)[-1])  # the bare key of "Bearer <key>"
    parts = urlsplit(base_url)
    return secrets + [p for p in (parts.password, parts.username, parts.query) if p]


def require_key(env: dict[str, str], var: str, name: str) -> str:
    key = env.get(var)
    if not key:
        raise ConfigError(f"{name}: set {var} (the API key) before auditing this model")
    return key
