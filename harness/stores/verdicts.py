"""The verdict cache: a paid verdict is kept forever, keyed by everything that shapes it.

The key hashes (judge identity: model, prompt version, sampling; criterion text;
question text; chunk text). Only successful verdicts are stored: a failed one is paid
for again by the next run, and is never read as "no". Rows are signed (`SignedStore`):
a forged, copied or garbled row reads as absent and the verdict is asked again.
"""

from __future__ import annotations

import hashlib
import json
import os

from harness.errors import HarnessError
from harness.stores.base import KeyValueStore, SignedStore, SQLiteStore
from harness.types import CriterionVerdict

FILE = "verdicts.sqlite"


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

    def __init__(self, where: str | os.PathLike[str] | KeyValueStore) -> None:
        if isinstance(where, (str, os.PathLike)):
            where = SQLiteStore(where, "verdicts", value_column="verdict")
        self.store: SignedStore = (
            where if isinstance(where, SignedStore) else SignedStore(where, "verdicts")
        )

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
        """Keep a successful verdict; an error verdict is not kept."""
        if verdict.error:
            return
        self.store.put_many({key: json.dumps(verdict.to_dict()).encode()})

    def __len__(self) -> int:
        return self.store.count()

    def close(self) -> None:
        """Close the underlying store."""
        self.store.close()


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
