"""Reading the model's answers, and the critique filters that decide what is kept.

Filters, in the order a candidate meets them (the first that fails names the drop):

- `malformed`: the generation was not the JSON asked for, had an empty question, or an
  answer of 300 characters or more (the issue's "short specific answer");
- `standalone`: the question mentions the passage/text/context/document it came from
  ("according to the passage"): dropped without asking, whatever a critic would say;
- `critique`: the critique call failed or could not be read;
- `groundedness`, `usefulness`, `standalone`: a score below `min_score` (1-5).
  Unanswerable questions are the exception for groundedness: they must NOT be answerable
  from their passage, so they are kept when it is at most 6 - min_score (2 by default).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from harness.generate.prompts import CRITERIA

MAX_ANSWER_CHARS = 300

_MENTIONS_SOURCE = re.compile(
    r"\b(according to|in|from|based on|within)\s+(the|this|that|above|given)\s+"
    r"(passage|text|context|document|excerpt|paragraph|snippet|article|section)s?\b"
    r"|\b(the|this)\s+(passage|excerpt|snippet|context)\b"
    r"|\b(the|this)\s+(text|document|article)\s+(says?|states?|mentions?|describes?)\b",
    re.IGNORECASE,
)


def mentions_source(question: str) -> bool:
    """True when the question refers to the text it was written from ("in the passage",
    "according to the context", "this excerpt"): it cannot stand alone."""
    return bool(_MENTIONS_SOURCE.search(question))


def _json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text` (models wrap JSON in prose or code fences)."""
    start = text.find("{")
    while start != -1:
        depth = 0
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    try:
                        obj = json.loads(text[start : i + 1])
                    except json.JSONDecodeError:
                        break
                    return obj if isinstance(obj, dict) else None
        start = text.find("{", start + 1)
    return None


@dataclass(frozen=True)
class Draft:
    """A generated question before critique: its text, answer and optional paraphrase."""

    question: str
    answer: str
    paraphrase: str | None = None


def parse_draft(text: str) -> Draft | str:
    """The draft in a generation reply, or why it cannot be used (a one-line reason)."""
    obj = _json_object(text)
    if obj is None:
        return "the reply is not a JSON object"
    q, a, p = obj.get("question"), obj.get("answer"), obj.get("paraphrase")
    if not isinstance(q, str) or not q.strip():
        return "no question in the reply"
    if not isinstance(a, str) or not a.strip():
        return "no answer in the reply"
    if len(a.strip()) >= MAX_ANSWER_CHARS:
        return f"the answer has {len(a.strip())} characters (limit {MAX_ANSWER_CHARS})"
    para = p.strip() if isinstance(p, str) and p.strip() else None
    return Draft(question=" ".join(q.split()), answer=a.strip(), paraphrase=para)


@dataclass(frozen=True)
class Critique:
    """Scores 1-5 per criterion with the critic's reason for each."""

    scores: dict[str, int]
    reasons: dict[str, str]


def parse_critique(text: str) -> Critique | str:
    """The critique in a reply, or why it cannot be read. Each criterion needs an integer
    score 1-5 (a number in a string counts); a missing reason is an empty one."""
    obj = _json_object(text)
    if obj is None:
        return "the critique is not a JSON object"
    scores: dict[str, int] = {}
    reasons: dict[str, str] = {}
    for c in CRITERIA:
        value = obj.get(c)
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
            return f"no score 1-5 for {c} in the critique"
        scores[c] = value
        why = obj.get(f"{c}_why", "")
        reasons[c] = str(why) if why is not None else ""
    return Critique(scores=scores, reasons=reasons)


def failed_filters(qtype: str, critique: Critique, min_score: int) -> list[str]:
    """The criteria this critique fails, in CRITERIA order (empty: keep the question).

    groundedness must be >= min_score, except for unanswerable questions, where it must
    be <= 6 - min_score (the passage must not answer them)."""
    failed = []
    for c in CRITERIA:
        score = critique.scores[c]
        if c == "groundedness" and qtype == "unanswerable":
            ok = score <= 6 - min_score
        else:
            ok = score >= min_score
        if not ok:
            failed.append(c)
    return failed
