"""A newcomer's first `make audit MODEL=reference/stochastic K=16` on a fresh clone, timed (issue 33).

Clones this repository's HEAD into a temporary folder, runs the audit target there exactly as the README
says (it creates `.venv`, installs what an audit needs, starts a private Postgres, builds the templates and
audits every task 16 times), with AGENTREL_HOME inside the clone so nothing is shared with the user's
state, and timestamps every line it prints. Then it stops the clone's cluster and deletes the clone.

Last line: `first_audit_seconds` (the whole command), `first_line_s` (make's first line), `setup_s` (until
make starts `agentrel audit`: the venv and the install), `first_output_s` (from there to agentrel's first
line), `audit_s` (agentrel audit itself: cluster, templates, runs, report), `cluster_s` and
`templates_s` (its parts before the first run), `runs` and the load average before and after. The target
is at most 75 s on a quiet machine, with output in the first second.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# What the first lines of each phase look like (harness/cli, sandbox/servers, the Makefile's echo).
AUDIT_STARTS = re.compile(r"^\.venv/bin/agentrel audit ")
CLUSTER_LINE = re.compile(r"^agentrel: .*(Postgres|cluster)", re.IGNORECASE)
TEMPLATE_LINE = re.compile(r"^agentrel: (building|built) the template")
FIRST_PROGRESS = re.compile(r"^audit \d+/\d+ runs")
DONE_RUNS = re.compile(r"^audit (\d+)/(\d+) runs \(100%\)")


def clean_environment(home: Path) -> dict[str, str]:
    """The user's environment without anything that would point the clone at another venv or home."""
    # PYTHONDONTWRITEBYTECODE too: a newcomer's Python keeps the byte code it compiles on the first import.
    drop = ("AGENTREL_", "VIRTUAL_ENV", "PYTHON", "MAKEFLAGS", "MAKELEVEL")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["AGENTREL_HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"  # what a terminal shows line by line, through this pipe
    # A newcomer's caches are empty too: the evaluator's file-hash cache, matplotlib's font cache, pip's.
    env["XDG_CACHE_HOME"] = str(home.parent / ".cache")
    return env


def timed_lines(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, list[tuple[float, str]], float]:
    """Run `cmd`, stdout and stderr merged; each line (split at \\n or \\r: pip redraws its bar) with the
    seconds since the start at which its first byte arrived."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    lines: list[tuple[float, str]] = []
    pending, pending_at = b"", 0.0
    while chunk := proc.stdout.read1(65536):
        now = time.monotonic() - start
        if not pending:
            pending_at = now
        pending += chunk
        *whole, pending = re.split(rb"[\r\n]", pending)
        for raw in whole:
            if raw.strip():
                lines.append((pending_at, raw.decode(errors="replace")))
            pending_at = now
    if pending.strip():
        lines.append((pending_at, pending.decode(errors="replace")))
    return proc.wait(), lines, time.monotonic() - start


def first(lines: list[tuple[float, str]], pattern: re.Pattern[str], after: float = 0.0) -> float | None:
    return next((t for t, line in lines if t >= after and pattern.search(line)), None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--keep", action="store_true", help="keep the clone (.venv, results, cluster files)")
    args = parser.parse_args()

    where = Path(tempfile.mkdtemp(prefix="agentrel-first-audit-"))
    clone = where / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    home = clone / ".agentrel-home"
    env = clean_environment(home)
    load_before = os.getloadavg()[0]
    try:
        rc, lines, total = timed_lines(
            ["make", "audit", "MODEL=reference/stochastic", f"K={args.k}"], cwd=clone, env=env
        )
    finally:
        load_after = os.getloadavg()[0]
        agentrel = clone / ".venv" / "bin" / "agentrel"
        if agentrel.exists():
            subprocess.run([str(agentrel), "sandbox", "down"], env=env, capture_output=True, timeout=120)
    for t, line in lines:
        if not line.startswith(("  ", "Requirement", "Collecting", "Using cached", "Downloading")):
            print(f"{t:7.2f}  {line[:150]}")
    if rc != 0:
        print(f"make audit failed (exit {rc}); the clone is kept at {clone}", file=sys.stderr)
        return 1
    audit_at = first(lines, AUDIT_STARTS)
    assert audit_at is not None, "make never started agentrel audit"
    agentrel_lines = [(t, s) for t, s in lines if t >= audit_at and not AUDIT_STARTS.search(s)]
    first_output = agentrel_lines[0][0] - audit_at if agentrel_lines else float("nan")
    progress = first(lines, FIRST_PROGRESS, audit_at)
    templates_at = first(lines, TEMPLATE_LINE, audit_at)
    cluster_s = (templates_at or progress or total) - audit_at
    templates_s = (progress - templates_at) if progress is not None and templates_at is not None else 0.0
    runs = next((m.group(1) for _, s in reversed(lines) if (m := DONE_RUNS.search(s))), "-")
    if not args.keep:
        shutil.rmtree(where, ignore_errors=True)
    print(
        f"first_audit_seconds={total:.1f} first_line_s={lines[0][0]:.2f} setup_s={audit_at:.1f} "
        f"first_output_s={first_output:.2f} audit_s={total - audit_at:.1f} cluster_s={cluster_s:.1f} "
        f"templates_s={templates_s:.1f} runs={runs} load1_before={load_before:.1f} load1={load_after:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
