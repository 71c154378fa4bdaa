"""A small OpenAI-compatible chat server over llama-cpp-python that serves a GGUF with its own template.

    <venv>/bin/python harness/serving/llama_server.py --model M.gguf --alias NAME --port 8080 [--threads N]

Run in a virtual environment with llama-cpp-python (it brings jinja2); AgentRel itself need not be
installed there. What it does that a generic chat format does not:

- renders the model's own chat template (the GGUF's `tokenizer.chat_template`, or `--template FILE`)
  with the tools and every tool result, after `chat_template.check_template` proved on a probe that the
  model will see tool descriptions, its own calls and tool results;
- reads the model's `<tool_call>` JSON back as tool calls (and, as llama.cpp's parser for the format
  does, a fenced ```json call to an offered tool), and lets it answer in text whenever it likes
  (`tool_choice` is always "auto"); a request may carry `seed`, which seeds the sampler;
- loads with `use_extra_bufts = false` in the model parameters: llama-cpp-python 0.3.36's default build
  crashes (SIGSEGV in `ggml_backend_amx_mul_mat`) at the first decode on CPUs with AMX;
- describes itself: `GET /v1/models` (the alias, with the weights' size, parameter count, training
  context and SHA-256) and `GET /props` (the model file, the template, the build), which AgentRel keeps
  in the subject's config; each request's token counts and timings are appended to `--stats FILE`.

One model, one context: requests are served one at a time (llama-cpp-python reuses the longest common
prompt prefix of consecutive requests, which `agentrel audit --order task` makes long). A client that
gives up on a request does not stop it: the generation runs to its end, then the answer is dropped.
Loopback by default; it has no authentication.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

try:
    from agentrel.harness.serving.chat_template import (
        ChatTemplate,
        TemplateError,
        check_template,
        parse_reply,
    )
except ImportError:  # run as a script in the server's own environment, where AgentRel is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from chat_template import (  # type: ignore[import-not-found,no-redef]
        ChatTemplate,
        TemplateError,
        check_template,
        parse_reply,
    )

DEFAULT_MAX_TOKENS = 1024


class Model:
    """The loaded weights, their template and what the server says about them."""

    def __init__(self, args: argparse.Namespace) -> None:
        llama_cpp = importlib.import_module("llama_cpp")
        self.llama_cpp = llama_cpp
        without_extra_buffer_types(importlib.import_module("llama_cpp.llama_cpp"))
        self.path = Path(args.model)
        self.alias = args.alias
        self.n_ctx = args.n_ctx
        self.llm = llama_cpp.Llama(
            model_path=str(self.path),
            n_ctx=args.n_ctx,
            n_threads=args.threads,
            n_threads_batch=args.threads,
            verbose=False,
        )
        if getattr(self.llm.model_params, "use_extra_bufts", False):
            sys.exit(f"{self.path}: loaded with the extra (AMX) buffer types; this build would crash on AMX")
        source = Path(args.template).read_text() if args.template else None
        source = source or self.llm.metadata.get("tokenizer.chat_template")
        if not source:
            sys.exit(f"{self.path}: the GGUF carries no chat template; give one with --template FILE")
        self.template = ChatTemplate(
            source, bos_token=self._token(self.llm.token_bos()), eos_token=self._token(self.llm.token_eos())
        )
        try:
            check_template(self.template)
        except TemplateError as exc:
            sys.exit(f"{self.path}: {exc}")
        self.sha256 = _sha256(self.path)
        self.lock = threading.Lock()
        self.stats = Path(args.stats) if args.stats else None

    def _token(self, token: int) -> str:
        if token < 0:
            return ""
        return bytes(self.llm.detokenize([token], special=True)).decode("utf-8", "replace")

    def listing(self) -> dict[str, Any]:
        meta = {
            "size": self.path.stat().st_size,
            "sha256": self.sha256,
            "n_params": self.llm.metadata.get("general.size_label"),
            "n_ctx_train": self.llm.metadata.get(
                f"{self.llm.metadata.get('general.architecture')}.context_length"
            ),
            "name": self.llm.metadata.get("general.name"),
            "quantization": self.llm.metadata.get("general.file_type"),
        }
        entry = {"id": self.alias, "object": "model", "owned_by": "agentrel-llama-server", "meta": meta}
        return {"object": "list", "data": [entry]}

    def props(self) -> dict[str, Any]:
        return {
            "model_path": self.path.name,
            "model_alias": self.alias,
            "chat_template": self.template.source,
            "build_info": f"llama-cpp-python {getattr(self.llama_cpp, '__version__', '?')} (agentrel server)",
            "total_slots": 1,
            "default_generation_settings": {"n_ctx": self.n_ctx},
        }

    def chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            return 400, _error("messages must be a list of objects", "invalid_request_error")
        tools = body.get("tools") or None
        try:
            prompt = self.template.render(messages, tools)
        except TemplateError as exc:
            return 400, _error(str(exc), "invalid_request_error")
        tokens = self.llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        room = self.n_ctx - len(tokens)
        if room < 16:
            return 400, _error(
                f"the request ({len(tokens)} tokens) exceeds the available context size ({self.n_ctx})",
                "exceed_context_size_error",
            )
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens") or DEFAULT_MAX_TOKENS
        seed = body.get("seed")
        with self.lock:
            t0 = time.perf_counter()
            perf = self._perf_reset()
            out = self.llm.create_completion(
                prompt=tokens,
                max_tokens=min(int(max_tokens), room),
                temperature=float(body.get("temperature", 0.8)),
                top_p=float(body.get("top_p", 0.95)),
                seed=int(seed) if isinstance(seed, int) else None,
                stop=[s for s in (self.template.eos_token, "<|im_end|>", "<|endoftext|>") if s],
            )
            seconds = time.perf_counter() - t0
            timings = self._perf(perf)
        choice = out["choices"][0]
        offered = [t["function"]["name"] for t in tools or () if isinstance(t, dict) and "function" in t]
        prefix = f"call_{int(t0 * 1000) % 10**9}"
        reply = parse_reply(choice.get("text") or "", call_prefix=prefix, tools=offered)
        finish = "length" if choice.get("finish_reason") == "length" else reply.finish_reason
        usage = out.get("usage") or {}
        self._log({"seconds": round(seconds, 3), "seed": seed, **usage, **timings, "finish": finish})
        return 200, {
            "id": out.get("id", "chatcmpl-local"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.alias,
            "choices": [{"index": 0, "message": reply.message(), "finish_reason": finish}],
            "usage": {
                "prompt_tokens": usage.get("prompt_tokens", len(tokens)),
                "completion_tokens": usage.get("completion_tokens", 0),
                "total_tokens": usage.get("total_tokens", 0),
            },
        }

    def _perf_reset(self) -> bool:
        try:
            self.llama_cpp.llama_perf_context_reset(self.llm._ctx.ctx)
            return True
        except Exception:  # an older or newer binding: timings then come from the wall clock only
            return False

    def _perf(self, available: bool) -> dict[str, Any]:
        if not available:
            return {}
        try:
            p = self.llama_cpp.llama_perf_context(self.llm._ctx.ctx)
        except Exception:
            return {}
        return {
            "prompt_eval_tokens": int(p.n_p_eval),
            "prompt_eval_ms": round(float(p.t_p_eval_ms), 1),
            "gen_tokens": int(p.n_eval),
            "gen_ms": round(float(p.t_eval_ms), 1),
        }

    def _log(self, entry: dict[str, Any]) -> None:
        if self.stats is not None:
            with self.stats.open("a") as fh:
                fh.write(json.dumps(entry) + "\n")


def without_extra_buffer_types(low_level: Any) -> None:
    """Make every model load without llama.cpp's extra buffer types (weight repacking for AMX).

    llama-cpp-python 0.3.36's default build crashes (SIGSEGV in `ggml_backend_amx_mul_mat`) at the first
    decode on CPUs with AMX otherwise. `Llama(...)` takes no such option (it silently ignores unknown
    keyword arguments), so the default model parameters it starts from are changed instead."""
    default = low_level.llama_model_default_params
    if getattr(default, "agentrel_without_extra_bufts", False):
        return

    def params() -> Any:
        made = default()
        made.use_extra_bufts = False
        return made

    params.agentrel_without_extra_bufts = True  # type: ignore[attr-defined]
    low_level.llama_model_default_params = params


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": 400}}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def make_server(model: Model, host: str, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, model.listing())
            elif self.path.rstrip("/") == "/props":
                self._send(200, model.props())
            elif self.path.rstrip("/") == "/health":
                self._send(200, {"status": "ok"})
            else:
                self._send(404, _error(f"no route {self.path}", "not_found_error"))

        def do_POST(self) -> None:
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._send(404, _error(f"no route {self.path}", "not_found_error"))
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            except ValueError:
                self._send(400, _error("the body is not JSON", "invalid_request_error"))
                return
            if not isinstance(body, dict):
                self._send(400, _error("the body is not a JSON object", "invalid_request_error"))
                return
            self._send(*model.chat(body))

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload, ensure_ascii=False).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up on this request (its timeout); the answer is dropped

    return ThreadingHTTPServer((host, port), Handler)


def serve(model: Model, host: str, port: int) -> None:
    server = make_server(model, host, port)
    print(f"serving {model.alias} ({model.path.name}) on http://{host}:{port}/v1", flush=True)
    server.serve_forever()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--alias", required=True, help="the model id served (what `openai/<id>` asks for)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--n-ctx", type=int, default=16384)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--template", help="a chat template file to use instead of the GGUF's")
    parser.add_argument("--stats", help="append each request's token counts and timings here (JSONL)")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    serve(Model(args), args.host, args.port)


if __name__ == "__main__":
    main()
