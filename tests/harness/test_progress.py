"""Progress outside a terminal: plain lines from the first second, every so often, and at the end, with a
resumed audit's counts labelled as this session's. The clock is a counter the test moves: no sleeps."""

from __future__ import annotations

import io

from agentrel.harness.run.progress import ProgressManager, plain_line


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_piped_progress_prints_a_line_at_start_every_interval_and_at_the_end():
    stream, clock = io.StringIO(), Clock()
    with ProgressManager(10, 0, stream=stream, every_s=10.0, clock=clock) as p:
        for i in range(10):
            clock.now += 3.0  # 3 s a run: a line every fourth run or so
            p.attempted(damaging=i % 3 == 0, invalid=i == 9, retry=False)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "audit 0/10 runs (0%), 0.00 runs/s, 0 damaging, 0 invalid, 0 retries"
    assert lines[1].startswith(
        "audit 4/10 runs (40%), 0.33 runs/s, 2 damaging, 0 invalid, 0 retries, ETA 18s"
    )
    assert lines[-1] == "audit 10/10 runs (100%), 0.33 runs/s, 4 damaging, 1 invalid, 0 retries"
    assert 3 <= len(lines) <= 5 and "━" not in stream.getvalue()  # no bar drawn into a log


def test_a_resumed_audit_labels_its_counts_as_this_sessions():
    stream, clock = io.StringIO(), Clock()
    with ProgressManager(320, 300, stream=stream, clock=clock) as p:
        clock.now += 2.0
        p.attempted(damaging=False, invalid=False, retry=True)
        p.attempted(damaging=True, invalid=False, retry=False)
    last = stream.getvalue().splitlines()[-1]
    assert last == (
        "audit 301/320 runs (94%), 0.50 runs/s, this session: 1 damaging, 0 invalid, 1 retries, "
        "ETA 38s (300 recorded before)"
    )


def test_the_plain_line_never_cuts_a_number():
    line = plain_line(1_234_567, 1_000_000, 0, 1_000_000, 3600.0, (123_456, 7, 0))
    assert (
        "1,000,000/1,234,567" in line and "123,456 damaging" in line and "ETA 14m04s" in line
    )  # 234,567 left at 277.8 runs/s: 844 s
