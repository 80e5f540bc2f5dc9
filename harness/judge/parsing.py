"""Reading the judge's answers: yes/no (with an optional reason), both criteria in one
answer, one line per passage, and P(yes) from the answer tokens' logprobs."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

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
