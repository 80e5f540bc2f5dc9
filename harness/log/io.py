"""Reading and writing the result log: the only code that touches its files.

```
results/<run_id>/
  header.json      RunHeader: replaced atomically (temp file, then rename).
  questions.jsonl  one QuestionResult per line, appended and flushed as each finishes.
results/<sweep_id>/
  sweep.json       SweepSummary: replaced atomically after every trial.
  trials.jsonl     one TrialRecord per line, appended as each trial ends.
  trials/<n>/      an ordinary run folder per trial.
```

A torn last line (a crash mid-write) is skipped on read; a bad line elsewhere, a file of
the wrong shape or a log newer than this harness is one HarnessError naming the file.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from harness.errors import HarnessError
from harness.log.models import (
    RunHeader,
    RunLog,
    SweepLog,
    SweepSummary,
    TrialRecord,
)
from harness.types import LOG_VERSION, QuestionResult

HEADER = "header.json"
QUESTIONS = "questions.jsonl"
SWEEP_FILE = "sweep.json"
TRIALS_FILE = "trials.jsonl"

T = TypeVar("T")


@functools.cache
def _adapter(cls: type) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(cls)


def schema(cls: type) -> dict[str, Any]:
    """The JSON schema of a log record (RunHeader, QuestionResult, SweepSummary, ...)."""
    return dict(_adapter(cls).json_schema())


def parse_record(cls: type[T], obj: Any, where: str) -> T:
    """`obj` (parsed JSON) as a `cls` record, checked field by field.

    Raises HarnessError naming `where`, the first wrong field and what was expected, and
    refuses an object written by a newer log version."""
    from pydantic import ValidationError

    if isinstance(obj, dict):
        version = obj.get("log_version", LOG_VERSION)
        if isinstance(version, int) and version > LOG_VERSION:
            raise HarnessError(
                f"{where}: written by a newer harness (log version {version}; this one reads "
                f"up to {LOG_VERSION}); upgrade harness to read it"
            )
    try:
        return _adapter(cls).validate_python(obj)  # type: ignore[no-any-return]
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(the whole object)"
        raise HarnessError(
            f"{where}: {field}: {err['msg'].lower()} (not a {cls.__name__})"
        ) from None


def now_iso() -> str:
    """The local time as ISO 8601 with its offset."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def new_run_id(name: str) -> str:
    """A folder name for a new run or sweep: the name made safe, the time, 4 random hex."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name) or "run"
    return f"{safe}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON to a temp file beside `path`, fsync, then rename over it: a reader sees
    the old file or the new one, never half of one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, sort_keys=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def append_jsonl(path: Path, obj: Any) -> None:
    """Append one JSON line and make it durable before returning."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(obj, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Objects of a JSONL file; a torn last line is skipped, a bad earlier line raises."""
    if not path.is_file():
        return
    lines = path.read_text(encoding="utf-8").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines):
                return  # torn by a crash mid-write
            raise HarnessError(f"{path}:{n}: not valid JSON") from None


# ---------------------------------------------------------------- runs


class RunWriter:
    """Writes one run folder as work finishes."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._questions = open(self.run_dir / QUESTIONS, "a", encoding="utf-8")  # noqa: SIM115

    def write_header(self, header: RunHeader) -> None:
        """Replace header.json atomically."""
        write_json_atomic(self.run_dir / HEADER, header.to_dict())

    def append(self, result: QuestionResult) -> None:
        """Append one question's line, flushed and fsynced."""
        self._questions.write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
        self._questions.flush()
        os.fsync(self._questions.fileno())

    def close(self) -> None:
        """Close questions.jsonl."""
        self._questions.close()


def _read_file_record(cls: type[T], folder: str | os.PathLike[str], name: str, kind: str) -> T:
    """The JSON file `name` of a run or sweep folder as a checked `cls` record."""
    path = Path(folder) / name
    if not path.is_file():
        raise HarnessError(f"{folder}: not a {kind} folder (no {name})")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{path}: unreadable ({exc})") from None
    return parse_record(cls, obj, str(path))


def read_header(run_dir: str | os.PathLike[str]) -> RunHeader:
    """A run folder's header.json, checked."""
    return _read_file_record(RunHeader, run_dir, HEADER, "run")


def read_run(run_dir: str | os.PathLike[str]) -> RunLog:
    """A run folder read back into typed records."""
    folder = Path(run_dir)
    header = read_header(folder)
    path = folder / QUESTIONS
    questions = tuple(
        parse_record(QuestionResult, d, f"{path}:{n}") for n, d in enumerate(iter_jsonl(path), 1)
    )
    return RunLog(run_dir=folder, header=header, questions=questions)


def resolve_run_dir(arg: str, results_dir: str | os.PathLike[str]) -> Path:
    """A run folder given as a path, as a run id under the results folder, or a sweep's
    trial as SWEEP_DIR/trials/N or SWEEP:N."""
    candidates = [Path(arg), Path(results_dir) / arg]
    if ":" in arg:
        sweep, _, number = arg.rpartition(":")
        candidates += [
            Path(sweep) / "trials" / number,
            Path(results_dir) / sweep / "trials" / number,
        ]
    for candidate in candidates:
        if (candidate / HEADER).is_file():
            return candidate
    raise HarnessError(f"{arg}: no run folder here or under {results_dir}/ (no {HEADER})")


def find_sweep_dir(arg: str, results_dir: str | os.PathLike[str]) -> Path | None:
    """The sweep folder `arg` names (a path or an id under the results folder), or None."""
    for candidate in (Path(arg), Path(results_dir) / arg):
        if (candidate / SWEEP_FILE).is_file():
            return candidate
    return None


# ---------------------------------------------------------------- sweeps


def write_sweep_summary(sweep_dir: Path, summary: SweepSummary) -> None:
    """Replace sweep.json atomically."""
    write_json_atomic(sweep_dir / SWEEP_FILE, summary.to_dict())


def append_trial(sweep_dir: Path, record: TrialRecord) -> None:
    """Append one line to trials.jsonl, durable on return."""
    append_jsonl(sweep_dir / TRIALS_FILE, record.to_dict())


def read_trials(sweep_dir: str | os.PathLike[str]) -> list[TrialRecord]:
    """trials.jsonl read back; the last line wins for a trial number listed twice."""
    path = Path(sweep_dir) / TRIALS_FILE
    by_number: dict[int, TrialRecord] = {}
    for n, d in enumerate(iter_jsonl(path), 1):
        rec = parse_record(TrialRecord, d, f"{path}:{n}")
        by_number[rec.number] = rec
    return [by_number[n] for n in sorted(by_number)]


def read_sweep_summary(sweep_dir: str | os.PathLike[str]) -> SweepSummary:
    """A sweep folder's sweep.json, checked."""
    return _read_file_record(SweepSummary, sweep_dir, SWEEP_FILE, "sweep")


def read_sweep(sweep_dir: str | os.PathLike[str]) -> SweepLog:
    """A sweep folder read back: summary and trials."""
    folder = Path(sweep_dir)
    summary = read_sweep_summary(folder)
    return SweepLog(sweep_dir=folder, summary=summary, trials=tuple(read_trials(folder)))


def list_results(results_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Runs and sweeps directly under `results_dir`, from their headers only."""
    root = Path(results_dir)
    if not root.is_dir():
        raise HarnessError(f"{results_dir}: no such folder")
    out: list[dict[str, Any]] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if (folder / SWEEP_FILE).is_file():
            sw = read_sweep_summary(folder)
            best = sw.best[0] if sw.best else None
            out.append(
                {
                    "kind": "sweep",
                    "id": folder.name,
                    "path": str(folder),
                    "status": sw.status,
                    "name": sw.config.get("name", ""),
                    "counts": {
                        "complete": sw.counts.complete,
                        "pruned": sw.counts.pruned,
                        "failed": sw.counts.failed,
                    },
                    "objective": sw.objective,
                    "best_values": best.values if best else None,
                    "best_trial": best.number if best else None,
                }
            )
        elif (folder / HEADER).is_file():
            h = read_header(folder)
            k = h.k
            out.append(
                {
                    "kind": "run",
                    "id": folder.name,
                    "path": str(folder),
                    "status": h.status,
                    "name": h.name,
                    "k": k,
                    "n_questions": h.data.get("n_questions"),
                    "metrics": {
                        m: h.metrics[m]
                        for m in (f"hit_rate@{k}", f"mrr@{k}", f"relevancy_mrr@{k}")
                        if m in h.metrics
                    },
                    "started_at": h.started_at,
                }
            )
    return out
