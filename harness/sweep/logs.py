"""Where a sweep's log goes: one interface, three implementations.

```
FolderLog    sweep.json + trials.jsonl in the sweep folder (one process: the default)
JournalLog   the same files, under a lock, for local worker processes (--workers N)
DatabaseLog  the tables of harness.stores.sweeps in PostgreSQL (workers on many machines)
```

`open_sweep_log(storage, sweep_dir)` picks one from the study's storage URL, so the sweep
(harness.sweep.study) and the CLI never branch on the storage themselves.
`check_storage` refuses, before anything is created, a storage URL that cannot hold a
sweep that can be resumed.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol
from urllib.parse import parse_qs

from harness.errors import HarnessError
from harness.log import (
    HEADER,
    SWEEP_FILE,
    RunLog,
    SweepLog,
    SweepSummary,
    TrialRecord,
    append_trial,
    read_run,
    read_sweep,
    read_sweep_summary,
    read_trials,
    write_sweep_summary,
)
from harness.secrets import redact_url, remember_url
from harness.stores.postgres import is_postgres
from harness.stores.sweeps import SweepDatabase, TrialRow
from harness.sweep import shared
from harness.sweep.book import SweepBook

Summarize = Callable[[], SweepSummary]
"""Builds the summary to store from the book as it stands (status and error bound)."""

SQLITE = "sqlite:///"
_READ_ONLY = {"mode": {"ro"}, "immutable": {"1", "true"}}


def check_storage(url: str | None) -> None:
    """Refuse, in one line, a `--storage` URL that cannot hold a sweep that can be resumed:
    an unknown scheme, an empty string, an in-memory or read-only SQLite database, or a
    SQLite file whose folder does not exist or cannot be written. Called before the sweep
    folder is made, so a refused storage leaves nothing behind."""
    if url is None or is_postgres(url):
        return
    shown = redact_url(url) if url else '""'
    if shared.is_journal(url):
        folder = Path(url[len(shared.JOURNAL) :]).parent
        why = None if folder.is_dir() else f"the folder {folder} does not exist"
    elif url.startswith(SQLITE):
        why = _sqlite_problem(url)
    else:
        why = "expected sqlite:///FILE or postgresql://user@host/db"
    if why:
        raise HarnessError(f"--storage {shown}: {why}")


def _sqlite_problem(url: str) -> str | None:
    """Why a sqlite:/// URL cannot hold a resumable sweep, or None."""
    rest = url[len(SQLITE) :]
    path_part, _, query = rest.partition("?")
    options = parse_qs(query)
    if path_part in ("", ":memory:") or path_part.startswith("file::memory:"):
        return "an in-memory database ends with the process; the sweep could never be resumed"
    if any(set(options.get(k, [])) & v for k, v in _READ_ONLY.items()):
        return "a read-only database cannot hold the study"
    path = Path(path_part)
    if path.is_dir():
        return f"{path} is a folder, not a database file"
    if not path.parent.is_dir():
        return f"the folder {path.parent} does not exist"
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        return f"{path} cannot be read and written"
    if not path.exists() and not os.access(path.parent, os.W_OK | os.X_OK):
        return f"cannot create {path} (the folder is not writable)"
    return None


def sqlite_file(url: str) -> Path | None:
    """The file of a plain sqlite:/// URL (no options), else None."""
    if not url.startswith(SQLITE) or "?" in url:
        return None
    return Path(url[len(SQLITE) :])


class SweepLogStore(Protocol):
    """Where a sweep's summary and trial records are written, and read back."""

    shared: bool
    """Other workers may append trials to this log at the same time."""

    def append(
        self, record: TrialRecord, run: RunLog | None, book: SweepBook, summarize: Summarize
    ) -> None:
        """Log a trial's end and take it (and, where the log is shared, the others'
        trials) into `book`; `run` is its log when the caller holds it."""
        ...

    def write(self, book: SweepBook, summarize: Summarize) -> None:
        """Store the summary, after taking in the trials other workers logged."""
        ...

    def read(self) -> SweepLog:
        """The sweep as written (`sweep_dir` is this machine's folder)."""
        ...

    def close(self) -> None:
        """Let go of what the log holds open."""
        ...


def _run_of(record: TrialRecord) -> RunLog | None:
    folder = Path(record.run_dir)
    return read_run(folder) if record.run_dir and (folder / HEADER).is_file() else None


@dataclasses.dataclass
class FolderLog:
    """sweep.json and trials.jsonl in the sweep folder, written by one process."""

    sweep_dir: Path
    shared: bool = False

    def append(
        self, record: TrialRecord, run: RunLog | None, book: SweepBook, summarize: Summarize
    ) -> None:
        """Append the record to trials.jsonl and take it into the book."""
        append_trial(self.sweep_dir, record)
        book.add(record, run if run is not None else _run_of(record))

    def write(self, book: SweepBook, summarize: Summarize) -> None:
        """Replace sweep.json."""
        write_sweep_summary(self.sweep_dir, summarize())

    def read(self) -> SweepLog:
        """The folder's log."""
        return read_sweep(self.sweep_dir)

    def close(self) -> None:
        """Nothing is held open."""


@dataclasses.dataclass
class JournalLog(FolderLog):
    """The folder's files shared by local worker processes, under the folder's lock: each
    worker appends its own trials and takes in the others' when it writes the summary."""

    shared: bool = True
    _taken: dict[int, TrialRecord] = dataclasses.field(default_factory=dict)

    def append(
        self, record: TrialRecord, run: RunLog | None, book: SweepBook, summarize: Summarize
    ) -> None:
        """Append under the lock; the book takes it in with the others' on the next write."""
        with shared.folder_lock(self.sweep_dir):
            append_trial(self.sweep_dir, record)

    def write(self, book: SweepBook, summarize: Summarize) -> None:
        """Take in every new line of trials.jsonl, then replace sweep.json, under the lock."""
        with shared.folder_lock(self.sweep_dir):
            for record in read_trials(self.sweep_dir):
                if self._taken.get(record.number) != record:
                    book.add(record, _run_of(record))
                    self._taken[record.number] = record
            write_sweep_summary(self.sweep_dir, summarize())


@dataclasses.dataclass
class DatabaseLog:
    """The sweep tables of a PostgreSQL database: every write is one transaction that
    appends this worker's trial, takes in the others' and replaces the summary."""

    db: SweepDatabase
    sweep_dir: Path
    shared: bool = True
    _seen: int = 0  # the last trial row this worker took in

    def _commit(
        self, record: TrialRecord | None, run: RunLog | None, book: SweepBook, summarize: Summarize
    ) -> None:
        def take(rows: list[TrialRow]) -> SweepSummary:
            for rec, rlog in rows:
                book.add(rec, rlog)
            return summarize()

        self._seen = self.db.commit(self.sweep_dir.name, self._seen, record, run, take)

    def append(
        self, record: TrialRecord, run: RunLog | None, book: SweepBook, summarize: Summarize
    ) -> None:
        """Store the record with its run log, and the summary, in one transaction."""
        self._commit(record, run, book, summarize)

    def write(self, book: SweepBook, summarize: Summarize) -> None:
        """Store the summary over every worker's trials."""
        self._commit(None, None, book, summarize)

    def read(self) -> SweepLog:
        """The sweep from the database, with this machine's folder as its sweep_dir."""
        return dataclasses.replace(
            self.db.read_sweep(self.sweep_dir.name), sweep_dir=self.sweep_dir
        )

    def close(self) -> None:
        """Close the connection."""
        self.db.close()


def open_database(storage: str | None) -> SweepDatabase | None:
    """The sweep tables of a PostgreSQL storage (None for any other)."""
    if storage is None or not is_postgres(storage):
        return None
    remember_url(storage)
    return SweepDatabase(storage)


def open_sweep_log(storage: str, sweep_dir: Path, db: SweepDatabase | None) -> SweepLogStore:
    """The log for a sweep whose study lives in `storage` (`db`: its open sweep tables,
    for a PostgreSQL storage)."""
    if db is not None:
        return DatabaseLog(db, sweep_dir)
    if shared.is_journal(storage):
        return JournalLog(sweep_dir)
    return FolderLog(sweep_dir)


def recorded_summary(
    storage: str | None, results_dir: str | os.PathLike[str], name: str
) -> tuple[SweepSummary, str]:
    """The summary of sweep `name` to join, and where it was read: from the database of a
    PostgreSQL `storage`, else from its folder under `results_dir`."""
    db = open_database(storage)
    if db is not None:
        try:
            return db.read_summary(name), f"{db.where} sweep {name}"
        finally:
            db.close()
    folder = Path(results_dir) / name
    return read_sweep_summary(folder), str(folder / SWEEP_FILE)
