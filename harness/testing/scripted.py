"""A deterministic judge for tests: answers from a script, never from a model."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from harness.judge.protocol import BaseJudge
from harness.types import ComponentSpec, CriterionVerdict


class ScriptedJudge(BaseJudge):
    """Grades from a questions file whose lines carry a `topic` (list of words) and an
    `answer` (text):

    relevant: the chunk mentions one of the question's topic words;
    complete: the chunk contains the question's answer text.
    Questions it does not know are graded "no". `fail_on` makes chunks containing that
    text fail (an error verdict), as a broken endpoint would. Every call is recorded in
    `calls` as (question, chunk text, criterion).
    """

    def __init__(self, questions_file: Path, fail_on: str = "", concurrency: int = 1) -> None:
        self.script: dict[str, tuple[list[str], str]] = {}
        for line in Path(questions_file).read_text(encoding="utf-8").splitlines():
            if line.strip():
                q = json.loads(line)
                self.script[q["text"]] = (q.get("topic", []), q.get("answer", "\0"))
        self.fail_on = fail_on
        self.concurrency = concurrency
        self.calls: list[tuple[str, str, str]] = []
        self._lock = threading.Lock()
        self.spec = ComponentSpec(name="scripted", args={"version": 1})

    def identity(self) -> str:
        """A fixed version string, plus the mode unless pointwise."""
        return "scripted-v1" + ("" if self.mode == "pointwise" else f"-{self.mode}")

    def grade(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str
    ) -> CriterionVerdict:
        """Grades from the script by substring match on the lower-cased chunk; records the call."""
        with self._lock:
            self.calls.append((question, chunk_text, criterion))
        if self.fail_on and self.fail_on in chunk_text:
            return CriterionVerdict(
                criterion=criterion, value=None, raw="??", error="scripted failure", calls=1
            )
        topics, answer = self.script.get(question, ([], "\0"))
        text = chunk_text.lower()
        if criterion == "relevant":
            value = any(t in text for t in topics)
        else:
            value = answer.lower() in text
        return CriterionVerdict(
            criterion=criterion,
            value=value,
            reason=f"scripted {criterion}",
            raw="yes" if value else "no",
            calls=1,
        )
