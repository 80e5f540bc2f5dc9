"""One event loop for every asynchronous request of the process, on a daemon thread.

Judging many pairs against a fast endpoint is bound by the client's own CPU, not by the
endpoint: threads pay the GIL and a thread per request, an event loop pays neither. The
loop lives as long as the process, so HTTP connections (and a hosted endpoint's TLS
sessions) are reused from one batch of questions to the next. A forked child gets a
loop of its own.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_state: dict[str, Any] = {"pid": None, "loop": None, "thread": None}
_closers: list[Callable[[], Coroutine[Any, Any, None]]] = []


def loop() -> asyncio.AbstractEventLoop:
    """The process's background event loop, started on first use."""
    with _lock:
        thread = _state.get("thread")
        if _state["pid"] != os.getpid() or thread is None or not thread.is_alive():
            new = asyncio.new_event_loop()
            thread = threading.Thread(target=new.run_forever, name="harness-llm-loop", daemon=True)
            thread.start()
            _state.update(pid=os.getpid(), loop=new, thread=thread)
            _closers.clear()
        return _state["loop"]


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Run `coro` on the background loop; its result (or exception) in a Future."""
    return asyncio.run_coroutine_threadsafe(coro, loop())


def on_exit(close: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Await `close()` on the loop when the process exits (e.g. an HTTP session's)."""
    with _lock:
        _closers.append(close)


@atexit.register
def _close_all() -> None:
    with _lock:
        closers, running = list(_closers), _state["loop"]
        _closers.clear()
    if running is None or _state["pid"] != os.getpid() or not running.is_running():
        return
    for close in closers:  # the process is ending: a close that fails has no one to tell
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(close(), running).result(timeout=2)
