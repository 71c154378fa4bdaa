"""`agentrel tasks show` prints prompts verbatim: the YAML reads back to the task's exact prompts, and
`--prompt` writes one prompt byte for byte (it once printed doubled quotes and a blank line per line)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from agentrel.harness.tasks import load_suite

TASKS = ["csm-double-charge", "itsm-cab-window"]


def show(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "agentrel.harness.cli", "tasks", "show", *args],
        capture_output=True,
        timeout=60,
    )


@pytest.mark.parametrize("task_id", TASKS)
def test_show_round_trips_and_prints_prompts_verbatim(task_id):
    task = load_suite(patterns=[task_id])[0]
    done = show(task_id)
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode("utf-8")
    shown = yaml.safe_load(text)
    assert shown["user_prompt"] == task.user_prompt and shown["system_prompt"] == task.system_prompt
    # Each prompt line appears as a line of the output, unquoted and not followed by a blank line.
    first = task.system_prompt.splitlines()[0]
    assert f"  {first}\n" in text and f"  {first}\n\n" not in text and "''" not in text
    for which, expected in (("user", task.user_prompt), ("system", task.system_prompt)):
        done = show(task_id, "--prompt", which)
        assert done.returncode == 0 and done.stdout == expected.encode("utf-8")


def test_bad_prompt_name_is_one_line():
    done = show(TASKS[0], "--prompt", "assistant")
    assert done.returncode == 2
    assert done.stderr.decode().strip().splitlines() == [
        "agentrel: error: --prompt 'assistant': use user or system"
    ]
