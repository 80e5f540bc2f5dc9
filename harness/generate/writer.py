"""Writing a generated set: the questions, the report, the exam and the paraphrases.

For `--out questions/generated.jsonl`:

    questions/generated.jsonl               kept questions, one JSON object a line
    questions/generated.report.json         counts, cost, and every dropped question
    questions/generated.exam.jsonl          the judge exam (harness.generate.exam)
    questions/generated.exam.qrels.tsv      the exam as labels, for harness calibrate
    questions/generated.paraphrases.jsonl   second phrasings (generate.phrasings = 2)

Each file is written to a temporary file and renamed, so a crash never leaves half a set.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, os_error_message
from harness.generate.exam import ExamItem, exam_qrels_lines


@dataclass(frozen=True)
class GenerationReport:
    """What `generate_questions` did: counts, cost, the files, and every candidate."""

    counts: dict[str, int]
    """generated, kept, dropped, per-filter drops (pipeline.FILTERS) and surplus (passed every
    filter after n were kept, not written)."""
    stats: dict[str, Any]
    paths: dict[str, str]
    kept: tuple[dict[str, Any], ...]
    dropped: tuple[dict[str, Any], ...]
    exam: dict[str, int]
    settings: dict[str, Any]
    kept_by_type: dict[str, int] = field(default_factory=dict)
    """Kept questions of each requested type, in the order asked (0 for a type missing)."""
    warnings: tuple[str, ...] = ()
    """What the user should know about the set (a requested type with no kept question)."""

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON values (the report file holds this)."""
        return {
            "settings": self.settings,
            "counts": self.counts,
            "kept_by_type": self.kept_by_type,
            "warnings": list(self.warnings),
            "stats": self.stats,
            "files": self.paths,
            "exam": self.exam,
            "dropped": list(self.dropped),
        }


def output_paths(out: str | os.PathLike[str]) -> dict[str, Path]:
    """The files of a generated set, named from `out` (which must end in .jsonl)."""
    p = Path(out)
    if p.suffix != ".jsonl":
        raise HarnessError(f"--out {p}: expected a .jsonl file name")
    stem = p.with_suffix("")
    return {
        "questions": p,
        "report": Path(f"{stem}.report.json"),
        "exam": Path(f"{stem}.exam.jsonl"),
        "exam_qrels": Path(f"{stem}.exam.qrels.tsv"),
        "paraphrases": Path(f"{stem}.paraphrases.jsonl"),
    }


def _write(path: Path, text: str) -> None:
    """`text` into `path` atomically (a temp file in the same folder, then a rename)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as exc:
        raise HarnessError(os_error_message(exc)) from None


def _jsonl(rows: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def write_outputs(
    paths: dict[str, Path],
    report: GenerationReport,
    exam: Sequence[ExamItem],
    paraphrases: Sequence[dict[str, Any]] | None,
) -> None:
    """Write every file of the set; the paraphrase file only when `paraphrases` is given."""
    _write(paths["questions"], _jsonl(report.kept))
    _write(paths["exam"], _jsonl([i.to_dict() for i in exam]))
    qrels = exam_qrels_lines(exam)
    _write(
        paths["exam_qrels"], "query_id\tpassage_id\trelevance\n" + "".join(f"{r}\n" for r in qrels)
    )
    if paraphrases is not None:
        _write(paths["paraphrases"], _jsonl(paraphrases))
    _write(paths["report"], json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")
