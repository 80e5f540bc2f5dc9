"""Reading the judge's answers: yes/no (with an optional reason), both criteria in one
answer, one line per passage, and P(yes) from the answer tokens' logprobs."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

from harness.judge.markdown import strip_markdown
from harness.judge.prompts import SHORT_ANSWERS
from harness.llm.client import TopLogprobs


class MalformedOutput(ValueError):
    """The judge's text has no readable yes/no answer."""


_BOTH = re.compile(r"relevant\W*(yes|no)\b.*?complete\W*(yes|no)\b", re.I | re.S)
_LINE = re.compile(r"^\W*(\d+)\W+relevant\W*(yes|no)\b\W*complete\W*(yes|no)\b", re.I | re.M)


def parse_both(raw: str) -> tuple[bool, bool]:
    """(relevant, complete) from "relevant: yes\ncomplete: no"; MalformedOutput otherwise."""
    m = _BOTH.search(raw)
    if not m:
        raise MalformedOutput(f"expected relevant: yes|no and complete: yes|no, got {raw[:200]!r}")
    return m.group(1).lower() == "yes", m.group(2).lower() == "yes"


def parse_list(raw: str, n: int) -> list[tuple[bool, bool]]:
    """One (relevant, complete) per passage 1..n from lines "i: relevant=yes complete=no"."""
    found: dict[int, tuple[bool, bool]] = {}
    for m in _LINE.finditer(raw):
        found.setdefault(
            int(m.group(1)), (m.group(2).lower() == "yes", m.group(3).lower() == "yes")
        )
    missing = [i for i in range(1, n + 1) if i not in found]
    if missing:
        raise MalformedOutput(f"no verdict for passages {missing} in {raw[:200]!r}")
    return [found[i] for i in range(1, n + 1)]


_LEAD = re.compile(r"^[\s*_`\"'>#\-]*(?:(?:final\s+)?answer|verdict)?\s*[:=\-]?\s*[*_`\"']*", re.I)
_WORD = re.compile(r"^(yes|no)\b[\s*_`\"'.!,;:)\-]*(.*)$", re.I | re.S)


def parse_answer(raw: str) -> tuple[bool, str]:
    """Read (answer, reason) from a judge's text.

    Accepts "yes", "No.", "**Yes**", "Answer: no", "yes: because ...", "no - ...", and a
    JSON object with an "answer" (or "verdict") field and an optional "reason".
    Raises MalformedOutput for anything without a leading yes/no ("maybe", "", prose).
    """
    text = raw.strip()
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            ans = obj.get("answer", obj.get("verdict"))
            if isinstance(ans, bool):
                return ans, str(obj.get("reason", "")).strip()
            if isinstance(ans, str) and ans.strip().lower() in ("yes", "no"):
                return ans.strip().lower() == "yes", str(obj.get("reason", "")).strip()
        raise MalformedOutput(f"no yes/no answer in JSON output: {raw[:200]!r}")
    text = _LEAD.sub("", text, count=1)
    m = _WORD.match(text)
    if not m:
        raise MalformedOutput(f"expected yes or no, got {raw[:200]!r}")
    reason = m.group(2).strip()
    rest_words = reason.lower().split()
    if rest_words and rest_words[0].strip(".,:;") in ("yes", "no") and len(rest_words) == 1:
        raise MalformedOutput(f"both yes and no in {raw[:200]!r}")
    return m.group(1).lower() == "yes", reason


def parse_short_answer(raw: str) -> tuple[bool, str]:
    """(answer, "") from a reply the short grammar constrained and one token ended: the
    word, or where a model's tokenizer splits it, its first piece ("YE" of "YES"), which
    already decides, as every allowed answer starts with y or n. MalformedOutput for
    anything else."""
    text = raw.strip()
    if text and any(a.startswith(text) for a in SHORT_ANSWERS):
        return text[0] in "yY", ""
    raise MalformedOutput(f"expected yes or no, got {raw[:200]!r}")


def p_yes_from_logprobs(top_logprobs: Sequence[tuple[str, float]] | None) -> float | None:
    """P(yes) / (P(yes) + P(no)) over the first answer token's alternatives, or None.

    Tokens are compared lower-cased and stripped, so "Yes", " yes" and "YES" all count.
    """
    if not top_logprobs:
        return None
    p = {"yes": 0.0, "no": 0.0}
    for token, logprob in top_logprobs:
        word = token.strip().strip("*_`\"'").lower()
        if word in p:
            p[word] += math.exp(logprob)
    total = p["yes"] + p["no"]
    return p["yes"] / total if total > 0 else None


def p_yes_per_answer(tokens: Sequence[tuple[str, TopLogprobs]]) -> list[float | None]:
    """P(yes) at every answer token (a yes or a no) of a reply, in order: one for a
    pointwise answer, two for both criteria, two per passage for a list."""
    return [
        p_yes_from_logprobs(top) for token, top in tokens if token.strip().lower() in ("yes", "no")
    ]


# ---------------------------------------------------------------- graded answers

_DIGIT = re.compile(r"[0-3]")
GRADES = (0, 1, 2, 3)


def parse_grade(raw: str) -> int:
    """The 0-3 grade at the start of a judge's answer ("2", " 3.", "Grade: 1");
    MalformedOutput when there is none."""
    m = _DIGIT.search(raw.strip()[:20])
    if not m:
        raise MalformedOutput(f"expected a grade 0-3, got {raw[:200]!r}")
    return int(m.group(0))


def grade_distribution(top_logprobs: Sequence[tuple[str, float]] | None) -> list[float] | None:
    """P(grade = 0..3) from the grade token's alternatives, renormalised over the four
    digits (a grammar may have removed every other token); None without digit mass."""
    if not top_logprobs:
        return None
    mass = [0.0] * len(GRADES)
    for token, logprob in top_logprobs:
        word = token.strip()
        if len(word) == 1 and word in "0123":
            mass[int(word)] += math.exp(logprob)
    total = sum(mass)
    return [m / total for m in mass] if total > 0 else None


def first_token_alternatives(tokens: Sequence[tuple[str, TopLogprobs]]) -> TopLogprobs | None:
    """The alternatives of the first generated token (the grade, or NONE vs a sentence)."""
    return tokens[0][1] if tokens else None


# ---------------------------------------------------------------- extractive answers

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_SPACE = re.compile(r"\s+")


def split_sentences(text: str) -> list[str]:
    """The passage's sentences: split after . ! ? followed by space, and at line breaks."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().strip("\"'`").rstrip(".").strip().lower()


def _norm_map(text: str) -> tuple[str, list[int]]:
    """`text` lower-cased with its whitespace runs as one space (none at the ends), and
    each character's index in `text`: `_norm`'s spacing and case, keeping the way back."""
    chars: list[str] = []
    where: list[int] = []
    space = True  # no space before the first word
    for i, ch in enumerate(text):
        if ch.isspace():
            if not space:
                chars.append(" ")
                where.append(i)
            space = True
            continue
        for c in ch.lower():
            chars.append(c)
            where.append(i)
        space = False
    return "".join(chars), where


def _in_stripped(found: str, passage: str) -> str | None:
    """The passage's own text (markup and all) of a copy found in its markdown-stripped
    form (`judge.markdown`), or None when it is not there either."""
    stripped = strip_markdown(passage)
    if stripped.text == passage:
        return None
    hay, where = _norm_map(stripped.text)
    at = hay.find(found)
    if at < 0:
        return None
    last = where[at + len(found) - 1] + 1
    # the needle lost its final full stop to _norm: the sentence's own end comes back
    while last < len(stripped.text) and stripped.text[last] in ".!?":
        last += 1
    start, end = stripped.original_span(where[at], last)
    return passage[start:end]


def says_none(text: str) -> bool:
    """True when an answer is NONE alone (any casing, spacing, quotes or a final full
    stop aside): the model's "nothing here answers it", in every prompt that offers it."""
    return _norm(text) == "none"


def parse_extract(raw: str, passage: str) -> tuple[bool, str]:
    """(answered, evidence) from an extractive answer: NONE (any casing, alone) is
    (False, ""); a copy found verbatim in the passage (spacing, case, quotes and a final
    full stop aside) is (True, the copy); a copy of the passage's markdown-stripped text
    (the text the extractive prompt shows) is (True, the passage's own text of it, markup
    included); a copy that is in neither is (False, the copy): an invented sentence counts
    as no answer. An empty answer is MalformedOutput."""
    text = raw.strip()
    if not text:
        raise MalformedOutput("expected a sentence of the passage or NONE, got nothing")
    if says_none(text):
        return False, ""
    found = _norm(text)
    if not found:
        return False, text
    if found in _norm(passage):
        return True, text
    original = _in_stripped(found, passage)
    return (True, original) if original is not None else (False, text)


def p_none(top_logprobs: TopLogprobs | None, sentences: Sequence[str]) -> float | None:
    """P(NONE) from the first token's alternatives: the mass of tokens that begin NONE
    and begin no sentence, over that mass plus the mass of tokens that begin a sentence
    (tokens that could begin either are left out); None without such mass."""
    if not top_logprobs:
        return None
    none = answer = 0.0
    starts = [s.lstrip() for s in sentences]
    for token, logprob in top_logprobs:
        t = token.lstrip()
        if not t:
            continue
        begins_sentence = any(s.startswith(t) for s in starts)
        begins_none = "NONE".startswith(t) or "none".startswith(t)
        if begins_none and not begins_sentence:
            none += math.exp(logprob)
        elif begins_sentence and not begins_none:
            answer += math.exp(logprob)
    total = none + answer
    return none / total if total > 0 else None
