"""A progress bar for long work on a terminal (rich): elapsed, rate, ETA."""

from __future__ import annotations

from typing import Any


class BarProgress:
    """A `pipeline.ProgressSink` drawing a rich progress bar on stderr."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._task: Any = None

    def start(self, total: int, description: str) -> None:
        """Close any bar still drawn and draw a new one of `total` steps."""
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.stop()
        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[note]}"),
            console=Console(stderr=True),
            transient=False,
        )
        self._bar.start()
        self._task = self._bar.add_task(description, total=total, note="", rate="")

    def advance(self, note: str = "") -> None:
        """Move the bar one step and show the rate; a no-op before `start()`."""
        if self._bar is None:
            return
        task = self._bar.tasks[0]
        speed = task.speed
        rate = f"{speed:.2f}/s" if speed else ""
        self._bar.update(self._task, advance=1, note=note, rate=rate)

    def stop(self) -> None:
        """Stop drawing and leave the finished bar on screen; safe to call twice."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
