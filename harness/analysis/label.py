"""Labelling by hand: a person grades sampled (question, chunk) pairs of a run into a
qrels file that `harness validate` reads. The asking is the caller's (the CLI prompts
on a terminal); this module samples, resumes and writes."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from pathlib import Path

from harness.analysis.validate import (
    CHUNKING_LINE,
    chunking_text,
    labelled_chunking,
    read_qrels,
)
from harness.errors import HarnessError
from harness.log import RunLog
from harness.types import JudgedHit, QuestionResult

Ask = Callable[[QuestionResult, JudgedHit], int | str | None]
"""Shows a pair and returns its grade (0 irrelevant, 1 relevant, 2 relevant and
complete), None to skip it, or "quit"."""


def label_run(
    run: RunLog, out: str | os.PathLike[str], ask: Ask, *, sample: int, seed: int = 0
) -> int:
    """Ask about up to `sample` pairs not yet in `out` and append each answer as
    `query_id chunk_id grade` the moment it is given. Returns how many labels were
    written.

    Questions come in a seeded random order, and each question's chunks in rank order,
    all of them: a question whose top k is labelled has metrics by the labels (hit rate,
    MRR) and counts in `validate`'s label-corrected estimates, where pairs sampled one by
    one would leave nearly every question with an unlabelled chunk in its top k."""
    if sample < 1:
        raise HarnessError(f"--sample: expected a positive number of pairs, got {sample}")
    path = Path(out)
    done: set[tuple[str, str]] = set()
    chunking = run.header.config.get("chunking")
    if path.is_file():
        done = {(q, c) for q, labels in read_qrels(path, allow_empty=True).items() for c in labels}
        theirs = labelled_chunking(path)
        if theirs is not None and theirs != chunking:
            raise HarnessError(
                f"{path}: its chunks were cut with {chunking_text(theirs)}, this run's with "
                f"{chunking_text(chunking)}: the same chunk ids would name other texts; label "
                "into another file (--out)"
            )
    questions = sorted(run.questions, key=lambda q: q.question.question_id)
    random.Random(seed).shuffle(questions)
    pairs = [
        (q, h)
        for q in questions
        for h in q.hits
        if (q.question.question_id, h.chunk.chunk_id) not in done
    ]
    new_file = not path.is_file()
    written = 0
    with open(path, "a", encoding="utf-8") as f:
        if new_file:
            # validate and calibrate apply these chunk ids to runs cut the same way only
            f.write(f"{CHUNKING_LINE}{json.dumps(chunking, sort_keys=True)}\n")
            f.write("query_id\tdoc_id\trelevance\n")
        for q, h in pairs[:sample]:
            grade = ask(q, h)
            if grade == "quit":
                break
            if grade is None:
                continue
            f.write(f"{q.question.question_id}\t{h.chunk.chunk_id}\t{grade}\n")
            f.flush()
            written += 1
    return written
