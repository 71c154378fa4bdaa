"""Progress of an audit on stderr: a bar with M/N, ETA, runs/s, damage, invalid runs and retries so far.

In a terminal it is a live bar. Anywhere else (CI, `nohup`, `tee`, a pipe) a live bar prints nothing
until the end, so a plain line is printed instead at the start, then every `every_s` seconds while runs
land, then at the end: `audit 120/320 runs (37%), 9.8 runs/s, this session: 14 damaging, 0 invalid,
0 retries, ETA 20s`. The damaging and invalid counts are of the runs attempted in this session: a resumed
audit's runs recorded earlier are in M/N but not in those counts, and the labels say so.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn


def plain_line(
    total: int, done: int, already: int, new: int, elapsed: float, counts: tuple[int, int, int]
) -> str:
    """The line printed outside a terminal (pure: the numbers in, the words out)."""
    damaging, invalid, retries = counts
    rate = new / elapsed if elapsed > 0 else 0.0
    share = f" ({done * 100 // total}%)" if total else ""
    line = f"audit {done:,}/{total:,} runs{share}, {rate:.2f} runs/s, "
    line += "this session: " if already else ""
    line += f"{damaging:,} damaging, {invalid:,} invalid, {retries:,} retries"
    left = total - done
    if left and new and rate > 0:
        line += f", ETA {_duration(left / rate)}"
    if already:
        line += f" ({already:,} recorded before)"
    return line


def _duration(seconds: float) -> str:
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


class ProgressManager:
    def __init__(
        self,
        total: int,
        already: int,
        enabled: bool = True,
        *,
        stream: TextIO | None = None,
        every_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total, self.done, self.damaging, self.invalid, self.retries = total, already, 0, 0, 0
        self.already = already
        self._clock = clock
        self._started = clock()
        self._new = 0
        self._stream = stream or sys.stderr
        self._plain = enabled and not self._stream.isatty()
        self._every_s, self._last_line = every_s, self._started
        # A resumed audit's bar counts only this session's damage: say so, beside what was recorded.
        session = "this session: " if already else ""
        self._progress = Progress(
            TextColumn("[bold]audit"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            TextColumn(
                "{task.fields[rate]} runs/s  " + session + "damaging {task.fields[damage]}  "
                "invalid {task.fields[invalid]}  retries {task.fields[retries]}"
                + (f"  ({already} recorded before)" if already else "")
            ),
            console=Console(file=self._stream),
            disable=not enabled or self._plain,
            transient=False,
        )
        self._task = self._progress.add_task(
            "audit", total=total, completed=already, rate="-", damage=0, invalid=0, retries=0
        )

    def __enter__(self) -> ProgressManager:
        self._progress.start()
        if self._plain:
            self._say()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()
        if self._plain and self._new:
            self._say()

    def _say(self) -> None:
        elapsed = self._clock() - self._started
        counts = (self.damaging, self.invalid, self.retries)
        self._stream.write(plain_line(self.total, self.done, self.already, self._new, elapsed, counts) + "\n")
        self._stream.flush()
        self._last_line = self._clock()

    def attempted(self, *, damaging: bool, invalid: bool, retry: bool) -> None:
        """One attempt ended; `retry` says the run will be attempted again (so it is not done yet)."""
        if retry:
            self.retries += 1
        else:
            self.done += 1
            self._new += 1
            self.damaging += damaging
            self.invalid += invalid
        if self._plain:
            if self._clock() - self._last_line >= self._every_s and self.done < self.total:
                self._say()
            return
        rate = self._new / max(self._clock() - self._started, 1e-9)
        self._progress.update(
            self._task,
            completed=self.done,
            rate=f"{rate:.2f}",
            damage=self.damaging,
            invalid=self.invalid,
            retries=self.retries,
        )

    def skipped(self) -> None:
        """A planned run left unrun because its cell was decided (--until): it counts as done."""
        self.done += 1
        self._progress.update(self._task, completed=self.done)

    @property
    def runs_per_second(self) -> float:
        return self._new / max(self._clock() - self._started, 1e-9)
