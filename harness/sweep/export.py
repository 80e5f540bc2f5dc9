"""A sweep's chosen trial as something to use: a runnable experiment file and the
matching LangChain code.

`export_config` writes the experiment the sweep recorded, with the trial's settings in
place (`SearchSpace.trial_config`), without its `[sweep]` table and with every path
absolute, so the file runs from anywhere. A results folder never chooses where a
credential goes, so the endpoints and key variables (`ENDPOINT_FIELDS`) are not copied:
the file says, in a comment, to set them. `langchain_code` is the same retrieval as a
function a user pastes into their RAG system.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config import (
    ENDPOINT_FIELDS,
    ExperimentConfig,
    experiment_from_dict,
    parse_experiment,
)
from harness.errors import HarnessError
from harness.log import SWEEP_FILE, Recommendation, SweepLog, TrialRecord
from harness.sweep.book import SweepBook
from harness.sweep.space import SearchSpace

_EXPORTABLE = ("complete", "pruned")
"""Trial states whose settings ran (a pruned trial's ran on part of the questions)."""


@dataclass(frozen=True)
class ExportedConfig:
    """What `export_config` wrote and printed."""

    out: str
    """The experiment file written."""
    trial: int
    """The trial exported."""
    params: dict[str, Any]
    """Its settings."""
    why: str
    """Why this trial: the recommendation's reason, or that it was asked for."""
    langchain: str
    """The matching LangChain code (`langchain_code`)."""


def choose_trial(log: SweepLog, trial: int | None) -> tuple[TrialRecord, str]:
    """The trial to export and why: `trial` when given (complete or pruned), else the
    recommended one. Raises HarnessError naming what to do when there is none."""
    where = log.sweep_dir / SWEEP_FILE
    records = {t.number: t for t in log.trials}
    if trial is not None:
        rec = records.get(trial)
        if rec is None or rec.state not in _EXPORTABLE or not rec.params:
            ran = ", ".join(str(n) for n, t in sorted(records.items()) if t.state in _EXPORTABLE)
            state = "no such trial" if rec is None else f"trial {trial} is {rec.state}"
            raise HarnessError(
                f"{where}: --trial {trial}: {state}; expected a complete or pruned trial "
                f"({ran or 'none yet'})"
            )
        return rec, f"trial {trial}, as asked"
    s = log.summary
    if len(s.objective) != 1:
        front = ", ".join(str(b.number) for b in s.best) or "none yet"
        raise HarnessError(
            f"{where}: a Pareto front ({' & '.join(s.objective)}) has no single recommended "
            f"trial; give --trial N (the front: trials {front})"
        )
    recommendation = s.recommendation or _recommend_from_disk(log)
    if recommendation is None or recommendation.trial not in records:
        raise HarnessError(f"{where}: no complete trial to recommend yet; give --trial N")
    return records[recommendation.trial], recommendation.reason


def _recommend_from_disk(log: SweepLog) -> Recommendation | None:
    """For a sweep.json written before recommendations were: from the trials' logs."""
    book = SweepBook(tuple(log.summary.objective))
    book.add_from_disk(log.trials)
    return book.recommendation()


def _plain_toml(value: Any) -> Any:
    """`value` with None left out (TOML has no null) and tuples as lists."""
    if isinstance(value, dict):
        return {k: _plain_toml(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain_toml(v) for v in value]
    return value


def exported_data(recorded: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """The TOML mapping of the recorded experiment (`ExperimentConfig.to_dict()`) with a
    trial's settings in place: no [sweep] table, no path, absolute paths, and none of the
    endpoint fields (`ENDPOINT_FIELDS`), which a results folder never chooses."""
    safe = {k: dict(v) if isinstance(v, dict) else v for k, v in recorded.items()}
    for section, names in ENDPOINT_FIELDS.items():
        for name in names:
            if isinstance(safe.get(section), dict):
                safe[section].pop(name, None)
    # as the trial ran it (failures.explain off, as in every trial): the exported file
    # reproduces the trial from the cache; set failures.explain = true to label failures
    config = SearchSpace(experiment_from_dict(safe)).trial_config(params)
    data = config.to_dict()
    data["corpus"]["sources"] = [config.resolve_path(p) for p in config.corpus.sources]
    for section, name in (("questions", "file"), ("questions", "qrels"), ("judge", "calibration")):
        if data[section][name]:
            data[section][name] = config.resolve_path(data[section][name])
    for section, names in ENDPOINT_FIELDS.items():
        for name in names:
            data[section].pop(name, None)
    data.pop("path", None)
    data.pop("sweep", None)
    return dict(_plain_toml(data))


def _toml(data: dict[str, Any], header: list[str]) -> str:
    import tomli_w

    return "".join(f"# {line}\n" for line in header) + "\n" + tomli_w.dumps(data)


def export_config(
    log: SweepLog, out: str | os.PathLike[str], *, trial: int | None = None
) -> ExportedConfig:
    """Write the experiment file of the recommended trial (or `trial`) to `out`, never
    over an existing file, and return it with the matching LangChain code."""
    path = Path(out)
    if path.exists():
        raise HarnessError(f"{path}: already exists; export-config never overwrites a file")
    rec, why = choose_trial(log, trial)
    data = exported_data(log.summary.config, rec.params)
    header = [
        f"Exported by `harness export-config` from sweep {log.summary.sweep_id}, "
        f"trial {rec.number}:",
        f"{why}.",
        "Endpoints and key variables are never copied from a results folder: set",
        "judge.base_url and judge.api_key_env here (or HARNESS_JUDGE_BASE_URL), and",
        "retrieval.llm_base_url / embedder.base_url with their *_api_key_env where used;",
        "left out, the judge is the local one when judge.model is empty.",
    ]
    text = _toml(data, header)
    # The file must load as it stands: check it before it exists.
    config = parse_experiment(tomllib.loads(text), str(path))
    with open(path, "x", encoding="utf-8") as f:
        f.write(text)
    return ExportedConfig(
        out=str(path),
        trial=rec.number,
        params=dict(rec.params),
        why=why,
        langchain=langchain_code(config),
    )


_EMBEDDINGS = {  # name -> (import line, a str.format template of the constructor call)
    "local-minilm": (
        "from langchain_huggingface import HuggingFaceEmbeddings",
        'HuggingFaceEmbeddings(\n        model_name="sentence-transformers/all-MiniLM-L6-v2",\n'
        '        encode_kwargs={{"normalize_embeddings": True}},\n    )',
    ),
    "sentence-transformers": (
        "from langchain_huggingface import HuggingFaceEmbeddings",
        "HuggingFaceEmbeddings(\n        model_name={model!r},\n"
        '        encode_kwargs={{"normalize_embeddings": True}},\n    )',
    ),
    "openai": (
        "from langchain_openai import OpenAIEmbeddings",
        "OpenAIEmbeddings(model={model!r})",
    ),
}


def langchain_code(config: ExperimentConfig) -> str:
    """Python source of `build_retriever(documents) -> retrieve(question)`: the
    splitter, embeddings, FAISS index, k and reranker of `config`, in LangChain.

    A pure function of the config (compiled, never run, by the tests). Rerankers: none
    (plain top k), bm25 (BM25Retriever over the dense top fetch_k), hybrid
    (EnsembleRetriever of dense and BM25 over the corpus, weighted reciprocal rank), mmr
    (search_type="mmr"), cross-encoder (CrossEncoderReranker in a
    ContextualCompressionRetriever); llm has no stock LangChain equivalent and is left
    as a marked step over the dense candidates.
    """
    ch, r, e = config.chunking, config.retrieval, config.embedder
    name = e.name if e.name in _EMBEDDINGS else "sentence-transformers"
    model = e.model or ("text-embedding-3-small" if name == "openai" else "")
    emb_import, emb_make = _EMBEDDINGS[name]
    lexical = r.reranker in ("bm25", "hybrid")
    imports = [
        *(["import re", ""] if lexical else []),
        "from langchain_community.vectorstores import FAISS",
        "from langchain_community.vectorstores.utils import DistanceStrategy",
        emb_import,
        "from langchain_text_splitters import RecursiveCharacterTextSplitter",
    ]
    k, fetch_k = r.k, r.fetch_k
    body: list[str]
    if r.reranker == "bm25":
        imports.append("from langchain_community.retrievers import BM25Retriever")
        body = [
            f'    dense = store.as_retriever(search_kwargs={{"k": {fetch_k}}})',
            "",
            "    def retrieve(question):",
            "        # BM25 re-orders the dense candidates only.",
            "        candidates = dense.invoke(question)",
            "        if not candidates:",
            "            return []",
            "        bm25 = BM25Retriever.from_documents(",
            f"            candidates, k={k}, preprocess_func=words",
            "        )",
            "        return bm25.invoke(question)",
        ]
    elif r.reranker == "hybrid":
        imports.append("from langchain_classic.retrievers import EnsembleRetriever")
        imports.append("from langchain_community.retrievers import BM25Retriever")
        weights = [float(w) for w in r.hybrid_weights]
        body = [
            f'    dense = store.as_retriever(search_kwargs={{"k": {fetch_k}}})',
            f"    bm25 = BM25Retriever.from_documents(chunks, k={fetch_k}, preprocess_func=words)",
            "    ensemble = EnsembleRetriever(",
            f"        retrievers=[dense, bm25], weights={weights!r}, c=60",
            "    )",
            "",
            "    def retrieve(question):",
            "        # Weighted reciprocal-rank fusion of dense and BM25 over the whole corpus.",
            f"        return ensemble.invoke(question)[:{k}]",
        ]
    elif r.reranker == "mmr":
        body = [
            "    retriever = store.as_retriever(",
            '        search_type="mmr",',
            f'        search_kwargs={{"k": {k}, "fetch_k": {fetch_k}, '
            f'"lambda_mult": {float(r.mmr_lambda)!r}}},',
            "    )",
            "",
            "    def retrieve(question):",
            "        return retriever.invoke(question)",
        ]
    elif r.reranker == "cross-encoder":
        imports.append("from langchain_classic.retrievers import ContextualCompressionRetriever")
        imports.append(
            "from langchain_classic.retrievers.document_compressors import CrossEncoderReranker"
        )
        imports.append("from langchain_community.cross_encoders import HuggingFaceCrossEncoder")
        body = [
            f"    cross_encoder = HuggingFaceCrossEncoder(model_name={r.cross_encoder!r})",
            "    retriever = ContextualCompressionRetriever(",
            f"        base_compressor=CrossEncoderReranker(model=cross_encoder, top_n={k}),",
            f'        base_retriever=store.as_retriever(search_kwargs={{"k": {fetch_k}}}),',
            "    )",
            "",
            "    def retrieve(question):",
            "        return retriever.invoke(question)",
        ]
    elif r.reranker == "llm":
        body = [
            f'    dense = store.as_retriever(search_kwargs={{"k": {fetch_k}}})',
            "",
            "    def retrieve(question):",
            "        candidates = dense.invoke(question)",
            "        # harness's `llm` reranker (an LLM scores each candidate for the question)",
            "        # has no stock LangChain retriever: score `candidates` with your LLM here",
            f"        # and keep the best {k}.",
            f"        return candidates[:{k}]",
        ]
    else:
        body = [
            f'    retriever = store.as_retriever(search_kwargs={{"k": {k}}})',
            "",
            "    def retrieve(question):",
            "        return retriever.invoke(question)",
        ]
    embeddings = emb_make.format(model=model)
    lines = [
        f"# Retrieval as tuned by harness: chunk_size={ch.chunk_size}, "
        f"chunk_overlap={ch.chunk_overlap}, k={k}, reranker={r.reranker}, "
        f"embedder={e.name}{':' + e.model if e.model else ''}.",
        *imports,
        "",
        "",
        *(
            [
                "def words(text):",
                '    """Lower-cased words: what BM25 matches on, as harness tokenises."""',
                '    return re.findall(r"\\w+", text.lower())',
                "",
                "",
            ]
            if lexical
            else []
        ),
        "def build_retriever(documents):",
        '    """Index your LangChain `documents`; returns retrieve(question) -> the top '
        f'{k} chunks."""',
        "    splitter = RecursiveCharacterTextSplitter(",
        f"        chunk_size={ch.chunk_size}, chunk_overlap={ch.chunk_overlap}, "
        "add_start_index=True",
        "    )",
        "    chunks = splitter.split_documents(documents)",
        f"    embeddings = {embeddings}",
        "    # Normalised vectors and inner product: cosine similarity, as harness ranks.",
        "    store = FAISS.from_documents(",
        "        chunks, embeddings, distance_strategy=DistanceStrategy.MAX_INNER_PRODUCT",
        "    )",
        *body,
        "",
        "    return retrieve",
        "",
    ]
    return "\n".join(lines)
