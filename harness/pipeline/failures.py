"""Why a failed question failed: read its source span, or judge a wider pool than the
top k, and label it.

A question fails when no chunk of its top k is relevant and complete. `explain_failures`
judges, through the run's own judge and verdict cache, the dense top `pool_dense` and
BM25's top `pool_bm25` over the whole corpus (the top k left out: already judged), then:

- `missed`: a pool chunk is relevant and complete: the answer is in the corpus and the
  retriever ranked it below k (its dense rank is recorded, or None for BM25 only);
- `split`: chunks are relevant, none complete, and a relevant chunk joined with its
  neighbour in the same document (adjacent by start_char) is judged complete: the answer
  crosses a chunk boundary (raise the overlap or the size);
- `not-in-corpus`: nothing in the pool answers: a gap in the documents, not the retriever
  (its reason names the chunk the judge was likeliest to call relevant, to read by hand,
  when the verdicts have probabilities).

A question with one source span (`Question.source`: a generated question's passage, or a
hand-written set's answer span) that one chunk holds whole says where its answer is, so
its failure is read from the span and no pool is judged (`from_source`):

- `judge-missed`: a chunk of the top k holds the span and the judge did not call it
  complete: the answer was retrieved and the judge missed it (or the span does not
  answer the question);
- `missed`: a chunk outside the top k holds the span (its dense rank is recorded).

A question with several spans (multi-passage: its answer needs facts from several
passages) is read from them too, when each shares characters with some chunk:

- `multi-part`: the top k holds a chunk of every span: the retriever found each part,
  but no single chunk holds the whole answer, so no chunk can be judged complete;
- `missed`: a span no chunk of the top k touches (the best ranked chunk that does,
  with its dense rank).

A question with no span (unanswerable, or a set without spans), or with one span no
single chunk holds (where in it the answer lies is not known), or a span outside every
chunk, is explained from its pool as above; a not-in-corpus reason then adds that its
source lies in the corpus, when it has one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from harness.metrics.source import holds, overlaps
from harness.types import Chunk, Failure, QuestionResult, SourceSpan, Verdict

DENSE_RANK_DEPTH = 1000
"""How deep the chunk holding a failure's source span is looked for in dense retrieval
(`FailurePool.dense_order`); below it its rank is unknown (None)."""

GradePairs = Callable[[Sequence[tuple[str, str]]], list[Verdict]]
"""Verdicts for (question text, chunk text) pairs, in order (the run's judge and cache)."""


class FailurePool:
    """Where a failed question's answer may be: its dense and BM25 pools over the whole
    corpus, and each chunk's neighbours in its document. Built by `prepare`; the BM25
    index is built on first use, so a run without failures never pays for it."""

    def __init__(
        self,
        chunks: Mapping[str, Chunk],
        documents: Mapping[str, str],
        dense: Callable[[int, int], list[str]],
        bm25: Callable[[], Callable[[str], list[str]]],
        *,
        pool_dense: int,
        pool_bm25: int,
    ) -> None:
        """`dense(question index, depth)`: the chunk ids of the question's dense top
        `depth` over the whole corpus, best first."""
        self.chunks = chunks
        self.documents = documents
        self.pool_dense = pool_dense
        self.pool_bm25 = pool_bm25
        self._dense = dense
        self._bm25_factory = bm25
        self._bm25: Callable[[str], list[str]] | None = None
        by_doc: dict[str, list[Chunk]] = {}
        for c in chunks.values():
            by_doc.setdefault(c.doc_id, []).append(c)
        self._by_doc = by_doc
        """Each document's chunks, by start_char (sorted below)."""
        self._neighbours: dict[str, list[str]] = {}
        for doc_chunks in by_doc.values():
            doc_chunks.sort(key=lambda c: c.start_char)
            for i, c in enumerate(doc_chunks):
                self._neighbours[c.chunk_id] = [
                    doc_chunks[j].chunk_id for j in (i - 1, i + 1) if 0 <= j < len(doc_chunks)
                ]

    def candidates(self, question_index: int, question: str) -> tuple[list[str], list[str]]:
        """(dense top pool_dense, BM25 top pool_bm25) chunk ids of a question, best first."""
        if self._bm25 is None:
            self._bm25 = self._bm25_factory()
        return self._dense(question_index, self.pool_dense), self._bm25(question)

    def holders(self, span: SourceSpan) -> list[str]:
        """The chunks that hold the whole span (several where chunks overlap), by
        start_char."""
        return [c.chunk_id for c in self._by_doc.get(span.doc_id, []) if holds(c, span)]

    def overlapping(self, span: SourceSpan) -> list[str]:
        """The chunks that share a character with the span, by start_char."""
        return [c.chunk_id for c in self._by_doc.get(span.doc_id, []) if overlaps(c, span)]

    def dense_order(self, question_index: int) -> list[str]:
        """The question's dense top DENSE_RANK_DEPTH chunk ids, best first: where a chunk
        outside the pool ranks (`rank_in`)."""
        return self._dense(question_index, DENSE_RANK_DEPTH)

    def neighbours(self, chunk_id: str) -> list[str]:
        """The chunks just before and just after this one in its document (by start_char)."""
        return self._neighbours.get(chunk_id, [])

    def joined(self, a: str, b: str) -> str:
        """Two neighbouring chunks as one text: the document's span from the first's start
        to the second's end (an overlap is not repeated)."""
        first, second = sorted((self.chunks[a], self.chunks[b]), key=lambda c: c.start_char)
        doc = self.documents.get(first.doc_id)
        end = second.start_char + len(second.text)
        if doc is not None and doc[first.start_char : first.start_char + len(first.text)] == (
            first.text
        ):
            return doc[first.start_char : end]
        return first.text + "\n" + second.text  # offsets unknown: join the texts


@dataclass
class _Plan:
    qi: int
    result: QuestionResult
    dense: list[str]
    bm25: list[str]
    pool: list[str]
    """Pool chunks to judge: dense then BM25, deduplicated, the top k left out."""
    pool_verdicts: list[Verdict] | None = None
    joins: list[tuple[str, str]] | None = None
    """(relevant chunk, neighbour) pairs to judge joined."""


def _judged(plan: _Plan) -> list[tuple[str, Verdict]]:
    """(chunk id, verdict) of every chunk judged for the question: its top k, then its
    pool (once the pool is judged)."""
    assert plan.pool_verdicts is not None
    return [(jh.chunk.chunk_id, jh.verdict) for jh in plan.result.hits] + list(
        zip(plan.pool, plan.pool_verdicts, strict=True)
    )


def _pairs_for_joins(plan: _Plan, pool: FailurePool) -> list[tuple[str, str]]:
    """(relevant chunk, neighbour) for every relevant chunk of the top k and the pool."""
    relevant = [c for c, v in _judged(plan) if v.grade == 1]
    seen: set[frozenset[str]] = set()
    out = []
    for c in dict.fromkeys(relevant):
        for n in pool.neighbours(c):
            key = frozenset((c, n))
            if key not in seen:
                seen.add(key)
                out.append((c, n))
    return out


def rank_in(order: Sequence[str], chunk_id: str) -> int | None:
    """The chunk's 1-based rank in `order`, or None when it is not there."""
    return order.index(chunk_id) + 1 if chunk_id in order else None


def _dense_rank(plan: _Plan, chunk_id: str) -> int | None:
    return rank_in(plan.dense, chunk_id)


def _missed(plan: _Plan, k: int) -> Failure | None:
    assert plan.pool_verdicts is not None
    answering = [c for c, v in zip(plan.pool, plan.pool_verdicts, strict=True) if v.grade == 2]
    if not answering:
        return None
    inf = len(plan.dense) + len(plan.bm25) + 1

    def order(c: str) -> tuple[int, int]:
        d = _dense_rank(plan, c)
        return (d if d is not None else inf, plan.bm25.index(c) if c in plan.bm25 else inf)

    best = min(answering, key=order)
    rank = _dense_rank(plan, best)
    if rank is not None:
        reason = (
            f"{best} answers it; dense retrieval ranks it {rank}, outside the top {k}: "
            "the answer is in the corpus and the retriever missed it"
        )
    else:
        reason = (
            f"{best} answers it, found by BM25 only (rank {plan.bm25.index(best) + 1}): "
            "the answer is in the corpus; a bm25 or hybrid reranker may find it"
        )
    return Failure("missed", rank=rank, chunk_id=best, reason=reason)


def explain_failures(
    failed: Sequence[tuple[int, QuestionResult]],
    pool: FailurePool,
    k: int,
    grade: GradePairs,
    judge_text: Callable[[str], str] = lambda text: text,
    *,
    judge_pool: bool = True,
) -> list[Failure | None]:
    """A Failure for each (question index, result) of a question that failed at k.

    A question whose source spans say why is explained from them (`from_source`),
    judging nothing. For the others, judges with `grade` (the run's judge and cache,
    booked apart from the top k) each question's pool in one batch, then the joined
    neighbours of relevant chunks of the questions not yet explained in a second; without
    `judge_pool` they get None (not explained). `judge_text` is what the judge is shown
    of a chunk (injection masking). Failed pool verdicts count as not answering, and the
    reason says how many there were.
    """
    out: dict[int, Failure | None] = {}
    plans: dict[int, _Plan] = {}
    for i, (qi, result) in enumerate(failed):
        by_spans = from_source(qi, result, pool, k)
        if by_spans is not None or not judge_pool:
            out[i] = by_spans
            continue
        dense, bm25 = pool.candidates(qi, result.question.text)
        top = {jh.chunk.chunk_id for jh in result.hits}
        extra = [c for c in dict.fromkeys([*dense, *bm25]) if c not in top]
        plans[i] = _Plan(qi, result, dense, bm25, extra)
    pairs = [
        (p.result.question.text, judge_text(pool.chunks[c].text))
        for p in plans.values()
        for c in p.pool
    ]
    verdicts = grade(pairs) if pairs else []
    at = 0
    for p in plans.values():
        p.pool_verdicts = verdicts[at : at + len(p.pool)]
        at += len(p.pool)
    for i, p in plans.items():
        missed = _missed(p, k)
        if missed is not None:
            out[i] = missed
        else:
            p.joins = _pairs_for_joins(p, pool)
    pairs = [
        (p.result.question.text, judge_text(pool.joined(a, b)))
        for p in plans.values()
        if p.joins is not None
        for a, b in p.joins
    ]
    verdicts = grade(pairs) if pairs else []
    at = 0
    for i, p in plans.items():
        if p.joins is None:
            continue
        joined = verdicts[at : at + len(p.joins)]
        at += len(p.joins)
        hit = next((ab for ab, v in zip(p.joins, joined, strict=True) if v.grade == 2), None)
        failed_n = sum(1 for v in [*(p.pool_verdicts or []), *joined] if v.grade is None)
        note = f" ({failed_n} of these verdicts failed)" if failed_n else ""
        if hit is not None:
            c, n = hit
            out[i] = Failure(
                "split",
                rank=_dense_rank(p, c),
                chunk_id=c,
                reason=(
                    f"{c} is relevant and, joined with its neighbour {n}, complete: the "
                    "answer crosses a chunk boundary; raise chunking.chunk_overlap or "
                    f"chunk_size{note}"
                ),
            )
        else:
            out[i] = Failure(
                "not-in-corpus",
                reason=(
                    f"no chunk of the top {k} or of the pool (dense top {pool.pool_dense}, "
                    f"BM25 top {pool.pool_bm25}: {len(p.pool)} more chunks), alone or "
                    "joined with a neighbour, answers it: a gap in the documents, not the "
                    f"retriever{note}{_likeliest(p)}{_in_corpus_note(p, pool)}"
                ),
            )
    return [out[i] for i in range(len(failed))]


def from_source(qi: int, result: QuestionResult, pool: FailurePool, k: int) -> Failure | None:
    """Why a failed question failed, read from its source spans without judging.

    One span: `judge-missed` when a chunk of the top k holds the whole span (the judge
    did not call it complete), else `missed` when another chunk holds it (the best
    ranked, with its dense rank). Several (`_from_parts`): `multi-part` or `missed`.
    None, to be judged from the pool, for a question with no span, or one span no single
    chunk holds: a generated question's span is the whole passage it was written from,
    which often crosses a chunk boundary, and where in it the answer lies is not known.
    `by_source` makes that decision, and the dry run's bound reads it too.
    """
    spans = result.question.source
    if not by_source(spans, pool):
        return None
    if len(spans) > 1:
        return _from_parts(qi, result, pool, k)
    span, holders = spans[0], pool.holders(spans[0])
    where = f"its source ({_at(span)})"
    for jh in result.hits:
        if holds(jh.chunk, span):
            return Failure(
                "judge-missed",
                rank=jh.hit.rank,
                chunk_id=jh.chunk.chunk_id,
                reason=(
                    f"{jh.chunk.chunk_id} at rank {jh.hit.rank} holds {where}, and the judge "
                    f"{_how_judged(jh.verdict)}: the retriever found the answer and the judge "
                    "missed it, or the source does not answer the question (`harness "
                    "validate RUN --sources` checks the judge against the sources)"
                ),
            )
    holder, rank = _best_ranked(qi, holders, pool)
    return Failure(
        "missed",
        rank=rank,
        chunk_id=holder,
        reason=(
            f"{holder} holds {where}; dense retrieval ranks it {_ranked(rank)}, outside "
            f"the top {k}: the answer is in the corpus and the retriever missed it"
        ),
    )


def _from_parts(qi: int, result: QuestionResult, pool: FailurePool, k: int) -> Failure:
    """A question whose answer needs several source spans (multi-passage), each sharing
    characters with some chunk (`by_source`): `multi-part` when a chunk of the top k
    touches every span, since then the retriever found each part and no single chunk
    holds the whole answer, so none can be judged complete; else `missed` for the first
    span the top k does not touch (the best ranked chunk that does, with its dense
    rank)."""
    spans = result.question.source
    found = [next((jh for jh in result.hits if overlaps(jh.chunk, s)), None) for s in spans]
    n = len(spans)
    for i, (span, jh) in enumerate(zip(spans, found, strict=True), 1):
        if jh is None:
            chunk_id, rank = _best_ranked(qi, pool.overlapping(span), pool)
            return Failure(
                "missed",
                rank=rank,
                chunk_id=chunk_id,
                reason=(
                    f"its answer needs {n} passages; part {i} ({_at(span)}) is in "
                    f"{chunk_id}, which dense retrieval ranks {_ranked(rank)}, outside the "
                    f"top {k}: the retriever missed that part"
                ),
            )
    parts = "; ".join(
        f"{_at(s)} in {jh.chunk.chunk_id} at rank {jh.hit.rank}"
        for s, jh in zip(spans, found, strict=True)
        if jh is not None
    )
    return Failure(
        "multi-part",
        reason=(
            f"its answer needs {n} passages and the top {k} holds a chunk of each ({parts}): "
            "the retriever found every part, but no single chunk holds the whole answer, "
            "so none can be judged complete"
        ),
    )


def _at(span: SourceSpan) -> str:
    return f"{span.doc_id}, characters {span.start}-{span.end}"


def _ranked(rank: int | None) -> str:
    return "below the ranks searched" if rank is None else str(rank)


def _best_ranked(qi: int, chunk_ids: Sequence[str], pool: FailurePool) -> tuple[str, int | None]:
    """The best ranked of `chunk_ids` in the question's dense order, with its rank (None:
    below the ranks searched); overlapping chunks may hold the same span."""
    order = pool.dense_order(qi)
    ranks = {c: rank_in(order, c) for c in chunk_ids}
    best = min(ranks, key=lambda c: (ranks[c] is None, ranks[c] or 0))
    return best, ranks[best]


def by_source(spans: Sequence[SourceSpan], pool: FailurePool) -> bool:
    """Whether a failure of a question with these source spans is read from them
    (`from_source`), judging no pool: one span a chunk holds whole, or several that each
    share characters with a chunk."""
    if len(spans) > 1:
        return all(pool.overlapping(s) for s in spans)
    return len(spans) == 1 and bool(pool.holders(spans[0]))


def _in_corpus_note(plan: _Plan, pool: FailurePool) -> str:
    """For a not-in-corpus question that has source spans: that its source is in the
    corpus after all ("" without spans, or spans no chunk overlaps)."""
    found = [(s, pool.overlapping(s)) for s in plan.result.question.source]
    where = "; ".join(f"{_at(s)} ({', '.join(parts)})" for s, parts in found if parts)
    if not where:
        return ""
    return f"; yet its source lies in the corpus ({where}), so the judge more likely missed it"


def _likeliest(plan: _Plan) -> str:
    """For a question nothing answered: the chunk of its top k and pool the judge was
    likeliest to call relevant, to read by hand ("" when no verdict has a probability).
    A small judge misses answers: of the quick-start's 9 answerable questions it called
    not-in-corpus, 6 had the answer in the top-4 chunk it was likeliest to call relevant
    (P(relevant) 0.41-0.57)."""
    scored = [
        (v.relevant.p_yes, c)
        for c, v in _judged(plan)
        if v.relevant.p_yes is not None and v.relevant.error is None
    ]
    if not scored:
        return ""
    p_rel, chunk_id = max(scored)
    return (
        f", unless the judge missed it: the chunk it was likeliest to call relevant is "
        f"{chunk_id} (P(relevant) {p_rel:.2f})"
    )


def _how_judged(verdict: Verdict) -> str:
    """What the judge said of a chunk that holds the answer, with its probability."""
    rel, comp = verdict.relevant, verdict.complete
    if not verdict.judged:
        return "never judged it (lazy judging stopped before its rank)"
    if rel.value is False:
        said, p, name = "called it not relevant", rel.p_yes, "relevant"
    else:
        said, p, name = "did not call it complete", comp.p_yes, "complete"
    return said if p is None else f"{said} (P({name}) {p:.2f})"


def pool_pairs(
    questions: Sequence[str],
    hits: Sequence[Sequence[str]],
    pool: FailurePool,
    judge_text: Callable[[str], str] = lambda text: text,
    sources: Sequence[Sequence[SourceSpan]] | None = None,
) -> list[tuple[str, str]]:
    """Every pair explaining the failures could judge, every question assumed failed and
    every chunk relevant: each question's pool, and every chunk of its top k and pool
    joined with each neighbour. An upper bound for the dry run. `sources`: the questions'
    source spans; a question whose spans explain its failure judges nothing (`by_source`)."""
    out: list[tuple[str, str]] = []
    for qi, (question, top) in enumerate(zip(questions, hits, strict=True)):
        if sources is not None and by_source(sources[qi], pool):
            continue
        dense, bm25 = pool.candidates(qi, question)
        extra = [c for c in dict.fromkeys([*dense, *bm25]) if c not in set(top)]
        out += [(question, judge_text(pool.chunks[c].text)) for c in extra]
        seen: set[frozenset[str]] = set()
        for c in [*top, *extra]:
            for n in pool.neighbours(c):
                if frozenset((c, n)) not in seen:
                    seen.add(frozenset((c, n)))
                    out.append((question, judge_text(pool.joined(c, n))))
    return out
