"""Requests- and tokens-per-minute budgets for one endpoint, shared by every request of
the process (coroutines on the event loop and threads alike)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class RateLimiter:
    """Requests-per-minute and tokens-per-minute budgets for one endpoint (token buckets),
    shared by every caller: `aacquire` on the event loop (the chat client), `acquire` in a
    thread. A budget of 0 is unlimited."""

    def __init__(
        self,
        requests_per_minute: float = 0,
        tokens_per_minute: float = 0,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.rpm, self.tpm = requests_per_minute, tokens_per_minute
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._req = float(requests_per_minute)
        self._tok = float(tokens_per_minute)
        self._last = clock()
        self.waited_s = 0.0

    def _refill(self) -> None:
        now = self._clock()
        elapsed, self._last = now - self._last, now
        if self.rpm:
            self._req = min(self.rpm, self._req + elapsed * self.rpm / 60)
        if self.tpm:
            self._tok = min(self.tpm, self._tok + elapsed * self.tpm / 60)

    def acquire(self, tokens: int) -> float:
        """Block until one request of about `tokens` tokens fits both budgets; returns the
        seconds waited. A request larger than the whole token budget waits for a full bucket."""
        waited = 0.0
        while True:
            wait = self._take(tokens, waited)
            if wait == 0.0:
                return waited
            self._sleep(wait)
            waited += wait

    async def aacquire(self, tokens: int) -> float:
        """`acquire` for a coroutine on an event loop: waits with asyncio.sleep (or the
        injected `sleep` of a test), so the loop serves other requests meanwhile."""
        import asyncio

        waited = 0.0
        while True:
            wait = self._take(tokens, waited)
            if wait == 0.0:
                return waited
            if self._sleep is time.sleep:
                await asyncio.sleep(wait)
            else:
                self._sleep(wait)
            waited += wait

    def _take(self, tokens: int, waited: float) -> float:
        """Take one request of `tokens` from the buckets and return 0.0, or return the
        seconds to wait before it fits (taking nothing)."""
        need_tok = min(float(tokens), self.tpm) if self.tpm else 0.0
        with self._lock:
            self._refill()
            wait = 0.0
            if self.rpm and self._req < 1:
                wait = max(wait, (1 - self._req) * 60 / self.rpm)
            if self.tpm and self._tok < need_tok:
                wait = max(wait, (need_tok - self._tok) * 60 / self.tpm)
            if wait == 0.0:
                if self.rpm:
                    self._req -= 1
                if self.tpm:
                    self._tok -= need_tok
                self.waited_s += waited
            return wait
