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

Everything written is redacted first (`harness.secrets.redact_obj`: every string, so the
JSON stays valid): a key an endpoint echoed into an error, a password in a URL, never
reach a file people share.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import time
from collections.abc import Iterator, Sequence
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
from harness.log.status import effective_status
from harness.metrics import headline
from harness.secrets import redact_obj
from harness.types import LOG_VERSION, QuestionResult

HEADER = "header.json"
QUESTIONS = "questions.jsonl"
SWEEP_FILE = "sweep.json"
TRIALS_FILE = "trials.jsonl"

T = TypeVar("T")


@functools.cache
def _adapter(cls: Any) -> Any:
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
        return _adapter(cls).validate_python(obj)  # type: ignore[arg-type]  # a class is hashable; functools.cache's stub wants Hashable, which mypy does not see type[T] as
    except ValidationError as exc:
        err = exc.errors()[0]
        field = _printable(".".join(str(p) for p in err["loc"]) or "(the whole object)")
        raise HarnessError(
            f"{where}: {field}: {_printable(err['msg'].lower())} (not a {cls.__name__})"
        ) from None


def _printable(text: str) -> str:
    """`text` with control characters escaped: a key read from a file (a field name in a
    message) must not break the message's one line."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def now_iso() -> str:
    """The local time as ISO 8601 with its offset."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def new_run_id(name: str) -> str:
    """A folder name for a new run or sweep: the name made safe, the time, 4 random hex."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name) or "run"
    return f"{safe}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def _new_temp_file(path: Path) -> tuple[int, str]:
    """A new, empty hidden file beside `path`, opened for writing: (fd, its path).

    Not tempfile.mkstemp, which always creates 0600: opening with 0666 lets the kernel
    apply the umask, with no need to read it (os.umask can only be read by setting it,
    which other threads would see)."""
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(4)}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue
    raise HarnessError(f"{path.parent}: cannot create a temporary file beside {path.name}")


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON to a temp file beside `path`, fsync, then rename over it: a reader sees
    the old file or the new one, never half of one. The file gets the mode any new file
    gets here (0666 less the umask), like questions.jsonl beside it."""
    fd, tmp = _new_temp_file(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(redact_obj(obj), f, indent=2, sort_keys=False)
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
        f.write(json.dumps(redact_obj(obj), ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Objects of a JSONL file; a torn last line is skipped, a bad earlier line raises.

    Lines are split as bytes and decoded one by one: a crash mid-write can cut a line
    inside a multi-byte UTF-8 character, and that must cost only the torn line."""
    if not path.is_file():
        return
    lines = path.read_bytes().split(b"\n")
    while lines and not lines[-1].strip():
        lines.pop()
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if n == len(lines):
                return  # torn by a crash mid-write, inside a character
            raise HarnessError(
                f"{path}:{n}: not UTF-8 (byte {exc.start + 1} of the line)"
            ) from None
        try:
            yield json.loads(line)
        except (json.JSONDecodeError, RecursionError):  # RecursionError: nested too deep
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
        path = self.run_dir / HEADER
        try:
            write_json_atomic(path, header.to_dict())
        except OSError as exc:
            if exc.filename is None:
                raise _with_file(exc, path) from exc
            raise

    def append(self, result: QuestionResult) -> None:
        """Append one question's line, flushed and fsynced."""
        self.append_many([result])

    def append_many(self, results: Sequence[QuestionResult]) -> None:
        """Append the questions' lines in one write, flushed and fsynced once (the
        questions that finish together cost one sync, not one each)."""
        if not results:
            return
        try:
            lines = [json.dumps(redact_obj(r.to_dict()), ensure_ascii=False) for r in results]
            self._questions.write("\n".join(lines) + "\n")
            self._questions.flush()
            os.fsync(self._questions.fileno())
        except OSError as exc:
            if exc.filename is None:  # a full disk says ENOSPC without naming the file
                raise _with_file(exc, self.run_dir / QUESTIONS) from exc
            raise

    def close(self) -> None:
        """Close questions.jsonl."""
        try:
            self._questions.close()
        except OSError as exc:  # what a full disk refused to append is flushed again
            if exc.filename is None:
                raise _with_file(exc, self.run_dir / QUESTIONS) from exc
            raise


def _with_file(exc: OSError, path: Path) -> OSError:
    """A copy of `exc` that names `path` (a failed write names no file)."""
    return type(exc)(exc.errno, exc.strerror or str(exc), str(path))


def _read_file_record(cls: type[T], folder: str | os.PathLike[str], name: str, kind: str) -> T:
    """The JSON file `name` of a run or sweep folder as a checked `cls` record."""
    path = Path(folder) / name
    if not path.is_file():
        raise HarnessError(f"{folder}: not a {kind} folder (no {name})")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{path}: not UTF-8 (byte {exc.start + 1})") from None
    except (json.JSONDecodeError, RecursionError) as exc:
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


def as_run(run: RunLog | str | os.PathLike[str]) -> RunLog:
    """`run` itself, or the run folder it names read by `read_run`: the public functions
    that take runs take either (`harness.compare_runs(["results/a", "results/b"])`)."""
    if isinstance(run, RunLog):
        return run
    if isinstance(run, (str, os.PathLike)):
        return read_run(run)
    raise TypeError(
        f"expected a RunLog (harness.read_run(dir)) or a run folder's path, got {type(run).__name__}"
    )


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
    if ":" in arg:
        sweep, _, number = arg.rpartition(":")
        why = _trial_without_run(sweep, number, results_dir)
        if why:
            raise HarnessError(f"{arg}: {why}")
    raise HarnessError(f"{arg}: no run folder here or under {results_dir}/ (no {HEADER})")


def _trial_without_run(sweep: str, number: str, results_dir: str | os.PathLike[str]) -> str:
    """Why trial `number` of sweep `sweep` has no run folder, from the sweep's trials log
    ("" when the log does not say): a repeat (its twin's folder is named), or a trial
    pruned or failed before it ran."""
    folder = find_sweep_dir(sweep, results_dir)
    if folder is None or not number.isdigit() or not (folder / TRIALS_FILE).is_file():
        return ""
    try:
        rec = next((t for t in read_trials(folder) if t.number == int(number)), None)
    except HarnessError:
        return ""
    if rec is None:
        return ""
    state = "a repeat" if rec.state == "repeat" else rec.state
    why = f"trial {rec.number} is {state}" + (f" ({rec.error})" if rec.error else "")
    twin = rec.repeat_of
    return why + (f": its settings ran as {sweep}:{twin}" if twin is not None else ", no run")


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


STATUS_UNREADABLE = "unreadable"
"""The status `list_results` gives a folder whose header or sweep.json cannot be read."""


def _unreadable(kind: str, folder: Path, name: str, exc: Exception) -> dict[str, Any]:
    """The `list_results` row of a folder whose file `name` could not be read."""
    message = str(exc) if isinstance(exc, HarnessError) else f"{folder / name}: {exc}"
    return {
        "kind": kind,
        "id": folder.name,
        "path": str(folder),
        "status": STATUS_UNREADABLE,
        "error": message,
    }


def sweep_entry(sw: SweepSummary, sweep_id: str, path: str) -> dict[str, Any]:
    """A sweep's line in `list_results` (and in a database's list): id, where it is,
    status, counts, objective and the best trial's values."""
    best = sw.best[0] if sw.best else None
    return {
        "kind": "sweep",
        "id": sweep_id,
        "path": path,
        "status": effective_status(sw),
        "name": sw.config.get("name", ""),
        "counts": {
            "complete": sw.counts.complete,
            "pruned": sw.counts.pruned,
            "failed": sw.counts.failed,
            "repeats": sw.counts.repeats,
        },
        "objective": sw.objective,
        "best_values": best.values if best else None,
        "best_trial": best.number if best else None,
    }


def list_results(results_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Runs and sweeps directly under `results_dir`, from their headers only.

    A folder whose header.json or sweep.json cannot be read is listed with status
    "unreadable" and its "error" (one line): one bad folder does not hide the others.
    A "running" one whose process is gone is listed as interrupted (`effective_status`).
    """
    root = Path(results_dir)
    if not root.is_dir():
        raise HarnessError(f"{results_dir}: no such folder")
    out: list[dict[str, Any]] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if (folder / SWEEP_FILE).is_file():
            try:
                sw = read_sweep_summary(folder)
            except (HarnessError, OSError, ValueError) as exc:  # ValueError: not UTF-8
                out.append(_unreadable("sweep", folder, SWEEP_FILE, exc))
                continue
            out.append(sweep_entry(sw, folder.name, str(folder)))
        elif (folder / HEADER).is_file():
            try:
                h = read_header(folder)
            except (HarnessError, OSError, ValueError) as exc:  # ValueError: not UTF-8
                out.append(_unreadable("run", folder, HEADER, exc))
                continue
            k = h.k
            out.append(
                {
                    "kind": "run",
                    "id": folder.name,
                    "path": str(folder),
                    "status": effective_status(h),
                    "name": h.name,
                    "k": k,
                    "n_questions": h.data.get("n_questions"),
                    "metrics": headline(h.metrics, k),
                    "started_at": h.started_at,
                }
            )
    return out
