"""Everything before judging: load, chunk, embed and index (cached), retrieve, rerank."""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from loguru import logger

from harness import corpus
from harness import judge as judge_stage
from harness.config import EmbedderConfig, ExperimentConfig
from harness.files import file_sha256
from harness.llm.endpoint import DEFAULT_BASE_URL, reranker_endpoint
from harness.pipeline.failures import FailurePool
from harness.retrieval import index as index_stage
from harness.retrieval import rerankers as rerank_stage
from harness.retrieval import retrieve as retrieve_stage
from harness.retrieval.embedders import (
    CachedEmbedder,
    embedder_languages,
    embedder_spec,
    make_embeddings,
)
from harness.stores import CacheStorage, EmbeddingCache, VerdictCache
from harness.stores.embeddings import FILE as EMBEDDINGS_FILE
from harness.types import (
    Chunk,
    ComponentSpec,
    Document,
    Hit,
    Question,
)


def default_cache_dir() -> Path:
    """$HARNESS_CACHE_DIR, else ~/.cache/harness: shared by every run and sweep of a user."""
    env = os.environ.get("HARNESS_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "harness"


@dataclass(frozen=True)
class Prepared:
    """Everything before judging: the questions, the indexed chunks by id, each
    question's top k hits, and the components, data and stats the run header logs."""

    questions: tuple[Question, ...]
    chunks: dict[str, Chunk]
    hits: tuple[tuple[Hit, ...], ...]
    components: dict[str, ComponentSpec]
    data: dict[str, Any]
    stats: dict[str, Any]
    pool: FailurePool | None = field(default=None, compare=False)
    """The wider pool a failed question's failure is explained from (failures.explain);
    None when failures are not explained."""


JudgeSource = Callable[[], judge_stage.Judge]
"""Gives the run's judge, starting it on first use (a local server takes seconds)."""


def _llm_grader(
    config: ExperimentConfig,
    judge: JudgeSource,
    cache: VerdictCache,
    stats: judge_stage.JudgeStats,
) -> rerank_stage.LLMGrader:
    """The llm reranker's grading: P(relevant) from the judge's endpoint and model (or
    the reranker's own, retrieval.llm_*), through the judge's code path and cache."""

    def grader() -> tuple[Callable[[str, str], tuple[float, bool]], ComponentSpec, bool]:
        endpoint = reranker_endpoint(config.retrieval)
        if endpoint is not None:
            ranker: judge_stage.Judge = judge_stage.ChatJudge(
                base_url=endpoint.base_url or DEFAULT_BASE_URL,
                model=endpoint.model,
                api_key=endpoint.api_key(),
                timeout_s=config.judge.timeout_s,
                max_retries=config.judge.max_retries,
                max_retry_after_s=config.judge.max_retry_after_s,
            )
        else:
            ranker = judge()
        same = ranker.identity() == judge().identity()
        if same:
            logger.warning(
                "the llm reranker uses the judge's own model: the judge will grade its own "
                "ranking, which flatters it"
            )

        def grade(question: str, text: str) -> tuple[float, bool]:
            v = judge_stage.grade_cached(
                ranker, cache, stats, question, text, "relevant", config.judge.criteria.relevant
            )
            if v.error:
                return 0.0, False
            p = v.p_yes if v.p_yes is not None else float(bool(v.value))
            return p, bool(v.value)

        return grade, ranker.spec, same

    return grader


def load_corpus(config: ExperimentConfig) -> list[Document]:
    """The experiment's documents, errors naming the experiment file. Its questions and
    labels files are no documents, should a corpus folder hold them."""
    named = {"questions.file": config.questions.file, "questions.qrels": config.questions.qrels}
    return corpus.load_documents(
        [config.resolve_path(s) for s in config.corpus.sources],
        html_classes=config.corpus.html_classes,
        where=config.path or "<experiment>",
        timeout_s=config.corpus.timeout_s,
        leave_out={config.resolve_path(f): field for field, f in named.items() if f},
    )


@dataclass(frozen=True)
class Inputs:
    """A run's documents, questions and chunks: loaded and checked (cheap) before a run
    folder is made, so bad input leaves nothing behind, and handed on to `prepare`."""

    docs: tuple[Document, ...]
    questions: tuple[Question, ...]
    """The questions the run uses (`questions.limit` applied)."""
    questions_path: str
    chunks: tuple[Chunk, ...]
    warnings: tuple[str, ...] = ()
    """What the run's header should say about its inputs (source spans not in the corpus,
    documents in a language the embedder was not trained on)."""


def load_inputs(config: ExperimentConfig) -> Inputs:
    """Load the corpus and the questions and chunk the corpus; raises ConfigError naming
    the file for anything wrong with them."""
    docs = load_corpus(config)
    questions_path = config.resolve_path(config.questions.file)
    questions, stray = corpus.fit_sources(
        config.questions.take(corpus.load_questions(questions_path)), docs, questions_path
    )
    chunks = corpus.chunk_documents(
        docs, chunk_size=config.chunking.chunk_size, chunk_overlap=config.chunking.chunk_overlap
    )
    warnings = tuple(w for w in (stray, language_warning(config.embedder, docs)) if w)
    for w in warnings:
        warn_once(w)
    return Inputs(tuple(docs), tuple(questions), questions_path, tuple(chunks), warnings)


_said: set[str] = set()
_said_lock = threading.Lock()


def warn_once(message: str) -> None:
    """Log `message` the first time this process meets it: a sweep loads its inputs for
    every trial (and its dry run for every setting), and each run's header keeps it."""
    with _said_lock:
        if message in _said:
            return
        _said.add(message)
    logger.warning(message)


def language_warning(embedder: EmbedderConfig, docs: Sequence[Document]) -> str | None:
    """What to say when most documents (of those long enough to tell) are in languages
    the embedder's model was not trained on (`embedder_languages`; the local default reads
    English only), or None; nothing is read for an embedder that reads any language.
    Measured with the local embedder: "What is the leave policy?" and "What are the
    password length requirements?" lie at cosine 0.15 in English, 0.38 in German and 0.98
    in Chinese (on a three-page Chinese handbook `harness generate` dropped the first as a
    near-duplicate of the second), and dense retrieval ranks by the same vectors."""
    languages = embedder_languages(embedder)
    if not languages:
        return None
    counts = corpus.language_counts([d.text for d in docs])
    foreign = {
        lang: n
        for lang, n in counts.items()
        if (lang if lang != corpus.ENGLISH else "English") not in languages
    }
    told = sum(counts.values())
    if not foreign or 2 * sum(foreign.values()) <= told:
        return None
    top = max(foreign, key=lambda lang: foreign[lang])
    named = "a language other than English" if top == corpus.OTHER else top
    read = " and ".join(languages)
    where = named if 2 * foreign[top] > told else f"languages other than {read} ({named} the most)"
    return (
        f"most documents are in {where}, and embedder {embedder.name!r} was trained on "
        f"{read} text only, so dense retrieval on these documents (and generate's "
        "near-duplicate check) is unreliable; set [embedder] to a multilingual model (name = "
        '"sentence-transformers" with a local model folder, or "openai")'
    )


def cap_k(config: ExperimentConfig, n_chunks: int) -> ExperimentConfig:
    """`config` with `retrieval.k` at most the number of chunks, with a warning: no
    question can get more, and a huge k would only cost time and memory."""
    k = config.retrieval.k
    if k <= n_chunks:
        return config
    capped = max(1, n_chunks)
    logger.warning(
        "retrieval.k = {} but the corpus has {} chunks: using k = {}", k, n_chunks, capped
    )
    return replace(config, retrieval=replace(config.retrieval, k=capped))


def count_questions(config: ExperimentConfig) -> int:
    """How many questions a run of `config` judges (the questions.limit rule applied)."""
    return len(
        config.questions.take(corpus.load_questions(config.resolve_path(config.questions.file)))
    )


@dataclass(frozen=True)
class _Indexed:
    """The corpus chunked, embedded and indexed (from the cache when it can be), and the
    questions embedded by the same embedder."""

    splitter: ComponentSpec
    embedder: CachedEmbedder
    corpus_sha: str
    key: str
    index: index_stage.Index
    index_s: float
    """Seconds spent loading or building the index."""
    qvecs: list[list[float]]
    """One query vector per question, in question order."""


@dataclass(frozen=True)
class _Retrieved:
    """Each question's top k (reranked) and how long retrieving it took."""

    hits: tuple[tuple[Hit, ...], ...]
    latencies_ms: tuple[float, ...]


def prepare(
    config: ExperimentConfig,
    *,
    cache_dir: Path,
    judge: JudgeSource | None = None,
    verdict_cache: VerdictCache | None = None,
    inputs: Inputs | None = None,
    storage: CacheStorage | None = None,
) -> Prepared:
    """Load, chunk, index (cached), retrieve and rerank for one configuration.

    `judge` and `verdict_cache` are needed only by the llm reranker; `inputs` are the
    documents and questions already loaded (by `load_inputs`), else they are loaded here;
    `storage` holds the embedding cache (default: embeddings.sqlite in `cache_dir`).
    A k above the number of chunks is lowered to it (`cap_k`).
    """
    t0 = time.perf_counter()
    if inputs is None:
        inputs = load_inputs(config)
    config = cap_k(config, len(inputs.chunks))
    indexed = _index(config, inputs, cache_dir, storage)
    rerank_stats = judge_stage.JudgeStats()
    llm_grader = (
        _llm_grader(config, judge, verdict_cache, rerank_stats)
        if judge is not None and verdict_cache is not None
        else None
    )
    # FAISS allocates depth slots per question: never more than there are chunks.
    depth = min(rerank_stage.first_stage_depth(config.retrieval), max(1, len(inputs.chunks)))
    reranker = _reranker(config, indexed, depth, llm_grader)
    retrieved = _retrieve(config, inputs.questions, indexed, reranker, depth)
    if indexed.embedder.cache is not None:
        indexed.embedder.cache.close()
    pool = _failure_pool(config, inputs, indexed) if config.failures.explain else None
    return Prepared(
        questions=tuple(inputs.questions),
        chunks=indexed.index.chunks,
        hits=retrieved.hits,
        components={
            "splitter": indexed.splitter,
            "embedder": indexed.embedder.spec,
            "reranker": reranker.spec,
        },
        data=_data(config, inputs, indexed),
        stats=_stats(indexed, retrieved, rerank_stats, t0),
        pool=pool,
    )


def _index(
    config: ExperimentConfig, inputs: Inputs, cache_dir: Path, storage: CacheStorage | None
) -> _Indexed:
    """Embed and index the chunks (or load their index from the cache) and embed the
    questions; the embedder caches its vectors in `storage` (else in `cache_dir`)."""
    splitter = corpus.splitter_spec(config.chunking.chunk_size, config.chunking.chunk_overlap)
    emb_spec = embedder_spec(config.embedder)
    embedder = CachedEmbedder(
        lambda: make_embeddings(config.embedder),
        emb_spec,
        storage.embedding_cache() if storage else EmbeddingCache(cache_dir / EMBEDDINGS_FILE),
    )
    corpus_sha = corpus.corpus_hash(inputs.docs)
    key = index_stage.index_key(corpus_sha, splitter, emb_spec)
    t_index = time.perf_counter()
    index = index_stage.load_or_build_index(
        list(inputs.chunks), embedder, key=key, cache_dir=cache_dir
    )
    index_s = time.perf_counter() - t_index
    qvecs = embedder.embed_queries([q.text for q in inputs.questions])
    return _Indexed(splitter, embedder, corpus_sha, key, index, index_s, qvecs)


def _reranker(
    config: ExperimentConfig,
    indexed: _Indexed,
    depth: int,
    llm_grader: rerank_stage.LLMGrader | None,
) -> rerank_stage.Reranker:
    """The configured reranker, over the index's `depth` dense candidates."""

    def query_vector(question: str) -> np.ndarray:
        return np.asarray(indexed.embedder.embed_query(question), dtype=np.float32)

    return rerank_stage.build_reranker(
        rerank_stage.RerankContext(
            config=config.retrieval,
            depth=depth,
            chunks=list(indexed.index.chunks.values()),
            store=indexed.index.store,
            vectors=indexed.index.vectors,
            query_vector=query_vector,
            llm_grader=llm_grader,
        )
    )


def _retrieve(
    config: ExperimentConfig,
    questions: Sequence[Question],
    indexed: _Indexed,
    reranker: rerank_stage.Reranker,
    depth: int,
) -> _Retrieved:
    """Each question's `depth` dense candidates, reranked to its top k, timed."""
    index = indexed.index
    hits: list[tuple[Hit, ...]] = []
    latencies_ms: list[float] = []
    for q, vec in zip(questions, indexed.qvecs, strict=True):
        t_q = time.perf_counter()
        dense = retrieve_stage.retrieve(index.store, [vec], depth)[0]
        candidates = [
            rerank_stage.Candidate(h.chunk_id, index.chunks[h.chunk_id].text, h.score)
            for h in dense
        ]
        hits.append(
            tuple(rerank_stage.rerank_hits(reranker, q.text, candidates, config.retrieval.k))
        )
        latencies_ms.append((time.perf_counter() - t_q) * 1000)
    return _Retrieved(tuple(hits), tuple(latencies_ms))


def _failure_pool(config: ExperimentConfig, inputs: Inputs, indexed: _Indexed) -> FailurePool:
    """Where a failed question's answer may be (failures.explain): its dense pool over
    the whole index, the BM25 pool and each chunk's neighbours in its document."""
    index, qvecs = indexed.index, indexed.qvecs

    def dense(qi: int, depth: int) -> list[str]:
        depth = min(depth, len(index.chunks))
        if depth < 1:
            return []
        hits = retrieve_stage.retrieve(index.store, [qvecs[qi]], depth)[0]
        return [h.chunk_id for h in hits]

    return FailurePool(
        index.chunks,
        {d.doc_id: d.text for d in inputs.docs},
        dense,
        lambda: retrieve_stage.bm25_search(list(index.chunks.values()), config.failures.pool_bm25),
        pool_dense=config.failures.pool_dense,
        pool_bm25=config.failures.pool_bm25,
    )


def _data(config: ExperimentConfig, inputs: Inputs, indexed: _Indexed) -> dict[str, Any]:
    """The run header's `data`: what the run read (files and hashes) and how much."""
    return {
        "corpus_sha256": indexed.corpus_sha,
        "questions_sha256": file_sha256(inputs.questions_path),
        "questions_file": inputs.questions_path,
        "qrels_file": config.resolve_path(config.questions.qrels)
        if config.questions.qrels
        else None,
        "n_documents": len(inputs.docs),
        "n_chunks": len(indexed.index.chunks),
        "n_questions": len(inputs.questions),
        "index_key": indexed.key,
    }


def _stats(
    indexed: _Indexed, retrieved: _Retrieved, rerank_stats: judge_stage.JudgeStats, t0: float
) -> dict[str, Any]:
    """The run header's preparation stats: index cache and time, texts embedded,
    retrieval latency, the llm reranker's calls, and the seconds since `t0`."""
    r_stats = rerank_stats.to_dict()
    return {
        "index_cache_hit": indexed.index.from_cache,
        "index_s": round(indexed.index_s, 3),
        "embedded_texts": indexed.embedder.embedded_texts,
        "retrieve_ms_median": round(statistics.median(retrieved.latencies_ms), 3)
        if retrieved.latencies_ms
        else None,
        "rerank_llm_calls": r_stats["judge_calls"],
        "rerank_llm_cache_hits": r_stats["judge_cache_hits"],
        "prepare_s": round(time.perf_counter() - t0, 3),
    }
