"""The verdict cache: a paid verdict is kept forever, keyed by everything that shapes it.

The key hashes (judge identity: model, prompt version, sampling; criterion text;
question text; chunk text). Only successful verdicts are stored: a failed one is paid
for again by the next run, and is never read as "no". Rows are signed (`SignedStore`):
a forged, copied or garbled row reads as absent and the verdict is asked again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable

from loguru import logger

from harness.errors import HarnessError
from harness.stores.base import KeyValueStore, SignedStore, SQLiteStore
from harness.stores.claims import Claims, SQLiteClaims
from harness.types import CriterionVerdict

FILE = "verdicts.sqlite"
CLAIM_TTL_S = 30.0
"""How long a claim on a verdict outlives its last renewal (the claimant renews it every
third of that while it lives), so a worker killed with -9 blocks others this long at most."""


def verdict_key(identity: str, criterion_text: str, question: str, chunk_text: str) -> str:
    """sha256 over the sha256 of each part, so no part can run into the next."""
    h = hashlib.sha256()
    for part in (identity, criterion_text, question, chunk_text):
        h.update(hashlib.sha256(part.encode()).digest())
    return h.hexdigest()


class VerdictCache:
    """Verdict key -> successful CriterionVerdict, over any KeyValueStore.

    Give a path for the default SQLite file, or a store (any engine; it is wrapped in a
    `SignedStore` unless it is one). A verdict is written the moment it is paid for, so a
    crash loses none. A row that fails its tag or is not a successful CriterionVerdict
    reads as absent and is counted in `rejected`; rows written by a harness before rows
    were signed carry no tag, so each of those verdicts is paid for once more.
    """

    def __init__(
        self,
        where: str | os.PathLike[str] | KeyValueStore,
        *,
        claims: Claims | Callable[[], Claims] | None = None,
        claim_ttl_s: float = CLAIM_TTL_S,
    ) -> None:
        """`claims` (or a function opening them on first use) coordinate payers across
        processes; a path gets the SQLite claims table of the same file."""
        if isinstance(where, (str, os.PathLike)):
            path = where
            where = SQLiteStore(path, "verdicts", value_column="verdict")
            claims = claims if claims is not None else (lambda: SQLiteClaims(path))
        self.store: SignedStore = (
            where if isinstance(where, SignedStore) else SignedStore(where, "verdicts")
        )
        self._claims_source = claims
        self._claims: Claims | None = None
        self.claim_ttl_s = claim_ttl_s
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._held: set[str] = set()
        self._claim_lock = threading.Lock()
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self.waited = 0
        """Verdicts this cache waited for while another worker paid for them."""

    @property
    def rejected(self) -> int:
        """Rows read as absent so far because they failed a check."""
        return self.store.rejected

    def get(self, key: str) -> CriterionVerdict | None:
        """The cached verdict, or None if it was never paid for (or its row is bad)."""
        raw = self.store.get_many([key]).get(key)
        if raw is None:
            return None
        verdict = _parse_verdict(raw, f"{self.store.where}[{key}]")
        if verdict is None:
            self.store.reject(1, "are not a successful verdict")
        return verdict

    def put(self, key: str, verdict: CriterionVerdict) -> None:
        """Keep a successful verdict (an error verdict is not kept), then let go of this
        cache's claim on the key, if it holds one."""
        try:
            if not verdict.error:
                self.store.put_many({key: json.dumps(verdict.to_dict()).encode()})
        finally:
            self.release(key)

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
                # The payer stores the verdict before it releases its claim: a verdict
                # stored since our miss is visible now, and must not be paid again.
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
        stored = self.store.inner.get_many([key]).get(key)
        value = self.store.open(key, stored) if stored is not None else None
        return _parse_verdict(value, key) if value is not None else None

    def release(self, key: str) -> None:
        """Give up this cache's claim on `key` (nothing if it holds none)."""
        with self._claim_lock:
            if key not in self._held:
                return
            self._held.discard(key)
        if self._claims is not None:
            self._claims.release(key, self._owner)

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
        return self.store.count()

    def close(self) -> None:
        """Release held claims, stop renewing them, close the store and the claims."""
        self._stop.set()
        for key in list(self._held):
            with contextlib.suppress(HarnessError):  # it expires on its own
                self.release(key)
        if self._renewer is not None:
            self._renewer.join(timeout=5)
        if self._claims is not None:
            self._claims.close()
        self.store.close()


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
