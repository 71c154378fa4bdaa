"""SIGTERM stops an audit the way Ctrl-C does (issue 25 item 8): whole records, no run database left.

The audit is a real subprocess started as a background job is (SIGINT ignored), auditing a loopback
provider that holds its answer back; the signal is sent when the provider has received the run's request
(an event: the run is in flight, its database cloned), never after a count of seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

from tests.harness.fake_provider import FakeProvider, openai_text, openai_tool_call

TASK = "itsm-cab-window"


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as `command &` leaves a background job


def test_sigterm_mid_run_stops_cleanly_with_whole_records_and_no_run_databases(sandbox, tmp_path):
    results = tmp_path / "r"
    held = threading.Event()
    # Run 1 is answered (a read, then an answer); run 2's first request is held until the signal.
    with FakeProvider(hold=held, hold_after=2) as fake:
        fake.queue(200, openai_tool_call("c1", "list_cab_approvals", '{"change_id": 9002}'))
        fake.queue(200, openai_text("Nothing to schedule."))
        fake.queue(200, openai_text("never sent"))
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentrel.harness.cli", "audit", "-m", "openai/qwen", "--k", "2",
             "--tasks", TASK, "-j", "1", "--results", str(results), "--no-report", "--max-attempts", "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "OPENAI_BASE_URL": fake.url},
            preexec_fn=_ignore_sigint,
        )  # fmt: skip
        try:
            assert fake.holding.wait(timeout=300), "run 2 never asked the model"
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=120)
        finally:
            held.set()
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    lines = (results / "runs.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) == 1 and lines[0].endswith(b"\n")  # run 1, whole; run 2 in flight: not recorded
    assert json.loads(lines[0])["verdict"] is not None
    assert not [n for n in sandbox.dbs.names("agentrel_run_") if f"_{proc.pid}_" in n]
