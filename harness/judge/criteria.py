"""Criteria judging (mode "criteria"): the passage graded 0-3 on four criteria in one call.

After Farzi & Dietz's criteria-based relevance judgments ("Pencils down!", 2024, and
"Criteria-Based LLM Relevance Judgments", ICTIR 2025): instead of one relevance grade, the
judge grades the passage on **exactness** (how precisely it answers the question),
**coverage** (how much of it is about the question), **topicality** (whether it is about
the subject of the whole question, not one word of it) and **contextual fit** (whether it
gives background that helps answer), each 0-3. The paper asks each criterion in its own
call and then asks the LLM again for a label from the four grades; here the four grades
come in ONE call whose answer a grammar (llama.cpp) restricts to four labelled digits,
and the label is computed, not asked:

**Aggregation** (a sum rule in the spirit of the paper's rule-based variant; its exact
cut-offs could not be checked against a source here, so these are ours: the sum of the
four grades, 0-12, read as a 0-3 relevance label): label 3 for a sum of 10-12, 2 for
7-9, 1 for 5-6, 0 for 0-4 (`LABEL_FLOORS`). relevant = label >= `judge.relevant_grade` (default 1: sum >= 5) and
complete = label >= `judge.complete_grade` (default 2: sum >= 7), as graded judging reads
its grade. With logprobs, each criterion's digit has a distribution (its alternatives
renormalised over 0-3); the criteria are taken as independent, so the sum's distribution
is their convolution, and P(relevant) = P(label >= relevant_grade), P(complete) =
P(label >= complete_grade); the verdict is P >= 0.5. A criterion whose digit came without
alternatives counts as sure of its digit; with none at all the answered sum decides and
P is None. Both verdicts carry the label distribution (P(label = 0..3)) as graded ones
carry the grade distribution, so "complete"'s P is already P(relevant and complete).

The fixed instructions (the criteria and the scale, plus any few-shot examples) are the
system message and the question comes before the passage, so a server's prompt cache
serves the instructions to every call and a question's text to all of its chunks.
`judge.criteria` texts are not shown: the four criteria replace them.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from harness.judge.parsing import MalformedOutput, grade_distribution
from harness.judge.prompts import SYSTEM_PROMPT, fence
from harness.judge.protocol import Pair
from harness.llm.client import TopLogprobs
from harness.types import CriterionVerdict

CRITERIA_LABELS = ("exactness", "coverage", "topicality", "contextual fit")
"""The four criteria, in the order the answer gives them."""

CRITERIA_DESCRIPTIONS = {
    "exactness": "how precisely the passage answers the question",
    "coverage": "how much of the passage is about the question and what it asks",
    "topicality": (
        "whether the passage is about the subject of the whole question, not only about "
        "one of its words"
    ),
    "contextual fit": "whether the passage gives background or context that helps answer",
}

# Highest grade first, as the graded scale is (#22 item 4).
CRITERIA_SCALE = (
    "3 = the passage fully meets the criterion.\n"
    "2 = the passage meets the criterion adequately.\n"
    "1 = the passage meets the criterion marginally or in part.\n"
    "0 = the passage does not meet the criterion at all."
)

LABEL_FLOORS = (0, 5, 7, 10)
"""The lowest sum of the four grades (0-12) that reads as relevance label 0, 1, 2, 3."""

CRITERIA_SYSTEM = (
    f"{SYSTEM_PROMPT}\n\n"
    "Grade the passage for the question on four criteria, each from 0 to 3:\n"
    + "".join(f"{name}: {text}.\n" for name, text in CRITERIA_DESCRIPTIONS.items())
    + f"Scale for each criterion:\n{CRITERIA_SCALE}\n"
    "Think about what the question asks and what the passage gives, then answer exactly "
    "four lines, one digit on each:\n" + "\n".join(f"{name}: <0-3>" for name in CRITERIA_LABELS)
)
"""The fixed instructions: the same for every call, so a prompt cache serves them."""

GRAMMAR_CRITERIA = (
    "root ::= " + ' "\\n" '.join(f'"{name}: " d' for name in CRITERIA_LABELS) + "\nd ::= [0-3]"
)
"""A GBNF grammar (llama.cpp) whose only answers are the four labelled digits."""

CRITERIA_REMINDER = "Answer exactly four lines, one digit 0-3 on each: " + ", ".join(
    f"{name}: <digit>" for name in CRITERIA_LABELS
)
CRITERIA_MAX_TOKENS = 40
"""Room for the four lines (about 5 tokens each) with or without a grammar."""


def build_messages_criteria(question: str, chunk_text: str) -> list[dict[str, str]]:
    """Chat messages for one (question, passage): the instructions as the system message,
    then the question before the passage (see the module's docstring)."""
    user = (
        f"Question:\n{question}\n\n"
        f"<passage>\n{fence(chunk_text)}\n</passage>\n\n"
        "Grade this passage for this question on the four criteria."
    )
    return [{"role": "system", "content": CRITERIA_SYSTEM}, {"role": "user", "content": user}]


def _label_pattern(name: str) -> str:
    return r"[\s_-]*".join(re.escape(w) for w in name.split())


_ANSWER = re.compile(
    r".*?".join(rf"{_label_pattern(n)}\W*?([0-3])\b" for n in CRITERIA_LABELS), re.I | re.S
)


def _parse_spans(raw: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(the four grades, the offset of each digit in `raw`); MalformedOutput otherwise."""
    m = _ANSWER.search(raw)
    if not m:
        raise MalformedOutput(
            "expected four lines "
            + ", ".join(f"{n}: 0-3" for n in CRITERIA_LABELS)
            + f", got {raw[:200]!r}"
        )
    n = len(CRITERIA_LABELS)
    return tuple(int(m.group(i)) for i in range(1, n + 1)), tuple(
        m.start(i) for i in range(1, n + 1)
    )


def parse_criteria(raw: str) -> tuple[int, ...]:
    """The four grades (exactness, coverage, topicality, contextual fit) from an answer
    like "exactness: 2\\ncoverage: 1\\ntopicality: 3\\ncontextual fit: 2" (any casing,
    "contextual_fit" too, text between the lines allowed); MalformedOutput otherwise."""
    return _parse_spans(raw)[0]


def digit_distributions(
    tokens: Sequence[tuple[str, TopLogprobs]],
) -> tuple[tuple[float, ...] | None, ...]:
    """Per criterion, P(grade = 0..3) from the alternatives of the token that holds its
    digit (renormalised over the four digits); None for a criterion whose digit is not a
    token of its own or came without alternatives, and for all four when the tokens do
    not read as an answer."""
    none: tuple[None, ...] = (None,) * len(CRITERIA_LABELS)
    text = "".join(t for t, _ in tokens)
    try:
        grades, offsets = _parse_spans(text)
    except MalformedOutput:
        return none
    starts: list[int] = []
    at = 0
    for token, _ in tokens:
        starts.append(at)
        at += len(token)
    out: list[tuple[float, ...] | None] = []
    for grade, offset in zip(grades, offsets, strict=True):
        token, top = tokens[bisect.bisect_right(starts, offset) - 1]
        dist = grade_distribution(top) if token.strip() == str(grade) else None
        out.append(tuple(dist) if dist is not None else None)
    return tuple(out)


def label_of_sum(total: int) -> int:
    """The 0-3 relevance label of a sum of the four grades (`LABEL_FLOORS`)."""
    return max(label for label, floor in enumerate(LABEL_FLOORS) if total >= floor)


@dataclass(frozen=True)
class CriteriaGrades:
    """The four grades of one answer and, where logprobs gave them, their distributions."""

    grades: tuple[int, ...]
    distributions: tuple[tuple[float, ...] | None, ...] = (None, None, None, None)

    @property
    def total(self) -> int:
        """The sum of the answered grades (0-12)."""
        return sum(self.grades)

    @property
    def label(self) -> int:
        """The answered grades' relevance label (0-3)."""
        return label_of_sum(self.total)

    def sum_distribution(self) -> list[float] | None:
        """P(sum = 0..12), the criteria taken as independent (a criterion without a
        distribution sure of its answered grade); None when no criterion has one."""
        if all(d is None for d in self.distributions):
            return None
        dist = [1.0]
        for grade, d in zip(self.grades, self.distributions, strict=True):
            part = list(d) if d is not None else [1.0 if g == grade else 0.0 for g in range(4)]
            nxt = [0.0] * (len(dist) + 3)
            for s, ps in enumerate(dist):
                for g, pg in enumerate(part):
                    nxt[s + g] += ps * pg
            dist = nxt
        return dist

    def label_distribution(self) -> list[float] | None:
        """P(label = 0..3) from the sum's distribution; None without one."""
        sums = self.sum_distribution()
        if sums is None:
            return None
        out = [0.0] * len(LABEL_FLOORS)
        for s, p in enumerate(sums):
            out[label_of_sum(s)] += p
        return out

    def p_at_least(self, cut: int) -> float | None:
        """P(label >= cut); None without distributions."""
        labels = self.label_distribution()
        return sum(labels[cut:]) if labels is not None else None

    def describe(self) -> str:
        """The grades as a verdict's reason says them."""
        parts = ", ".join(f"{n} {g}" for n, g in zip(CRITERIA_LABELS, self.grades, strict=True))
        return f"{parts} (sum {self.total}: label {self.label})"

    def verdicts(
        self, relevant_grade: int, complete_grade: int, raw: str = ""
    ) -> tuple[CriterionVerdict, CriterionVerdict]:
        """(relevant, complete): P(label >= the criterion's cut-off) and the verdict
        P >= 0.5, or without distributions the answered label against the cut-off."""
        labels = self.label_distribution()
        out = []
        for name, cut in (("relevant", relevant_grade), ("complete", complete_grade)):
            p = sum(labels[cut:]) if labels is not None else None
            out.append(
                CriterionVerdict(
                    name,
                    p >= 0.5 if p is not None else self.label >= cut,
                    p_yes=p,
                    distribution=tuple(labels) if labels is not None else None,
                    reason=self.describe(),
                    raw=raw,
                )
            )
        return out[0], out[1]


def read_answer(raw: str, tokens: Sequence[tuple[str, TopLogprobs]]) -> CriteriaGrades:
    """The grades of an answer's text and the distributions of its tokens' logprobs."""
    grades = parse_criteria(raw)
    dists = digit_distributions(tokens)
    # the distributions belong to the tokens' own reading of the answer: if it differs
    # from the text's (it should not), they are not used
    if not tokens or "".join(t for t, _ in tokens).strip() != raw.strip():
        dists = (None,) * len(CRITERIA_LABELS)
    return CriteriaGrades(grades, dists)


class _Asking(Protocol):
    """What `grade_criteria` uses of a `ChatJudge` (named here, not imported: the chat
    judge imports this module)."""

    use_grammar: bool
    grade_cuts: tuple[int, int]

    async def _ask(
        self,
        messages: list[dict[str, str]],
        parse: Callable[[str], Any],
        *,
        grammar: str | None,
        max_tokens: int,
        reminder: str = ...,
        top_logprobs: int = ...,
    ) -> Any: ...

    def _failed_pair(self, a: Any) -> Pair: ...


async def grade_criteria(judge: _Asking, question: str, chunk_text: str) -> Pair:
    """Both criteria of one (question, passage) from one criteria call of `judge` (a
    `ChatJudge`: its transport, re-ask, grammar setting and grade cut-offs). The call's
    cost is booked on the relevant verdict."""
    a = await judge._ask(
        build_messages_criteria(question, chunk_text),
        parse_criteria,
        grammar=GRAMMAR_CRITERIA if judge.use_grammar else None,
        max_tokens=CRITERIA_MAX_TOKENS,
        reminder=CRITERIA_REMINDER,
        top_logprobs=10,  # all four digits, even where other tokens rank above some
    )
    if a.error:
        return judge._failed_pair(a)
    answer = a.raws[-1] if a.raws else ""
    graded = read_answer(answer, a.tokens)
    rel, comp = graded.verdicts(*judge.grade_cuts, raw=a.raw)
    return rel.with_cost(a.cost), comp
