"""Sampling source passages across the documents, independent of any chunking.

Every document gets a passage first; the rest go in proportion to the square root of
the documents' lengths (long documents get more, short ones are not starved), handed out
one at a time to the document whose share is furthest behind. Within a document, the
j-th passage starts at the j-th point of a van der Corput sequence over its length (0,
1/2, 1/4, 3/4, ...: each point halves the widest gap the earlier ones left), jittered
within that gap and turned by a seeded offset per document, so any first c passages of
a document spread over it. The start is then snapped to the start of its line when that
is near (less than half a passage back), else to the sentence start nearest the point (a
word start when the line has no sentence end there), so a long line, or a document
without line breaks, is sampled over its whole length; the passage is cut at a line or
sentence end near `passage_chars`.

The same corpus and seed give the same passages, and asking for more passages adds to
the end of the list without moving any earlier one: the i-th passage depends on the seed
and i, never on the count, so a rerun with a larger `--n` asks the questions it asked
before again (read from the cache) and pays only for the new ones (and for a candidate
the smaller run gave to a short type as a spare, which the larger one may ask as
planned).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from harness.corpus.headings import headings
from harness.types import Chunk, Document, SourceSpan, span_digest

_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n")
_SENTENCE_START = re.compile(r"[.!?]\s+(?=\S)")
"""Its match's end is where a sentence starts (after ". ", "! ", "? ")."""
_WORD_START = re.compile(r"\s+(?=\S)")
"""Its match's end is where a word starts."""


@dataclass(frozen=True)
class Passage:
    """A sampled passage: its span in the document, its text and a topic label."""

    span: SourceSpan
    text: str
    topic: str
    """The document's title, and the nearest heading above the passage when it is
    another ("Benefits / Pension")."""


def topic_label(doc: Document, start: int) -> str:
    """The topic of a passage starting at `start`: the document's title, and the last
    heading (`harness.corpus.headings`) on a line starting at or before `start`, when
    the title does not already hold it."""
    title = doc.title.strip() or doc.doc_id
    heading = ""
    for h in headings(doc.text):
        if h.start > start:
            break
        heading = h.text
    held = re.search(rf"(?<!\w){re.escape(heading)}(?!\w)", title, re.IGNORECASE)
    return f"{title} / {heading}" if heading and held is None else title


def snap_start(text: str, point: int, length: int) -> int:
    """Where a passage of about `length` characters chosen at `point` starts: the start of
    `point`'s line when it is less than length // 2 back, else the sentence start nearest
    `point` within `length` of it on the same line (the line's start counts as one), else
    the nearest word start there, else the line's start. Never mid-word."""
    line = text.rfind("\n", 0, point) + 1
    if point - line <= length // 2:
        return line
    eol = text.find("\n", point)
    eol = len(text) if eol < 0 else eol
    lo, hi = max(line, point - length), min(eol, point + length)
    for pattern in (_SENTENCE_START, _WORD_START):
        starts = [m.end() for m in pattern.finditer(text, lo, hi)]
        if pattern is _SENTENCE_START and line >= lo:
            starts.append(line)
        if starts:
            return min(starts, key=lambda s: (abs(s - point), s))
    return line


def passage_at(doc: Document, start: int, length: int) -> Passage:
    """The passage of about `length` characters from `snap_start(start)`, ending at the
    last line or sentence end before start + length (or at the hard cut when the text
    has none there). Leading blank space is skipped."""
    text = doc.text
    start = max(0, min(start, len(text) - 1))
    start = snap_start(text, start, length)
    while start < len(text) and text[start].isspace():
        start += 1
    if start >= len(text):  # only blank space after `start`: take the document's tail
        start = max(0, len(text) - length)
    hard = min(len(text), start + length)
    end = hard
    if hard < len(text):
        ends = [m.end() for m in _SENTENCE_END.finditer(text, start + length // 2, hard)]
        if ends:
            end = ends[-1]
    while end > start + 1 and text[end - 1].isspace():
        end -= 1
    return Passage(
        span=SourceSpan(
            doc_id=doc.doc_id, start=start, end=end, digest=span_digest(text[start:end])
        ),
        text=text[start:end],
        topic=topic_label(doc, start),
    )


WIDEN_CHARS = 40
"""How far a search window's edge may move out to the nearest white space (no word is
cut where a shorter one allows)."""


def corpus_windows(docs: Sequence[Document], passage_chars: int) -> list[Chunk]:
    """Every document cut into overlapping windows for searching the whole corpus: one
    every half passage (s = `passage_chars` // 2), each 2s characters from there and
    widened by up to WIDEN_CHARS to the white space around it. A window starting at
    i*s holds everything that starts between i*s and i*s + s and is at most s long, so
    every sentence up to half a passage long lies whole in one of them. Windows of
    blank text are left out; ids are "<doc_id>@<i>"."""
    step = max(1, passage_chars // 2)
    out: list[Chunk] = []
    for doc in docs:
        text = doc.text
        for i, start in enumerate(range(0, max(1, len(text)), step)):
            end = min(len(text), start + 2 * step)
            a, b = start, end
            while a > 0 and start - a < WIDEN_CHARS and not text[a - 1].isspace():
                a -= 1
            while b < len(text) and b - end < WIDEN_CHARS and not text[b].isspace():
                b += 1
            if text[a:b].strip():
                out.append(Chunk(f"{doc.doc_id}@{i}", doc.doc_id, text[a:b], a))
            if end >= len(text):
                break
    return out


def allocate(docs: Sequence[Document], count: int, rng: random.Random) -> list[int]:
    """The document index of each of `count` passages, in the order they are handed out:
    one for each document first (in a seeded order), then each next passage to the
    document with the largest sqrt(length) / (given + 1) (ties in the same order)."""
    if not docs or count <= 0:
        return []
    weights = [math.sqrt(max(1, len(d.text))) for d in docs]
    tiebreak = list(range(len(docs)))
    rng.shuffle(tiebreak)
    rank = {d: i for i, d in enumerate(tiebreak)}
    given = [0] * len(docs)
    order = tiebreak[:count]  # one passage for every document first
    for d in order:
        given[d] += 1
    for _ in range(count - len(order)):
        best = max(range(len(docs)), key=lambda d: (weights[d] / (given[d] + 1), -rank[d]))
        given[best] += 1
        order.append(best)
    return order


def sample_passages(
    docs: Sequence[Document], count: int, *, seed: int = 0, passage_chars: int = 700
) -> list[Passage]:
    """`count` passages spread over the documents and over positions within each (see
    the module's docstring); deterministic for a seed."""
    order = allocate(docs, count, random.Random(seed))
    seen: dict[int, int] = {}
    out = []
    for d in order:
        j = seen.get(d, 0)
        seen[d] = j + 1
        room = max(1, len(docs[d].text) - passage_chars)
        out.append(passage_at(docs[d], int(spread_point(seed, d, j) * room), passage_chars))
    return out


def spread_point(seed: int, doc: int, j: int) -> float:
    """Where (0 <= x < 1) the j-th passage of document number `doc` starts: the j-th
    point of the base-2 van der Corput sequence (0, 1/2, 1/4, 3/4, 1/8, ...), moved by up
    to half the gap it halves (a seeded jitter), and turned by a seeded offset of the
    document, modulo 1. Depends only on (seed, doc, j), so asking for more passages never
    moves the earlier ones."""
    point, weight, rest = 0.0, 0.5, j
    while rest:
        point += weight * (rest & 1)
        rest >>= 1
        weight /= 2
    gap = 1.0 / (1 << j.bit_length())  # the gap the j-th point halves (the whole for j=0)
    jitter = (random.Random(f"{seed}:{doc}:{j}").random() - 0.5) * gap
    offset = random.Random(f"{seed}:{doc}").random()
    return (point + jitter + offset) % 1.0


def second_passage(
    docs: Sequence[Document], first: Passage, rng: random.Random, passage_chars: int
) -> Passage:
    """A second passage for a multi-passage question: from the same document, away from
    the first, when it is at least three passages long; else from another document (in
    a seeded choice), so the question needs two places of the corpus."""
    by_id = {d.doc_id: d for d in docs}
    doc = by_id[first.span.doc_id]
    if len(doc.text) >= 3 * passage_chars:
        mid = (first.span.start + len(doc.text) // 2) % len(doc.text)
        cand = passage_at(doc, mid, passage_chars)
        if cand.span.end <= first.span.start or cand.span.start >= first.span.end:
            return cand
    others = [d for d in docs if d.doc_id != doc.doc_id] or [doc]
    other = others[rng.randrange(len(others))]
    return passage_at(other, rng.randrange(max(1, len(other.text) - passage_chars)), passage_chars)
