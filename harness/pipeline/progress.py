"""How long work reports progress: a protocol, and log lines as the default."""

from __future__ import annotations

import time
from typing import Protocol

from loguru import logger


class ProgressSink(Protocol):
    """Where long work reports how far it got: the CLI draws a bar on a terminal; the
    default writes a log line every few seconds."""

    def start(self, total: int, description: str) -> None:
        """A new piece of work of `total` steps begins."""
        ...

    def advance(self, note: str = "") -> None:
        """One step is done; `note` says what it cost so far."""
        ...

    def stop(self) -> None:
        """The work ended (finished, failed or interrupted)."""
        ...


class LogProgress:
    """Progress as log lines, at most every `every_s` seconds and at the end: for logs,
    pipes and notebooks."""

    def __init__(self, every_s: float = 5.0) -> None:
        self.every_s = every_s
        self.total, self.done, self.what = 0, 0, ""
        self._start = self._last = time.monotonic()

    def start(self, total: int, description: str) -> None:
        """Reset the count and the clock for new work."""
        self.total, self.done, self.what = total, 0, description
        self._start = self._last = time.monotonic()

    def advance(self, note: str = "") -> None:
        """Count a step; log it with the ETA if `every_s` has passed or it was the last step."""
        self.done += 1
        now = time.monotonic()
        if self.done == self.total or now - self._last >= self.every_s:
            self._last = now
            rate = self.done / max(now - self._start, 1e-9)
            eta = (self.total - self.done) / rate if rate > 0 else 0
            logger.info("{} {}/{} ({:.0f} s left) {}", self.what, self.done, self.total, eta, note)

    def stop(self) -> None:
        """Nothing to close: the last step already logged its line."""
        pass
