"""Source labels: a label-like signal for generated questions, from their source spans.

A generated question knows the passage it was written from (`Question.source`: doc_id,
start, end characters). A retrieved chunk *hits* the source when it overlaps a source
span: same document, and the character ranges [chunk.start_char, chunk.start_char +
len(chunk.text)) and [start, end) share at least one character. That holds under any
chunk size and overlap, since spans are sampled independently of chunking.

These metrics need no judge: they are pure functions of the ranked chunks. They are
registered in `harness.metrics.ir.METRICS` (on="source") so runs average them, sweeps
may optimise them and every table shows them beside the judge's metrics; questions
without a source (unanswerable ones, hand-written sets) have no value and are left out
of the mean.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.types import Chunk, SourceSpan


def overlaps(chunk: Chunk, span: SourceSpan) -> bool:
    """True when `chunk` shares at least one character with `span` in the same document.

    Ranges are half-open: a chunk ending exactly where the span starts does not overlap.
    An empty chunk overlaps nothing."""
    end = chunk.start_char + len(chunk.text)
    return chunk.doc_id == span.doc_id and chunk.start_char < span.end and span.start < end


def holds(chunk: Chunk, span: SourceSpan) -> bool:
    """True when `chunk` holds the whole span: same document, and chunk.start_char <= start
    and end <= chunk.start_char + len(chunk.text) (ranges half-open). Edge case: an empty
    span (start = end) is held by any chunk of its document whose range includes that
    position, its end included."""
    return (
        chunk.doc_id == span.doc_id
        and chunk.start_char <= span.start
        and span.end <= chunk.start_char + len(chunk.text)
    )


def source_flags(chunks: Sequence[Chunk], spans: Sequence[SourceSpan]) -> list[bool]:
    """Per ranked chunk, whether it overlaps any of the question's source spans."""
    return [any(overlaps(c, s) for s in spans) for c in chunks]


def source_hit(flags: Sequence[bool], k: int) -> float:
    """source_hit@k = 1 if any of the top k chunks overlaps a source span, else 0.

    Edge cases: no chunks (or fewer than k) count only those there are; k < 1 raises
    ValueError."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return 1.0 if any(flags[:k]) else 0.0


def source_mrr(flags: Sequence[bool], k: int) -> float:
    """source_mrr@k = 1 / rank of the first chunk in the top k that overlaps a source span
    (ranks 1-based); 0 if none does. Edge case: k < 1 raises ValueError."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    for rank, hit in enumerate(flags[:k], 1):
        if hit:
            return 1.0 / rank
    return 0.0


def source_metrics(
    chunks: Sequence[Chunk], spans: Sequence[SourceSpan], ks: Sequence[int]
) -> dict[str, float]:
    """`source_hit@k` and `source_mrr@k` at every k for one question's ranked chunks;
    empty when the question has no source span (nothing to measure against)."""
    if not spans:
        return {}
    flags = source_flags(chunks, spans)
    out: dict[str, float] = {}
    for k in ks:
        out[f"source_hit@{k}"] = source_hit(flags, k)
        out[f"source_mrr@{k}"] = source_mrr(flags, k)
    return out
