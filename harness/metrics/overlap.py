"""Lexical overlap of a question with a passage, and what a ranking of settings costs.

A question written from one passage tends to reuse its words, so lexical retrieval finds
its source and dense retrieval looks worse than it is for people who ask in their own
words (#24). `word_overlap` measures that: the share of a question's content words found
in the passage. `regret` and `kendall_tau` (harness.metrics.stats) compare the ranking of
settings by generated questions with the ranking by labels on real questions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_WORD = re.compile(r"\w+", re.UNICODE)

STOPWORDS = frozenset(
    """a an the of to in on at by for from with about as into over under and or but not no
    is are was were be been being am do does did done have has had having can could will
    would shall should may might must what which who whom whose when where why how that
    this these those there here it its i me my we our you your he him his she her they
    them their s t if then than so such very just also any some all each more most other
    much many one get gets got""".split()  # noqa: SIM905
)
"""Function words left out of overlap: "what is the" says nothing about copying."""


def content_words(text: str) -> list[str]:
    """The lower-cased words of `text` that are not STOPWORDS, in order (repeats kept)."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def word_overlap(question: str, passage: str) -> float:
    """Share of the question's distinct content words that occur in the passage (0-1).

    Edge case: a question with no content word has overlap 0.0 (nothing was copied)."""
    words = set(content_words(question))
    if not words:
        return 0.0
    found = set(_WORD.findall(passage.lower()))
    return len(words & found) / len(words)


def regret(chosen: Sequence[float], truth: Sequence[float]) -> float:
    """What picking the setting `chosen` ranks first costs on `truth`: the best truth
    value minus the truth value of chosen's top setting (0 when they agree). Ties on
    `chosen`'s top are resolved pessimistically (the worst truth among them), since a
    tuner cannot tell them apart. Raises ValueError on empty or unequal lengths."""
    if not chosen or len(chosen) != len(truth):
        raise ValueError("regret needs the same settings scored on both sides")
    top = max(chosen)
    picked = min(t for c, t in zip(chosen, truth, strict=True) if c == top)
    return max(truth) - picked
