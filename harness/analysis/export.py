"""A run as TREC files: the ranking and the judge's grades, which trec_eval, ranx or
ir-measures read unchanged."""

from __future__ import annotations

import os
from pathlib import Path

from harness.errors import HarnessError
from harness.log import RunLog


def export_trec(
    run: RunLog, out_dir: str | os.PathLike[str], *, tag: str = "harness"
) -> tuple[Path, Path]:
    """run.trec (`qid Q0 chunk_id rank score tag`, score decreasing with rank, so readers
    that sort by score keep our order) and qrels.trec (`qid 0 chunk_id grade`, the
    judge's 0/1/2 for every judged chunk; failed verdicts are left out)."""
    folder = Path(out_dir)
    if folder.exists() and not folder.is_dir():
        raise HarnessError(
            f"{folder}: --out: expected a folder for run.trec and qrels.trec, not a file"
        )
    folder.mkdir(parents=True, exist_ok=True)
    run_path, qrels_path = folder / "run.trec", folder / "qrels.trec"
    with open(run_path, "w") as r, open(qrels_path, "w") as g:
        for q in run.questions:
            qid = q.question.question_id
            n = len(q.hits)
            if any(c.isspace() for c in qid):
                raise HarnessError(f"question id {qid!r} has whitespace; TREC files cannot hold it")
            for h in q.hits:
                if any(c.isspace() for c in h.chunk.chunk_id):
                    raise HarnessError(
                        f"chunk id {h.chunk.chunk_id!r} has whitespace; TREC files cannot hold it"
                    )
                r.write(f"{qid} Q0 {h.chunk.chunk_id} {h.hit.rank} {n - h.hit.rank + 1} {tag}\n")
                if h.verdict.grade is not None:
                    g.write(f"{qid} 0 {h.chunk.chunk_id} {h.verdict.grade}\n")
    return run_path, qrels_path
