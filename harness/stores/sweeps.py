"""A sweep's result log in a PostgreSQL database (stores sit above the log: they
hold its records, the log knows nothing of them), for sweeps whose workers run on many
machines: the same typed records as sweep.json and trials.jsonl, in two tables.

```
harness_sweeps  name TEXT PK, summary TEXT (a SweepSummary as JSON), updated
harness_trials  (sweep, number) PK, seq, record TEXT (TrialRecord), header TEXT (RunHeader),
                questions TEXT (a JSON list of QuestionResult)
```

A trial's run log (header and questions) sits beside its record, so `show`, `compare`
and the summary's statistics need no run folder: those stay on whichever machine ran
the trial. Every write of a worker happens in one transaction holding the sweep's row
lock (`commit`): it appends the trial, reads the trials the other workers appended since
this worker last looked (by `seq`, which only grows in commit order under that lock),
and replaces the summary built over all of them. So the summary always counts every
worker's trials, and two workers never overwrite each other's.

Everything is redacted before it is written, as the files are.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.log.io import parse_record, sweep_entry
from harness.log.models import RunHeader, RunLog, SweepLog, SweepSummary, TrialRecord
from harness.secrets import redact, redact_obj, redact_url
from harness.stores.postgres import connect, ensure_schema
from harness.types import QuestionResult

_DDL = (
    "CREATE TABLE IF NOT EXISTS harness_sweeps (name TEXT PRIMARY KEY, summary TEXT NOT NULL, "
    "updated DOUBLE PRECISION)",
    "CREATE SEQUENCE IF NOT EXISTS harness_trial_seq",
    "CREATE TABLE IF NOT EXISTS harness_trials (sweep TEXT NOT NULL, number INTEGER NOT NULL, "
    "seq BIGINT NOT NULL, record TEXT NOT NULL, header TEXT, questions TEXT, "
    "PRIMARY KEY (sweep, number))",
    "CREATE INDEX IF NOT EXISTS harness_trials_seq ON harness_trials (sweep, seq)",
)

TrialRow = tuple[TrialRecord, RunLog | None]
"""A trial's record and, when its run got as far as a header, its run log."""


def _dumps(obj: Any) -> str:
    return json.dumps(redact_obj(obj), ensure_ascii=False)


class SweepDatabase:
    """The sweep tables of one PostgreSQL database (created on first use)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.where = redact_url(url)
        self._db = connect(url)
        ensure_schema(self._db, url, "harness_sweeps", _DDL)

    @contextmanager
    def _guard(self, doing: str) -> Iterator[Any]:
        import psycopg

        try:
            yield self._db
        except psycopg.Error as exc:
            message = redact(" ".join(str(exc).split()))
            raise HarnessError(f"{self.where}: cannot {doing} ({message})") from None

    def exists(self, name: str) -> bool:
        """Whether a sweep of that name is in the database."""
        with self._guard("read the sweeps") as db:
            row = db.execute("SELECT 1 FROM harness_sweeps WHERE name = %s", (name,)).fetchone()
        return row is not None

    def create(self, summary: SweepSummary) -> bool:
        """Insert the sweep's first summary; False if a sweep of that name exists."""
        with self._guard("create the sweep") as db:
            row = db.execute(
                "INSERT INTO harness_sweeps (name, summary, updated) "
                "VALUES (%s, %s, extract(epoch from clock_timestamp())) "
                "ON CONFLICT (name) DO NOTHING RETURNING name",
                (summary.sweep_id, _dumps(summary.to_dict())),
            ).fetchone()
        return row is not None

    def commit(
        self,
        name: str,
        since: int,
        record: TrialRecord | None,
        run: RunLog | None,
        summarize: Callable[[list[TrialRow]], SweepSummary],
    ) -> int:
        """In one transaction under the sweep's row lock: append `record` (with `run`,
        replacing an earlier record of that trial), hand `summarize` every trial row
        appended after `since` (this worker's own included), store the summary it
        returns. Returns the position to pass as `since` next time."""
        with self._guard("write the sweep log") as db, db.transaction():
            if (
                db.execute(
                    "SELECT 1 FROM harness_sweeps WHERE name = %s FOR UPDATE", (name,)
                ).fetchone()
                is None
            ):
                raise HarnessError(f"{self.where}: no sweep named {name!r}")
            if record is not None:
                db.execute(
                    "INSERT INTO harness_trials (sweep, number, seq, record, header, questions) "
                    "VALUES (%s, %s, nextval('harness_trial_seq'), %s, %s, %s) "
                    "ON CONFLICT (sweep, number) DO UPDATE SET seq = EXCLUDED.seq, "
                    "record = EXCLUDED.record, header = EXCLUDED.header, "
                    "questions = EXCLUDED.questions",
                    (
                        name,
                        record.number,
                        _dumps(record.to_dict()),
                        _dumps(run.header.to_dict()) if run else None,
                        _dumps([q.to_dict() for q in run.questions]) if run else None,
                    ),
                )
            rows = db.execute(
                "SELECT seq, record, header, questions FROM harness_trials "
                "WHERE sweep = %s AND seq > %s ORDER BY seq",
                (name, since),
            ).fetchall()
            taken = [
                self._row(name, record_, header, questions)
                for _, record_, header, questions in rows
            ]
            summary = summarize(taken)
            db.execute(
                "UPDATE harness_sweeps SET summary = %s, "
                "updated = extract(epoch from clock_timestamp()) WHERE name = %s",
                (_dumps(summary.to_dict()), name),
            )
        return max([since, *(int(r[0]) for r in rows)])

    def _row(self, name: str, record: str, header: str | None, questions: str | None) -> TrialRow:
        where = f"{self.where} sweep {name}"
        rec = parse_record(TrialRecord, json.loads(record), f"{where} trial record")
        if header is None:
            return rec, None
        trial = f"{where} trial {rec.number}"
        run = RunLog(
            run_dir=Path(rec.run_dir),
            header=parse_record(RunHeader, json.loads(header), f"{trial} header"),
            questions=tuple(
                parse_record(QuestionResult, q, f"{trial} question {i}")
                for i, q in enumerate(json.loads(questions or "[]"), 1)
            ),
        )
        return rec, run

    def read_summary(self, name: str) -> SweepSummary:
        """The sweep's summary; HarnessError if there is no sweep of that name."""
        with self._guard("read the sweep") as db:
            row = db.execute(
                "SELECT summary FROM harness_sweeps WHERE name = %s", (name,)
            ).fetchone()
        if row is None:
            raise HarnessError(f"{self.where}: no sweep named {name!r}")
        return parse_record(SweepSummary, json.loads(row[0]), f"{self.where} sweep {name}")

    def read_trials(self, name: str) -> list[TrialRecord]:
        """The sweep's trial records by number (the last one written for each)."""
        with self._guard("read the sweep's trials") as db:
            rows = db.execute(
                "SELECT record FROM harness_trials WHERE sweep = %s ORDER BY number", (name,)
            ).fetchall()
        where = f"{self.where} sweep {name} trial record"
        return [parse_record(TrialRecord, json.loads(r[0]), where) for r in rows]

    def read_sweep(self, name: str) -> SweepLog:
        """The sweep as `read_sweep` gives a folder: summary and trials (sweep_dir is its
        name: the run folders may be on other machines)."""
        summary = self.read_summary(name)
        return SweepLog(sweep_dir=Path(name), summary=summary, trials=tuple(self.read_trials(name)))

    def read_run(self, name: str, number: int) -> RunLog:
        """Trial `number`'s run log as stored with its record."""
        with self._guard("read the trial") as db:
            row = db.execute(
                "SELECT record, header, questions FROM harness_trials "
                "WHERE sweep = %s AND number = %s",
                (name, number),
            ).fetchone()
        if row is None or row[1] is None:
            raise HarnessError(f"{self.where}: sweep {name!r} has no run of trial {number}")
        run = self._row(name, *row)[1]
        assert run is not None
        return run

    def read_runs(self, name: str) -> dict[int, RunLog]:
        """Every trial's run log stored with its record, by trial number (what a report of
        the sweep reads from the run folders of a folder sweep)."""
        with self._guard("read the sweep's runs") as db:
            rows = db.execute(
                "SELECT record, header, questions FROM harness_trials "
                "WHERE sweep = %s AND header IS NOT NULL ORDER BY number",
                (name,),
            ).fetchall()
        out: dict[int, RunLog] = {}
        for row in rows:
            record, run = self._row(name, *row)
            if run is not None:
                out[record.number] = run
        return out

    def list_sweeps(self) -> list[dict[str, Any]]:
        """One row per sweep, as `list_results` gives a sweep folder."""
        with self._guard("list the sweeps") as db:
            rows = db.execute("SELECT name, summary FROM harness_sweeps ORDER BY name").fetchall()
        out: list[dict[str, Any]] = []
        for name, text in rows:
            sw = parse_record(SweepSummary, json.loads(text), f"{self.where} sweep {name}")
            out.append(sweep_entry(sw, name, f"{self.where}#{name}"))
        return out

    def close(self) -> None:
        """Close the connection."""
        self._db.close()
