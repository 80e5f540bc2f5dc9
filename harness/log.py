"""The result log: the product's output, typed and versioned.

```
results/<run_id>/
  header.json      RunHeader: status, resolved config, component specs, data hashes,
                   metrics, stats, error. Replaced atomically (temp file, then rename).
  questions.jsonl  one QuestionResult per line, appended and flushed as each finishes.
```

A torn last line (a crash mid-write) is skipped on read; a bad line elsewhere is an error.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.types import LOG_VERSION, ComponentSpec, QuestionResult

HEADER = "header.json"
QUESTIONS = "questions.jsonl"

STATUS_RUNNING = "running"
STATUS_DONE = "done"
STATUS_FAILED = "failed"
STATUS_INTERRUPTED = "interrupted"
STATUS_PRUNED = "pruned"


@dataclass(frozen=True)
class RunHeader:
    run_id: str
    name: str
    status: str
    started_at: str
    config: dict[str, Any]
    components: dict[str, ComponentSpec]
    data: dict[str, Any]
    ks: tuple[int, ...]
    metrics: dict[str, float] = field(default_factory=dict)
    metrics_ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    """95% bootstrap interval over questions for each mean of metrics.CI_METRICS."""
    stats: dict[str, Any] = field(default_factory=dict)
    finished_at: str | None = None
    error: str | None = None
    log_version: int = LOG_VERSION

    def to_dict(self) -> dict[str, Any]:
        return {
            "log_version": self.log_version,
            "run_id": self.run_id,
            "name": self.name,
            "status": self.status,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "error": self.error,
            "config": self.config,
            "components": {k: v.to_dict() for k, v in self.components.items()},
            "data": self.data,
            "ks": list(self.ks),
            "metrics": self.metrics,
            "metrics_ci": {k: list(v) for k, v in self.metrics_ci.items()},
            "stats": self.stats,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunHeader:
        return cls(
            run_id=d["run_id"],
            name=d["name"],
            status=d["status"],
            started_at=d["started_at"],
            finished_at=d.get("finished_at"),
            error=d.get("error"),
            config=d.get("config", {}),
            components={k: ComponentSpec.from_dict(v) for k, v in d.get("components", {}).items()},
            data=d.get("data", {}),
            ks=tuple(d.get("ks", ())),
            metrics=d.get("metrics", {}),
            metrics_ci={k: (v[0], v[1]) for k, v in d.get("metrics_ci", {}).items()},
            stats=d.get("stats", {}),
            log_version=d.get("log_version", LOG_VERSION),
        )


@dataclass(frozen=True)
class RunLog:
    run_dir: Path
    header: RunHeader
    questions: tuple[QuestionResult, ...]


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def new_run_id(name: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name) or "run"
    return f"{safe}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def write_json_atomic(path: Path, obj: Any) -> None:
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


class RunWriter:
    """Writes one run folder as work finishes."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._questions = open(self.run_dir / QUESTIONS, "a", encoding="utf-8")  # noqa: SIM115

    def write_header(self, header: RunHeader) -> None:
        write_json_atomic(self.run_dir / HEADER, header.to_dict())

    def append(self, result: QuestionResult) -> None:
        self._questions.write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
        self._questions.flush()
        os.fsync(self._questions.fileno())

    def close(self) -> None:
        self._questions.close()


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


def read_header(run_dir: str | os.PathLike[str]) -> RunHeader:
    path = Path(run_dir) / HEADER
    if not path.is_file():
        raise HarnessError(f"{run_dir}: not a run folder (no {HEADER})")
    try:
        return RunHeader.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, KeyError) as exc:
        raise HarnessError(f"{path}: unreadable run header ({exc})") from None


def read_run(run_dir: str | os.PathLike[str]) -> RunLog:
    """A run folder read back into typed records."""
    folder = Path(run_dir)
    header = read_header(folder)
    questions = tuple(QuestionResult.from_dict(d) for d in iter_jsonl(folder / QUESTIONS))
    return RunLog(run_dir=folder, header=header, questions=questions)
