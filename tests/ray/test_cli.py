"""`agentrel audit --executor`: one-line usage errors, and a local Ray that listens on loopback only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.ray.conftest import WORKERS

WITHOUT_RAY = (
    "import sys; sys.modules['ray'] = None; sys.argv = ['agentrel', *sys.argv[1:]];"
    "from harness.cli.main import main; main()"
)


def agentrel(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    command = (
        [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "agentrel.harness.cli", *args]
    )
    return subprocess.run(command, capture_output=True, text=True, env=dict(os.environ), timeout=300)


def test_executor_ray_without_ray_installed_says_so_in_one_line(tmp_path):
    out = agentrel("audit", "--executor", "ray", "--results", str(tmp_path / "r"), code=WITHOUT_RAY)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "agentrel: error: --executor ray needs Ray, which is not installed: "
        "pip install -e '.[ray]' in the AgentRel checkout"
    ]
    assert not (tmp_path / "r").exists()


def test_ray_options_on_the_local_executor_and_unknown_executors_are_usage_errors(tmp_path):
    for args, message in (
        (["--workers", "2"], "--ray-address and --workers apply to --executor ray only"),
        (["--executor", "dask"], "--executor must be one of local, ray, got 'dask'"),
    ):
        out = agentrel("audit", *args, "--results", str(tmp_path / "r"))
        assert out.returncode == 2 and out.stderr.strip().splitlines() == [f"agentrel: error: {message}"]


def _listening() -> dict[int, list[str]]:
    """Listening TCP sockets by inode -> their local addresses, from /proc/net/tcp{,6}."""
    out: dict[int, list[str]] = {}
    for name in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{name}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                out.setdefault(int(fields[9]), []).append(fields[1].rsplit(":", 1)[0])
    return out


def _loopback(hex_address: str) -> bool:
    if len(hex_address) == 8:  # IPv4, little-endian
        return bytes.fromhex(hex_address)[::-1] == bytes([127, 0, 0, 1])
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    return words in (bytes(15) + b"\x01", bytes(10) + b"\xff\xff" + bytes([127, 0, 0, 1]))


def test_the_local_ray_listens_on_loopback_only(ray_address):
    assert ray_address.startswith("127.0.0.1:")
    sockets = _listening()
    seen = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            fds = list((proc / "fd").iterdir())
        except OSError:
            continue
        if int(proc.name) != os.getpid() and not any(
            w in cmdline for w in ("gcs_server", "raylet", "ray::", "ray/_private", "default_worker")
        ):
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:[") and int(target[8:-1]) in sockets:
                seen += 1
                addresses = sockets[int(target[8:-1])]
                assert all(_loopback(a) for a in addresses), f"{cmdline[:80]} listens on {addresses}"
    assert seen >= WORKERS  # the GCS, the raylet and the workers at least


def test_executor_ray_starts_its_own_local_ray_when_given_no_address(tmp_path):
    results = tmp_path / "r"
    out = agentrel(
        *("audit", "--executor", "ray", "--workers", "1", "--k", "2", "--tasks", "itsm-cab-window"),
        *("--results", str(results), "--no-report"),
    )
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    from agentrel.harness.results.directory import ResultsDir

    records = ResultsDir(results).records()
    assert len(records) == 2 and all(r.valid for r in records)
