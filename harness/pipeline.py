"""One configuration end to end: load, chunk, embed, index, retrieve, judge, metrics, log.

This is one of the two places that sequence the stages (the other is the sweep). It
writes the result log as work finishes: a question's line is appended the moment its last
verdict is in, and the header is rewritten at the start and at the end, so a crash or
Ctrl-C keeps every finished question, and the verdict cache keeps every paid verdict.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from loguru import logger

from harness import chunk as chunk_stage
from harness import embed as embed_stage
from harness import index as index_stage
from harness import judge as judge_stage
from harness import load as load_stage
from harness import metrics as metrics_stage
from harness import rerank as rerank_stage
from harness import retrieve as retrieve_stage
from harness.config import ExperimentConfig, JudgeConfig
from harness.errors import ConfigError, HarnessError
from harness.llama_server import LlamaServer, file_sha256, resolve_model
from harness.log import (
    STATUS_DONE,
    STATUS_FAILED,
    STATUS_INTERRUPTED,
    STATUS_PRUNED,
    STATUS_RUNNING,
    RunHeader,
    RunLog,
    RunWriter,
    new_run_id,
    now_iso,
    read_run,
)
from harness.types import (
    Chunk,
    ComponentSpec,
    Hit,
    JudgedHit,
    Question,
    QuestionResult,
    Verdict,
)


def default_cache_dir() -> Path:
    """$HARNESS_CACHE_DIR, else ~/.cache/harness: shared by every run and sweep of a user."""
    env = os.environ.get("HARNESS_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "harness"


def _judge_settings(config: JudgeConfig, cache_dir: Path) -> tuple[dict[str, Any], Path | None]:
    """OpenAIJudge keyword arguments for the configured judge, and the local model file
    when no endpoint is configured (then `base_url` is None until a server is started).

    An endpoint is used when `base_url` or `model` is set in the experiment or in
    HARNESS_JUDGE_BASE_URL / HARNESS_JUDGE_MODEL.
    """
    base_url = config.base_url or os.environ.get("HARNESS_JUDGE_BASE_URL", "")
    model = config.model or os.environ.get("HARNESS_JUDGE_MODEL", "")
    common: dict[str, Any] = dict(
        reasons=config.reasons,
        temperature=config.temperature,
        mode=config.mode,
        timeout_s=config.timeout_s,
        max_retries=config.max_retries,
    )
    if base_url or model:
        if not model:
            raise ConfigError(
                "", "judge.model", "a judge endpoint needs a model name (or HARNESS_JUDGE_MODEL)"
            )
        endpoint = {
            "base_url": base_url or "https://api.openai.com/v1",
            "model": model,
            "api_key": os.environ.get(config.api_key_env, ""),
        }
        return {**common, **endpoint}, None
    path, sha = resolve_model(config.local_model, cache_dir)
    local = {
        "base_url": None,
        "model": config.local_model if not config.local_model.endswith(".gguf") else path.stem,
        "api_key": "",
        "grammar": True,
        "spec_extra": {
            "engine": "llama-server",
            "local_model": config.local_model,
            "model_sha256": sha,
        },
    }
    return {**common, **local}, path


@contextlib.contextmanager
def open_judge(
    config: JudgeConfig, *, cache_dir: Path, log_dir: Path | None = None
) -> Iterator[judge_stage.OpenAIJudge]:
    """The judge a config asks for, ready to grade: an endpoint, or the packaged local
    model served by llama.cpp on 127.0.0.1 (stopped on exit)."""
    settings, local_model = _judge_settings(config, cache_dir)
    limiter = (
        judge_stage.RateLimiter(config.requests_per_minute, config.tokens_per_minute)
        if config.requests_per_minute or config.tokens_per_minute
        else None
    )
    if local_model is None:
        yield judge_stage.OpenAIJudge(**settings, limiter=limiter)
        return
    server = LlamaServer(
        local_model,
        alias=settings["model"],
        parallel=config.concurrency,
        log_path=(log_dir / "llama-server.log") if log_dir else None,
    )
    with server:
        yield judge_stage.OpenAIJudge(**{**settings, "base_url": server.base_url}, limiter=limiter)


@dataclass(frozen=True)
class Prepared:
    """Everything before judging: documents, chunks, index and hits per question."""

    questions: tuple[Question, ...]
    chunks: dict[str, Chunk]
    hits: tuple[tuple[Hit, ...], ...]
    components: dict[str, ComponentSpec]
    data: dict[str, Any]
    stats: dict[str, Any]


JudgeSource = Callable[[], judge_stage.Judge]
"""Gives the run's judge, starting it on first use (a local server takes seconds)."""


def _make_reranker(
    config: ExperimentConfig,
    index: index_stage.Index,
    embedder: embed_stage.CachedEmbedder,
    judge: JudgeSource,
    cache: judge_stage.VerdictCache,
    rerank_stats: judge_stage.JudgeStats,
) -> rerank_stage.Reranker:
    r = config.retrieval
    depth = rerank_stage.first_stage_depth(r)

    def query_vector(question: str) -> np.ndarray:
        return np.asarray(embedder.embed_query(question), dtype=np.float32)

    if r.reranker == "none":
        return rerank_stage.NoReranker()
    if r.reranker == "bm25":
        return rerank_stage.BM25Reranker(depth)
    if r.reranker == "mmr":
        return rerank_stage.MMRReranker(depth, r.mmr_lambda, index.vectors, query_vector)
    if r.reranker == "hybrid":
        return rerank_stage.HybridReranker(
            depth,
            (r.hybrid_weights[0], r.hybrid_weights[1]),
            list(index.chunks.values()),
            index.store.as_retriever(search_kwargs={"k": depth}),
            lambda q, ids: [float(v) for v in index.vectors(ids) @ query_vector(q)],
        )
    if r.reranker == "cross-encoder":
        return rerank_stage.CrossEncoderReranker(depth, r.cross_encoder)
    # llm: the judge's endpoint and model unless the experiment names another one
    if r.llm_model or r.llm_base_url:
        ranker: judge_stage.Judge = judge_stage.OpenAIJudge(
            base_url=r.llm_base_url or "https://api.openai.com/v1",
            model=r.llm_model,
            api_key=os.environ.get(r.llm_api_key_env, ""),
            timeout_s=config.judge.timeout_s,
            max_retries=config.judge.max_retries,
        )
    else:
        ranker = judge()
    same = ranker.identity() == judge().identity()
    if same:
        logger.warning(
            "the llm reranker uses the judge's own model: the judge will grade its own ranking, "
            "which flatters it"
        )

    def grade(question: str, text: str) -> tuple[float, bool]:
        v = judge_stage.grade_cached(
            ranker, cache, rerank_stats, question, text, "relevant", config.judge.criteria.relevant
        )
        if v.error:
            return 0.0, False
        p = v.p_yes if v.p_yes is not None else float(bool(v.value))
        return p, bool(v.value)

    return rerank_stage.LLMReranker(depth, grade, ranker.spec, same)


def prepare(
    config: ExperimentConfig,
    *,
    cache_dir: Path,
    judge: JudgeSource | None = None,
    verdict_cache: judge_stage.VerdictCache | None = None,
) -> Prepared:
    """Load, chunk, index (cached), retrieve and rerank for one configuration.

    `judge` and `verdict_cache` are needed only by the llm reranker.
    """
    where = config.path or "<experiment>"
    t0 = time.perf_counter()
    docs = load_stage.load_documents(
        [config.resolve_path(s) for s in config.corpus.sources],
        html_classes=config.corpus.html_classes,
        where=where,
    )
    questions_path = config.resolve_path(config.questions.file)
    questions = load_stage.load_questions(questions_path)
    if config.questions.limit:
        questions = questions[: config.questions.limit]
    chunks = chunk_stage.chunk_documents(
        docs, chunk_size=config.chunking.chunk_size, chunk_overlap=config.chunking.chunk_overlap
    )
    splitter = chunk_stage.splitter_spec(config.chunking.chunk_size, config.chunking.chunk_overlap)
    emb_spec = embed_stage.embedder_spec(config.embedder)
    embedder = embed_stage.CachedEmbedder(
        lambda: embed_stage.make_embeddings(config.embedder),
        emb_spec,
        embed_stage.EmbeddingCache(cache_dir / "embeddings.sqlite"),
    )
    corpus_sha = load_stage.corpus_hash(docs)
    key = index_stage.index_key(corpus_sha, splitter, emb_spec)
    t_index = time.perf_counter()
    index = index_stage.load_or_build_index(chunks, embedder, key=key, cache_dir=cache_dir)
    index_s = time.perf_counter() - t_index
    qvecs = embedder.embed_queries([q.text for q in questions])
    rerank_stats = judge_stage.JudgeStats()

    def no_judge() -> judge_stage.Judge:
        raise HarnessError("the llm reranker needs a judge")

    reranker = _make_reranker(
        config,
        index,
        embedder,
        judge or no_judge,
        verdict_cache,
        rerank_stats,  # type: ignore[arg-type]
    )
    depth = rerank_stage.first_stage_depth(config.retrieval)
    hits: list[tuple[Hit, ...]] = []
    latencies_ms: list[float] = []
    for q, vec in zip(questions, qvecs, strict=True):
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
    embedder.cache.close()  # type: ignore[union-attr]
    r_stats = rerank_stats.to_dict()
    return Prepared(
        questions=tuple(questions),
        chunks=index.chunks,
        hits=tuple(hits),
        components={"splitter": splitter, "embedder": emb_spec, "reranker": reranker.spec},
        data={
            "corpus_sha256": corpus_sha,
            "questions_sha256": file_sha256(questions_path),
            "questions_file": questions_path,
            "qrels_file": config.resolve_path(config.questions.qrels)
            if config.questions.qrels
            else None,
            "n_documents": len(docs),
            "n_chunks": len(index.chunks),
            "n_questions": len(questions),
            "index_key": key,
        },
        stats={
            "index_cache_hit": index.from_cache,
            "index_s": round(index_s, 3),
            "embedded_texts": embedder.embedded_texts,
            "retrieve_ms_median": round(statistics.median(latencies_ms), 3)
            if latencies_ms
            else None,
            "rerank_llm_calls": r_stats["judge_calls"],
            "rerank_llm_cache_hits": r_stats["judge_cache_hits"],
            "prepare_s": round(time.perf_counter() - t0, 3),
        },
    )


class _Progress:
    """Logs progress at most every `every_s` seconds, and at the end."""

    def __init__(self, total: int, what: str, every_s: float = 5.0) -> None:
        self.total, self.what, self.every_s = total, what, every_s
        self.done = 0
        self._last = time.monotonic()
        self._start = self._last

    def step(self, extra: str = "") -> None:
        self.done += 1
        now = time.monotonic()
        if self.done == self.total or now - self._last >= self.every_s:
            self._last = now
            rate = self.done / max(now - self._start, 1e-9)
            eta = (self.total - self.done) / rate if rate > 0 else 0
            logger.info("{} {}/{} ({:.0f} s left) {}", self.what, self.done, self.total, eta, extra)


def run_experiment(
    config: ExperimentConfig,
    *,
    results_dir: str | os.PathLike[str] = "results",
    cache_dir: str | os.PathLike[str] | None = None,
    judge: judge_stage.Judge | None = None,
    run_dir: str | os.PathLike[str] | None = None,
    batches: Sequence[int] = (),
    after_batch: AfterBatch | None = None,
) -> RunLog:
    """Run one configuration and return its result log, read back from disk.

    `judge` replaces the configured judge (a sweep shares one; tests pass a scripted one).
    The verdict cache lives in `cache_dir` (default: `default_cache_dir()`), so a rerun
    after a crash pays only for what was never judged. With `batches` (cumulative question
    counts) and `after_batch`, questions are judged batch by batch and the callback may
    stop the run after any batch: its status is then "pruned", with the questions it did
    finish in the log and metrics over those.
    """
    t_start = time.perf_counter()
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    run_id = new_run_id(config.name)
    folder = Path(run_dir) if run_dir else Path(results_dir) / run_id
    run_id = folder.name
    writer = RunWriter(folder)
    ks = tuple(range(1, config.retrieval.k + 1))
    header = RunHeader(
        run_id=run_id,
        name=config.name,
        status=STATUS_RUNNING,
        started_at=now_iso(),
        config=config.to_dict(),
        components={},
        data={},
        ks=ks,
    )
    writer.write_header(header)
    stats = judge_stage.JudgeStats()
    run_stats: dict[str, Any] = {}
    try:
        with contextlib.ExitStack() as stack:
            verdict_cache = judge_stage.VerdictCache(cache / "verdicts.sqlite")
            stack.callback(verdict_cache.close)
            active: list[judge_stage.Judge] = [judge] if judge is not None else []

            def get_judge() -> judge_stage.Judge:
                if not active:
                    active.append(
                        stack.enter_context(
                            open_judge(config.judge, cache_dir=cache, log_dir=folder)
                        )
                    )
                return active[0]

            prepared = prepare(
                config, cache_dir=cache, judge=get_judge, verdict_cache=verdict_cache
            )
            run_stats.update(prepared.stats)
            header = replace(header, components=dict(prepared.components), data=prepared.data)
            writer.write_header(header)
            t_judge = time.perf_counter()
            the_judge = get_judge()
            header = replace(header, components={**header.components, "judge": the_judge.spec})
            writer.write_header(header)
            per_question, stopped = _judge_all(
                config, prepared, the_judge, verdict_cache, stats, writer, batches, after_batch
            )
        run_stats["judge_s"] = round(time.perf_counter() - t_judge, 3)
        header = replace(
            header,
            status=STATUS_PRUNED if stopped else STATUS_DONE,
            finished_at=now_iso(),
            metrics=metrics_stage.aggregate(per_question, ks),
            metrics_ci=metrics_stage.aggregate_ci(per_question, ks),
            stats=_stats(run_stats, stats, t_start, config.judge),
        )
        writer.write_header(header)
    except KeyboardInterrupt:
        writer.write_header(
            replace(
                header,
                status=STATUS_INTERRUPTED,
                finished_at=now_iso(),
                stats=_stats(run_stats, stats, t_start, config.judge),
                error="interrupted",
            )
        )
        raise
    except Exception as exc:
        message = str(exc) if isinstance(exc, HarnessError) else f"{type(exc).__name__}: {exc}"
        writer.write_header(
            replace(
                header,
                status=STATUS_FAILED,
                finished_at=now_iso(),
                stats=_stats(run_stats, stats, t_start, config.judge),
                error=message,
            )
        )
        raise
    finally:
        writer.close()
    return read_run(folder)


def _stats(
    run_stats: dict[str, Any],
    judge_stats: judge_stage.JudgeStats,
    t_start: float,
    config: JudgeConfig,
) -> dict[str, Any]:
    out = {
        **run_stats,
        **judge_stats.to_dict(),
        "total_s": round(time.perf_counter() - t_start, 3),
    }
    cost = token_cost(config, judge_stats.prompt_tokens, judge_stats.completion_tokens)
    if cost is not None:
        out["cost_usd"] = cost
    return out


AfterBatch = Callable[[int, list[dict[str, float]]], bool]
"""Called after each batch with (questions done, their metrics); True stops the run."""


def _judge_all(
    config: ExperimentConfig,
    prepared: Prepared,
    judge: judge_stage.Judge,
    cache: judge_stage.VerdictCache,
    stats: judge_stage.JudgeStats,
    writer: RunWriter,
    batches: Sequence[int] = (),
    after_batch: AfterBatch | None = None,
) -> tuple[list[dict[str, float]], bool]:
    """Judge every (question, hit) pair, batch after batch of questions; write each
    question's line as soon as it is done. Returns (per-question metrics, stopped early).

    `batches` are cumulative question counts (e.g. 10, 20, 40); the last batch always
    ends with the last question.
    """
    n_q = len(prepared.questions)
    ends = sorted({min(max(int(b), 1), n_q) for b in batches} | {n_q}) if n_q else []
    per_question: list[dict[str, float] | None] = [None] * n_q
    progress = _Progress(n_q, "judged questions")
    ks = range(1, config.retrieval.k + 1)

    def finish(qi: int, verdicts: Sequence[Verdict]) -> None:
        judged = tuple(
            JudgedHit(hit=h, chunk=prepared.chunks[h.chunk_id], verdict=v)
            for h, v in zip(prepared.hits[qi], verdicts, strict=True)
        )
        grades = [j.verdict.grade for j in judged]
        lengths = [len(j.chunk.text) for j in judged]
        m = metrics_stage.question_metrics(grades, lengths, ks)
        errors = [f"rank {j.hit.rank}: {j.verdict.error}" for j in judged if j.verdict.error]
        writer.append(
            QuestionResult(
                question=prepared.questions[qi],
                hits=judged,
                metrics=m,
                error="; ".join(errors) if errors else None,
            )
        )
        per_question[qi] = m
        progress.step(f"(paid calls {stats.calls}, cache hits {stats.cache_hits})")

    owner: list[int] = []  # question index of each pair of the current batch
    got: dict[int, dict[int, Verdict]] = {}  # question index -> pair index -> verdict

    def on_done(i: int, verdict: Verdict) -> None:
        qi = owner[i]
        got[qi][i] = verdict
        if len(got[qi]) == len(prepared.hits[qi]):
            finish(qi, [got[qi][j] for j in sorted(got[qi])])

    start = 0
    for end in ends:
        pairs: list[tuple[str, str]] = []
        owner.clear()
        got.clear()
        for qi in range(start, end):
            got[qi] = {}
            for hit in prepared.hits[qi]:
                pairs.append((prepared.questions[qi].text, prepared.chunks[hit.chunk_id].text))
                owner.append(qi)
            if not prepared.hits[qi]:
                finish(qi, [])
        logger.info("judging {} chunks for questions {}-{} of {}", len(pairs), start + 1, end, n_q)
        judge_stage.judge_pairs(
            pairs,
            judge,
            criteria=config.judge.criteria,
            cache=cache,
            stats=stats,
            concurrency=config.judge.concurrency,
            on_done=on_done,
        )
        start = end
        done = [m for m in per_question if m is not None]
        if after_batch is not None and end < n_q and after_batch(end, done):
            return done, True
    return [m for m in per_question if m is not None], False


def judged_pairs(
    config: ExperimentConfig, cache_dir: Path
) -> tuple[list[tuple[str, str]], int, bool]:
    """The (question, chunk text) pairs a run of `config` would judge, the number of
    questions, and whether the pairs are the real ones.

    Retrieval runs when it costs nothing (the local embedder, or an index already
    cached). With a paid embedder and no cached index nothing is embedded: each question
    gets k stand-in chunks of the corpus's average chunk length (an upper bound).
    """
    r = config.retrieval
    if r.reranker == "llm":
        raise HarnessError("--dry-run does not estimate the llm reranker's own calls yet")

    def retrieved() -> tuple[list[tuple[str, str]], int, bool]:
        prepared = prepare(config, cache_dir=cache_dir)
        pairs = [
            (q.text, prepared.chunks[h.chunk_id].text)
            for q, hits in zip(prepared.questions, prepared.hits, strict=True)
            for h in hits
        ]
        return pairs, len(prepared.questions), True

    if config.embedder.name != "openai":
        return retrieved()
    docs = load_stage.load_documents(
        [config.resolve_path(s) for s in config.corpus.sources],
        html_classes=config.corpus.html_classes,
        where=config.path,
    )
    key = index_stage.index_key(
        load_stage.corpus_hash(docs),
        chunk_stage.splitter_spec(config.chunking.chunk_size, config.chunking.chunk_overlap),
        embed_stage.embedder_spec(config.embedder),
    )
    if (cache_dir / "index" / key / "meta.json").is_file():
        return retrieved()
    questions = load_stage.load_questions(config.resolve_path(config.questions.file))
    if config.questions.limit:
        questions = questions[: config.questions.limit]
    chunks = chunk_stage.chunk_documents(
        docs, chunk_size=config.chunking.chunk_size, chunk_overlap=config.chunking.chunk_overlap
    )
    avg = sum(len(c.text) for c in chunks) // max(1, len(chunks))
    stand_ins = [f"(stand-in {i}) " + "x" * avg for i in range(r.k)]  # distinct: none dedupes
    return [(q.text, c) for q in questions for c in stand_ins], len(questions), False


@contextlib.contextmanager
def judge_estimator(
    config: JudgeConfig, cache_dir: Path
) -> Iterator[Callable[[Sequence[tuple[str, str]], bool], judge_stage.CallEstimate]]:
    """A function (pairs, consult the cache?) -> CallEstimate for the configured judge,
    with the verdict cache open for as long as the context lasts. Nothing is called."""
    settings, _ = _judge_settings(config, cache_dir)
    identity = judge_stage.OpenAIJudge(
        **{**settings, "base_url": settings["base_url"] or "http://unused", "api_key": ""}
    ).identity()
    vc = judge_stage.VerdictCache(cache_dir / "verdicts.sqlite")
    try:
        yield lambda pairs, use_cache: judge_stage.estimate_calls(
            pairs,
            identity=identity,
            criteria=config.criteria,
            mode=config.mode,
            reasons=config.reasons,
            cache=vc if use_cache else None,
        )
    finally:
        vc.close()


def token_cost(config: JudgeConfig, prompt_tokens: int, completion_tokens: int) -> float | None:
    """Dollars for these tokens at the configured prices: prompt_tokens * prompt price /
    1e6 + completion_tokens * completion price / 1e6, rounded to 6 places; None when no
    price is set. What a run paid and what a dry run estimates."""
    if not (config.price_prompt_per_mtok or config.price_completion_per_mtok):
        return None
    return round(
        (
            prompt_tokens * config.price_prompt_per_mtok
            + completion_tokens * config.price_completion_per_mtok
        )
        / 1e6,
        6,
    )


def estimate_run(
    config: ExperimentConfig, *, cache_dir: str | os.PathLike[str] | None = None
) -> dict[str, Any]:
    """What a run would cost the judge, before anything is paid.

    The pairs are the real ones when retrieval is free (see `judged_pairs`), and then the
    verdict cache is consulted: `judge_calls_min` is exact (in pointwise mode "complete"
    is asked only of chunks judged relevant, so the calls lie between min and max).
    Tokens are estimated at 4 characters a token from the real prompts.
    """
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    pairs, n_questions, exact = judged_pairs(config, cache)
    with judge_estimator(config.judge, cache) as estimate:
        e = estimate(pairs, exact)
    est: dict[str, Any] = {
        "exact_pairs": exact,
        "questions": n_questions,
        "pairs": len(pairs),
        "mode": config.judge.mode,
        "open_pairs": e.open_pairs,
        "judge_calls_min": e.calls_min,
        "judge_calls_max": e.calls_max,
        "prompt_tokens_min": e.prompt_tokens_min,
        "prompt_tokens_max": e.prompt_tokens_max,
        "completion_tokens_max": e.completion_tokens_max,
    }
    cost = token_cost(config.judge, e.prompt_tokens_max, e.completion_tokens_max)
    if cost is not None:
        est["cost_usd_max"] = cost
    return est
