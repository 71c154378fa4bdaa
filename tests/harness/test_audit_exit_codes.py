"""The audit's exit code when every run stays invalid: 1 (README "Errors": an audit left runs invalid),
not the 3 that analysing a results directory with no valid run would give."""

import os
import subprocess
import sys

from agentrel.harness.results.directory import ResultsDir
from tests.harness.fake_provider import LLAMA_CPP, FakeProvider

TASK = "itsm-cab-window"


def test_an_audit_whose_every_run_is_invalid_exits_1_with_one_line(sandbox, tmp_path):
    results = tmp_path / "r"
    with FakeProvider(accept_key="k") as fake:
        fake.queue_reply(LLAMA_CPP["context_overflow_400"])  # not retried: provider_invalid at once
        done = subprocess.run(
            [sys.executable, "-m", "agentrel.harness.cli", "audit", "--model", "openai/x", "--k", "1",
             "--tasks", TASK, "--max-attempts", "1", "--results", str(results)],
            capture_output=True, text=True, timeout=300,
            env={**os.environ, "OPENAI_BASE_URL": fake.url, "OPENAI_API_KEY": "k"},
        )  # fmt: skip
    records = ResultsDir(results).records()
    assert records and all(r.status == "provider_invalid" for r in records)
    assert done.returncode == 1, done.stderr
    text = " ".join(done.stderr.split())  # rich wraps the line at the terminal width
    assert "still invalid" in text and "no report written" in text and "no valid runs" not in text, text
    assert "Traceback" not in done.stderr and not (results / "analysis").exists()
