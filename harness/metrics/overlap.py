"""Lexical overlap of a question with a passage, and what a ranking of settings costs.

A question written from one passage tends to reuse its words, so lexical retrieval finds
its source and dense retrieval looks worse than it is for people who ask in their own
words (#24). `word_overlap` measures that: the share of a question's content words found
in the passage. `regret` and `kendall_tau` (harness.metrics.stats) compare the ranking of
settings by generated questions with the ranking by labels on real questions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.types import Document, Question
from harness.words import words

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
    return [w for w in words(text) if w not in STOPWORDS]


def word_overlap(question: str, passage: str) -> float:
    """Share of the question's distinct content words that occur in the passage (0-1).

    Edge case: a question with no content word has overlap 0.0 (nothing was copied)."""
    asked = set(content_words(question))
    if not asked:
        return 0.0
    found = set(words(passage))
    return len(asked & found) / len(asked)


def regret(chosen: Sequence[float], truth: Sequence[float]) -> float:
    """What picking the setting `chosen` ranks first costs on `truth`:
    max(truth) - min(truth[i] for i with chosen[i] == max(chosen)), 0 when they agree.

    Edge cases: ties on `chosen`'s top are resolved pessimistically (the worst truth
    among them), since a tuner cannot tell them apart. Raises ValueError on empty or
    unequal lengths, and on a NaN score on either side: NaN compares false with
    everything, so max() would silently skip or pick it and the regret would read 0 (a
    setting without a score has to be left out before ranking, not ranked)."""
    if not chosen or len(chosen) != len(truth):
        raise ValueError("regret needs the same settings scored on both sides")
    for side, values in (("chosen", chosen), ("truth", truth)):
        if any(math.isnan(v) for v in values):
            raise ValueError(f"regret: a NaN score in {side}; leave unscored settings out")
    top = max(chosen)
    picked = min(t for c, t in zip(chosen, truth, strict=True) if c == top)
    return max(truth) - picked


REAL_QUERY_OVERLAP = 0.46
"""Mean share of a real search query's content words found in a relevant passage:
`word_overlap` of the 22 TREC DL 2019 development queries (MS MARCO: Bing users' queries,
not written from the passage) with their 1,616 passages graded 2-3 (median 0.5, 75th
percentile 0.75). The issue's first guess was 0.35; this is the measured figure."""

FAR_ABOVE = 0.2
"""How far above REAL_QUERY_OVERLAP generated questions' mean overlap must be to warn."""


def source_overlaps(questions: Sequence[Question], docs: Sequence[Document]) -> list[float]:
    """`word_overlap` of each question that has source spans with the text of those spans
    (questions without a source, or whose document is missing, are left out)."""
    by_id = {d.doc_id: d for d in docs}
    out = []
    for q in questions:
        texts = [by_id[s.doc_id].text[s.start : s.end] for s in q.source if s.doc_id in by_id]
        if texts:
            out.append(word_overlap(q.text, " ".join(texts)))
    return out


def overlap_warning(overlaps: Sequence[float]) -> str | None:
    """A warning when generated questions copy their sources' words: their mean overlap
    is more than FAR_ABOVE above REAL_QUERY_OVERLAP. None when they do not (or none)."""
    if not overlaps:
        return None
    mean = sum(overlaps) / len(overlaps)
    if mean <= REAL_QUERY_OVERLAP + FAR_ABOVE:
        return None
    return (
        f"generated questions share {mean:.0%} of their words with their source passages "
        f"(real search queries: about {REAL_QUERY_OVERLAP:.0%} on TREC DL): lexical retrieval "
        "(bm25, hybrid) will look better than it is for real users; regenerate with "
        'generate.style = "query" or generate.style_examples, or check on a few real questions'
    )


def winner_warning(
    source: Sequence[float],
    other: Sequence[float],
    names: Sequence[str],
    other_name: str = "the judge",
) -> str | None:
    """A warning when the source metric and another measure (the judge's metric, or
    labels) pick different settings: each name scored on both sides, higher is better.

    Each side's winners are the settings tied at its best score; the warning is given
    only when the two sets share no setting, i.e. every setting one side picks is
    strictly beaten on the other side's measure. None when they share one (a tie that
    includes the other's winner is no disagreement), or when the lengths differ or no
    setting is given."""
    if not names or not (len(source) == len(other) == len(names)):
        return None
    best_source, best_other = max(source), max(other)
    wins_source = [i for i, v in enumerate(source) if v == best_source]
    wins_other = [i for i, v in enumerate(other) if v == best_other]
    if set(wins_source) & set(wins_other):
        return None
    by_source = " or ".join(names[i] for i in wins_source)
    by_other = " or ".join(names[i] for i in wins_other)
    return (
        f"source metrics pick {by_source} but {other_name} picks {by_other}: generated "
        "questions' source labels may favour settings that match their wording; trust "
        "neither winner without a look at real questions"
    )
