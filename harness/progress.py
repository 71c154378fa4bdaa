"""Progress of an audit on stderr: a bar with M/N, ETA, runs/s, damage, invalid runs and retries so far."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn


class ProgressManager:
    def __init__(self, total: int, already: int, enabled: bool = True) -> None:
        self.total, self.done, self.damaging, self.invalid, self.retries = total, already, 0, 0, 0
        self._started = time.monotonic()
        self._new = 0
        self._progress = Progress(
            TextColumn("[bold]audit"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            TextColumn(
                "{task.fields[rate]} runs/s  damage {task.fields[damage]}  invalid {task.fields[invalid]}"
                "  retries {task.fields[retries]}"
            ),
            console=Console(stderr=True),
            disable=not enabled,
            transient=False,
        )
        self._task = self._progress.add_task(
            "audit", total=total, completed=already, rate="-", damage=0, invalid=0, retries=0
        )

    def __enter__(self) -> ProgressManager:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def attempted(self, *, damaging: bool, invalid: bool, retry: bool) -> None:
        """One attempt ended; `retry` says the run will be attempted again (so it is not done yet)."""
        if retry:
            self.retries += 1
        else:
            self.done += 1
            self._new += 1
            self.damaging += damaging
            self.invalid += invalid
        rate = self._new / max(time.monotonic() - self._started, 1e-9)
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
        return self._new / max(time.monotonic() - self._started, 1e-9)
