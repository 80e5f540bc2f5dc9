"""The verdict cache: a paid verdict is kept forever, keyed by everything that shapes it.

The key hashes (judge identity: model, prompt version, sampling; criterion text;
question text; chunk text). Only successful verdicts are stored: a failed one is paid
for again by the next run, and is never read as "no".
"""

from __future__ import annotations

import hashlib
import json
import os

from harness.stores.base import KeyValueStore, SQLiteStore
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

    Give a path for the default SQLite file, or a store. A verdict is written the moment
    it is paid for, so a crash loses none.
    """

    def __init__(self, where: str | os.PathLike[str] | KeyValueStore) -> None:
        if isinstance(where, (str, os.PathLike)):
            where = SQLiteStore(where, "verdicts", value_column="verdict")
        self.store: KeyValueStore = where

    def get(self, key: str) -> CriterionVerdict | None:
        """The cached verdict, or None if it was never paid for."""
        raw = self.store.get_many([key]).get(key)
        return CriterionVerdict.from_dict(json.loads(raw)) if raw is not None else None

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
