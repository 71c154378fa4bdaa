"""`--help` says what the code says: brackets and placeholders as written, flags as flags, docstrings'
hard line breaks not the reader's, and no box tables into a pipe (harness/cli/help_format.py, tables.py)."""

from __future__ import annotations

import os
import subprocess
import sys


def _help(*args: str) -> str:
    res = subprocess.run(
        [sys.executable, "-m", "agentrel.harness.cli", *args, "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "150", "TERM": "dumb"},
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_brackets_and_placeholders_in_help_are_shown_as_written():
    text = _help("analyze")
    assert "Report directory [default: <results>/analysis]." in text  # Rich markup would drop the brackets
    assert "Confidence of the certificates [0.95]." in text
    assert "or bonferroni [union]." in text


def test_a_flag_is_shown_without_a_value():
    text = _help("analyze")
    line = next(x for x in text.splitlines() if "--no-figures" in x)
    assert "<bool>" not in text and "bool" not in line
    assert "<float>" in next(x for x in text.splitlines() if "--target-p " in x)  # options keep theirs


def test_the_root_help_does_not_break_sentences_where_the_docstring_wrapped():
    text = _help()
    analyze = next(x for x in text.splitlines() if " analyze " in x)
    assert "dollars; write the reports" in analyze


def test_env_list_into_a_pipe_is_plain_columns():
    res = subprocess.run(
        [sys.executable, "-m", "agentrel.harness.cli", "env", "list"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0].split() == ["name", "fingerprint", "verticals", "description"]
    assert not any(ch in res.stdout for ch in "┏┃━│╭")
