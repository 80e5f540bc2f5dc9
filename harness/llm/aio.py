"""One event loop for every asynchronous request of the process, on a daemon thread.

Judging many pairs against a fast endpoint is bound by the client's own CPU, not by the
endpoint: threads pay the GIL and a thread per request, an event loop pays neither. The
loop lives as long as the process, so HTTP connections (and a hosted endpoint's TLS
sessions) are reused from one batch of questions to the next. A forked child gets a
loop of its own.

A call that holds one of a shared limit's permits (`CallPermit`, under `holding`) lets
the HTTP layer give the permit up the moment the endpoint's answer has arrived, so the
next call waiting for it is sent while this one's answer is still being read.

Blocking code meets the loop in two places: `run` waits for a coroutine from a thread
without a loop (the blocking facade of a judge or client), and `in_thread` runs a
blocking function for a coroutine (a judge that only has a blocking `grade`), on a
thread of the task's own under `own_thread`.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import functools
import os
import threading
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_state: dict[str, Any] = {"pid": None, "loop": None, "thread": None}
_closers: list[Callable[[], Coroutine[Any, Any, None]]] = []
_own_thread: contextvars.ContextVar[ThreadPoolExecutor | None] = contextvars.ContextVar(
    "harness_own_thread", default=None
)
_shared_threads: dict[int, ThreadPoolExecutor] = {}
_worker: contextvars.ContextVar[int | None] = contextvars.ContextVar("harness_worker", default=None)
_permit: contextvars.ContextVar[CallPermit | None] = contextvars.ContextVar(
    "harness_call_permit", default=None
)


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


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` on the background loop and wait for its result (or exception) here.
    Waiting ended from this side (Ctrl-C) cancels the coroutine. Not from the loop's own
    thread, where it would wait forever."""
    with _lock:
        on_loop = _state["pid"] == os.getpid() and _state["thread"] is threading.current_thread()
    if on_loop:
        coro.close()
        raise RuntimeError("a blocking call on the event loop's own thread would never end")
    future = submit(_caught(coro))
    try:
        value, exc = future.result()
    except BaseException:
        future.cancel()
        raise
    if exc is not None:
        raise exc
    return value  # type: ignore[return-value]  # None only with an exception


async def _caught(coro: Coroutine[Any, Any, T]) -> tuple[T | None, BaseException | None]:
    """(coro's result, None) or (None, what it raised): a KeyboardInterrupt from a blocking
    judge's thread is handed to the waiting thread instead of ending the loop."""
    try:
        return await coro, None
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        return None, exc


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` on a thread, awaited: the task's own thread under `own_thread`, else one
    of a shared pool."""
    executor = _own_thread.get()
    if executor is None:
        with _lock:
            executor = _shared_threads.get(os.getpid())
            if executor is None:
                executor = ThreadPoolExecutor(max_workers=64, thread_name_prefix="harness-blocking")
                _shared_threads.clear()  # a forked child's copy has no threads
                _shared_threads[os.getpid()] = executor
    return await asyncio.get_running_loop().run_in_executor(executor, functools.partial(fn, *args))


@contextlib.contextmanager
def own_thread(index: int | None = None) -> Iterator[None]:
    """Within it, the current task's `in_thread` calls all run on one thread of its own
    (made on first use), one after another: a worker of a judge that only blocks keeps
    its thread, as a thread pool's worker would. `index` numbers the worker
    (`worker_index`), so its requests can go to a server slot of its own."""
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="harness-worker")
    token = _own_thread.set(executor)
    index_token = _worker.set(index)
    try:
        yield
    finally:
        _worker.reset(index_token)
        _own_thread.reset(token)
        executor.shutdown(wait=False, cancel_futures=True)


def worker_index() -> int | None:
    """The number of the worker the current task is (`own_thread(index)`), else None."""
    return _worker.get()


class CallPermit:
    """A call's hold on one permit of a shared limit (an `asyncio.Semaphore` of calls in
    flight), which it may give up before the call ends: `harness.llm.http.Pool.post`
    lets go when the answer's last byte arrives (before the caller parses it), and takes
    a permit again before it sends once more (a retry, a re-ask). Only the requests on
    the wire count against the limit, and a permit passes to the next call as soon as
    the endpoint has answered, not one loop turn later once the answer is read. Make it,
    use it and let go of it on one event loop."""

    __slots__ = ("_held", "_limit")

    def __init__(self, limit: asyncio.Semaphore) -> None:
        self._limit = limit
        self._held = False

    async def hold(self) -> None:
        """Hold a permit (wait for one unless this call holds one already)."""
        if not self._held:
            await self._limit.acquire()
            self._held = True

    def let_go(self) -> None:
        """Give the permit back, if held (safe to call again)."""
        if self._held:
            self._held = False
            self._limit.release()


@contextlib.contextmanager
def holding(permit: CallPermit) -> Iterator[None]:
    """Within it, the current task's requests send under `permit` (`call_permit`); it is
    let go at the end, whatever the requests did with it."""
    token = _permit.set(permit)
    try:
        yield
    finally:
        _permit.reset(token)
        permit.let_go()


def call_permit() -> CallPermit | None:
    """The permit the current task's calls hold (`holding`), else None."""
    return _permit.get()


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
