"""The verdict cache: a paid verdict is kept forever, keyed by everything that shapes it.

The key hashes (judge identity: model, prompt version, sampling; criterion text;
question text; chunk text). Only successful verdicts are stored: a failed one is paid
for again by the next run, and is never read as "no". Rows are signed (`SignedStore`):
a forged, copied or garbled row reads as absent and the verdict is asked again.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Sequence

from loguru import logger

from harness.errors import HarnessError
from harness.stores.base import KeyValueStore, SignedStore, SQLiteStore
from harness.stores.claims import Claims, SQLiteClaims
from harness.types import CriterionVerdict

FILE = "verdicts.sqlite"
CLAIM_TTL_S = 30.0
"""How long a claim on a verdict outlives its last renewal (the claimant renews it every
third of that while it lives), so a worker killed with -9 blocks others this long at most."""
FLUSH_EVERY_S = 0.05
"""The longest a paid verdict waits in memory before it is stored (see `VerdictCache`):
what a kill -9 can cost is the verdicts paid in this last interval, paid once more."""
FLUSH_AT = 64
"""Verdicts waiting in memory that make the writer store them before the interval ends."""


def verdict_key(identity: str, criterion_text: str, question: str, chunk_text: str) -> str:
    """sha256 over the sha256 of each part, so no part can run into the next."""
    h = hashlib.sha256()
    for part in (identity, criterion_text, question, chunk_text):
        h.update(hashlib.sha256(part.encode()).digest())
    return h.hexdigest()


class VerdictCache:
    """Verdict key -> successful CriterionVerdict, over any KeyValueStore.

    Give a path for the default SQLite file, or a store (any engine; it is wrapped in a
    `SignedStore` unless it is one). A row that fails its tag or is not a successful
    CriterionVerdict reads as absent and is counted in `rejected`; rows written by a
    harness before rows were signed carry no tag, so each of those verdicts is paid for
    once more.

    Writes are batched off the caller's path: `put` keeps the verdict in memory (where
    `get` already sees it) and a writer thread stores everything put since its last
    flush in one transaction, at most `flush_every_s` later (sooner once `flush_at`
    verdicts wait), then releases their claims in one statement. A claim is released
    only after its verdict is stored, so another process never pays for a verdict this
    one paid (it waits for the claim, then reads the row). What a kill -9 can lose is
    bounded: the verdicts paid in the last `flush_every_s` (their claims die with the
    process, so the next run pays them again, once). `flush()` stores everything now;
    `harness run` calls it before it writes a question's line, so no line written ever
    refers to a verdict that is not in the cache.
    """

    def __init__(
        self,
        where: str | os.PathLike[str] | KeyValueStore,
        *,
        claims: Claims | Callable[[], Claims] | None = None,
        claim_ttl_s: float = CLAIM_TTL_S,
        flush_every_s: float = FLUSH_EVERY_S,
        flush_at: int = FLUSH_AT,
    ) -> None:
        """`claims` (or a function opening them on first use) coordinate payers across
        processes; a path gets the SQLite claims table of the same file."""
        if isinstance(where, (str, os.PathLike)):
            path = where
            sqlite = where = SQLiteStore(path, "verdicts", value_column="verdict")
            if claims is None:
                claims = lambda: SQLiteClaims(path, share=sqlite)  # noqa: E731
        self.store: SignedStore = (
            where if isinstance(where, SignedStore) else SignedStore(where, "verdicts")
        )
        self._claims_source = claims
        self._claims: Claims | None = None
        self.claim_ttl_s = claim_ttl_s
        self.flush_every_s, self.flush_at = flush_every_s, max(1, flush_at)
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._held: set[str] = set()
        self._claim_lock = threading.Lock()
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        # write-behind: verdicts put but not stored yet, and claims to drop once they are
        self._pending: dict[str, CriterionVerdict] = {}
        self._flushing: dict[str, CriterionVerdict] = {}
        self._unclaim: set[str] = set()
        self._pending_lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._wake = threading.Event()
        self._writer: threading.Thread | None = None
        self._write_error: HarnessError | None = None
        self.waited = 0
        """Verdicts this cache waited for while another worker paid for them."""
        atexit.register(_flush_at_exit, weakref.ref(self))

    @property
    def rejected(self) -> int:
        """Rows read as absent so far because they failed a check."""
        return self.store.rejected

    def _unstored(self, key: str) -> CriterionVerdict | None:
        """A verdict put but not yet stored, or None."""
        with self._pending_lock:
            return self._pending.get(key) or self._flushing.get(key)

    def get(self, key: str) -> CriterionVerdict | None:
        """The cached verdict, or None if it was never paid for (or its row is bad)."""
        return self.get_many([key]).get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, CriterionVerdict]:
        """The cached verdicts of those keys that have one, in one read of the store."""
        out: dict[str, CriterionVerdict] = {}
        with self._pending_lock:
            for key in keys:
                hit = self._pending.get(key) or self._flushing.get(key)
                if hit is not None:
                    out[key] = hit
        rest = [k for k in keys if k not in out]
        if not rest:
            return out
        bad = 0
        for key, raw in self.store.get_many(rest).items():
            verdict = _parse_verdict(raw, f"{self.store.where}[{key}]")
            if verdict is None:
                bad += 1
            else:
                out[key] = verdict
        self.store.reject(bad, "are not a successful verdict")
        return out

    def put(self, key: str, verdict: CriterionVerdict) -> None:
        """Keep a successful verdict (an error verdict is not kept), then let go of this
        cache's claim on the key, if it holds one; both happen at the next flush.

        Raises the HarnessError of a flush that failed in the background."""
        self._raise_write_error()
        with self._pending_lock:
            if not verdict.error:
                self._pending[key] = verdict
            self._unclaim.add(key)
            due = len(self._pending) >= self.flush_at
        self._start_writer()
        if due:
            self._wake.set()

    def flush(self) -> None:
        """Store every verdict put so far in one transaction, then release their claims.

        Raises HarnessError when the store cannot be written (the claims are released
        all the same, so other workers pay for those verdicts instead of waiting)."""
        with self._flush_lock:
            with self._pending_lock:
                rows, self._pending = self._pending, {}
                unclaim, self._unclaim = self._unclaim, set()
                self._flushing = rows
            try:
                if rows:
                    self.store.put_many(
                        {k: json.dumps(v.to_dict()).encode() for k, v in rows.items()}
                    )
            finally:
                with self._pending_lock:
                    self._flushing = {}
                self._release_many(unclaim)
        self._raise_write_error()

    def _raise_write_error(self) -> None:
        if self._write_error is not None:
            exc, self._write_error = self._write_error, None
            raise exc

    def _start_writer(self) -> None:
        """Start the thread that flushes every `flush_every_s` while verdicts wait."""
        if self._writer is not None and self._writer.is_alive():
            return
        with self._claim_lock:
            if self._writer is not None and self._writer.is_alive():
                return  # (a forked child has no writer thread: it starts its own)
            if self._stop.is_set():
                return  # closing: close() stores what is pending itself

            def write() -> None:
                while not self._stop.is_set():
                    self._wake.wait(self.flush_every_s)
                    self._wake.clear()
                    try:
                        self.flush()
                    except HarnessError as exc:  # raised to the caller's next put
                        self._write_error = exc

            writer = threading.Thread(target=write, name="verdict-writer", daemon=True)
            writer.start()
            # only a started thread is ever visible, so close() can always join it
            self._writer = writer

    # ------------------------------------------------------------ claims

    def _claims_engine(self) -> Claims | None:
        with self._claim_lock:
            if self._claims is None and self._claims_source is not None:
                source, self._claims_source = self._claims_source, None
                try:
                    self._claims = source() if callable(source) else source
                except HarnessError as exc:  # a read-only cache folder: work unclaimed
                    logger.debug("verdict claims unavailable: {}", exc)
            return self._claims

    def claim_many(self, keys: Sequence[str]) -> tuple[set[str], dict[str, CriterionVerdict]]:
        """Before paying for many keys at once: (the keys this cache now holds the claim
        on, so the caller pays for them, then calls `put` or `release` for each; the
        verdicts of keys another worker paid for meanwhile). One statement for the
        claims, one read for the verdicts. A key in neither is claimed by a live
        worker: `claim` it alone, which waits for that worker.

        With no claims engine every key is returned as claimed."""
        claims = self._claims_engine()
        if claims is None:
            return set(keys), {}
        got = claims.claim_many(keys, self._owner, self.claim_ttl_s)
        # the payer stores a verdict before it releases its claim: one stored since our
        # miss is visible now, and must not be paid again
        paid = self._peek_many(sorted(got)) if got else {}
        if paid:
            claims.release_many(sorted(paid), self._owner)
        got -= paid.keys()
        with self._claim_lock:
            self._held |= got
            if got:
                self._start_renewer()
        return got, paid

    def claim(self, key: str) -> CriterionVerdict | None:
        """Before paying for `key`: None when this cache now holds the claim (the caller
        pays, then calls `put`, or `release` if paying failed), or the verdict another
        worker paid for while this one waited for its claim to end.

        With no claims engine it returns None at once (nothing to coordinate with)."""
        claims = self._claims_engine()
        if claims is None:
            return None
        delay = 0.02
        polls = 0
        while True:
            if claims.claim(key, self._owner, self.claim_ttl_s):
                hit = self._peek(key)
                if hit is not None:
                    claims.release(key, self._owner)
                    return hit
                with self._claim_lock:
                    self._held.add(key)
                    self._start_renewer()
                return None
            time.sleep(delay)
            delay = min(0.25, delay * 1.5)
            polls += 1
            if polls % 8 == 0:
                # A claimant of this machine that is gone (kill -9) need not be waited
                # out: its claim is dropped now, not when it expires.
                holder = claims.holder(key)
                if holder is not None and _dead_here(holder):
                    claims.release(key, holder)
            hit = self._peek(key)
            if hit is not None:
                with self._claim_lock:
                    self.waited += 1
                return hit

    def _peek(self, key: str) -> CriterionVerdict | None:
        """`get` without counting a bad row again (the caller's `get` counted it)."""
        return self._peek_many([key]).get(key)

    def _peek_many(self, keys: Sequence[str]) -> dict[str, CriterionVerdict]:
        out: dict[str, CriterionVerdict] = {}
        for key in keys:
            hit = self._unstored(key)
            if hit is not None:
                out[key] = hit
        rest = [k for k in keys if k not in out]
        for key, stored in (self.store.inner.get_many(rest) if rest else {}).items():
            value = self.store.open(key, stored)
            verdict = _parse_verdict(value, key) if value is not None else None
            if verdict is not None:
                out[key] = verdict
        return out

    def release(self, key: str) -> None:
        """Give up this cache's claim on `key` now (nothing if it holds none)."""
        self._release_many({key})

    def release_later(self, key: str) -> None:
        """Give up this cache's claim on `key` at the next flush (after what is pending
        is stored), off the caller's path."""
        with self._pending_lock:
            self._unclaim.add(key)
        self._start_writer()

    def release_many(self, keys: Sequence[str] | set[str]) -> None:
        """Give up this cache's claims on `keys` now, in one statement."""
        self._release_many(set(keys))

    def _release_many(self, keys: set[str]) -> None:
        with self._claim_lock:
            mine = sorted(keys & self._held)
            self._held -= keys
        if mine and self._claims is not None:
            try:
                self._claims.release_many(mine, self._owner)
            except Exception:
                # A release racing close() (a failed run's judging threads winding down)
                # may find the store closed; unreleased claims expire on their own.
                if not self._stop.is_set():
                    raise

    def _start_renewer(self) -> None:
        """Start the thread that keeps held claims alive (under `_claim_lock`)."""
        if self._renewer is not None:
            return

        def renew() -> None:
            while not self._stop.wait(self.claim_ttl_s / 3):
                with self._claim_lock:
                    busy = bool(self._held)
                if busy and self._claims is not None:
                    try:
                        self._claims.renew(self._owner, self.claim_ttl_s)
                    except HarnessError as exc:  # the claims then expire; others pay
                        logger.debug("cannot renew verdict claims: {}", exc)

        self._renewer = threading.Thread(target=renew, name="verdict-claims", daemon=True)
        self._renewer.start()

    def __len__(self) -> int:
        self.flush()
        return self.store.count()

    def close(self) -> None:
        """Store what is pending, release held claims, stop the threads, close the store
        and the claims."""
        self._stop.set()
        self._wake.set()
        with self._claim_lock:
            writer = self._writer
        if writer is not None:
            writer.join(timeout=5)
        try:
            self.flush()
        finally:
            with contextlib.suppress(HarnessError):  # they expire on their own
                self._release_many(set(self._held))
            if self._renewer is not None:
                self._renewer.join(timeout=5)
            if self._claims is not None:
                self._claims.close()
            self.store.close()


def _flush_at_exit(ref: weakref.ReferenceType[VerdictCache]) -> None:
    """At interpreter exit, store what a cache that was never closed still holds."""
    cache = ref()
    if cache is not None and not cache._stop.is_set():
        with contextlib.suppress(Exception):  # a closed store: nothing left to keep
            cache.flush()


def _dead_here(owner: str) -> bool:
    """Whether claim owner `host:pid:token` is a process of this host that is gone."""
    from harness.log.status import process_alive

    host, pid, _ = [*owner.rsplit(":", 2), "", ""][:3]
    return host == socket.gethostname() and pid.isdigit() and not process_alive(int(pid))


def _parse_verdict(raw: bytes, where: str) -> CriterionVerdict | None:
    """`raw` as a successful CriterionVerdict checked field by field, or None."""
    from harness.log import parse_record  # the log's pydantic checks; imported when used

    try:
        verdict = parse_record(CriterionVerdict, json.loads(raw), where)
    except (ValueError, RecursionError, HarnessError):  # ValueError: bad JSON or UTF-8
        return None
    if verdict.error is not None or verdict.value is None:
        return None  # only successes are ever stored
    if verdict.p_yes is not None and not 0.0 <= verdict.p_yes <= 1.0:
        return None
    return verdict
