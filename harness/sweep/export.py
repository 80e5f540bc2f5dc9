"""A sweep's chosen trial as something to use: a runnable experiment file and the
matching LangChain code.

`export_config` writes the experiment the sweep recorded, with the trial's settings in
place (`SearchSpace.trial_config`), without its `[sweep]` table and with every path
absolute, so the file runs from anywhere. A results folder never chooses where a
credential goes, so no endpoint field of any component (`harness.components.endpoints`)
is copied: the file says, in a comment, to set them. `langchain_code` is the same retrieval as a
function a user pastes into their RAG system, each component's part written by its own
module (`export`); a component without a stock LangChain equivalent is reported.

Everything read from the folder is untrusted: a trial's params are checked against the
search space's types and the whole config against the schema (names from the
registries, numbers as numbers, names on one line) before anything is written, and
every value goes out through a serialiser (tomli_w for the file, `repr()` for code, a
one-line escaped form for comments), never pasted as text.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loguru import logger

from harness.components.contract import EmbeddingsExport, RetrieverExport, export_note
from harness.components.endpoints import strip_endpoints
from harness.components.registry import load
from harness.config import ExperimentConfig, experiment_from_dict, parse_experiment
from harness.errors import ConfigError, HarnessError
from harness.log import SWEEP_FILE, TRIALS_FILE, Recommendation, SweepLog, TrialRecord
from harness.sweep.book import SweepBook
from harness.sweep.space import SearchSpace
from harness.words import CJK, RUN

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
    notes: tuple[str, ...] = ()
    """Components without a stock LangChain equivalent (reported; the code keeps a
    marked step for each)."""


def choose_trial(log: SweepLog, trial: int | None) -> tuple[TrialRecord, str]:
    """The trial to export and why: `trial` when given (complete or pruned; a repeat gives
    the trial whose settings it repeats), else the recommended one. Raises HarnessError
    naming what to do when there is none."""
    where = log.sweep_dir / SWEEP_FILE
    records = {t.number: t for t in log.trials}
    if trial is not None:
        rec = records.get(trial)
        twin = rec.repeat_of if rec is not None else None
        if twin is not None and twin in records:  # a repeat: its settings ran as the twin
            return records[twin], f"trial {twin}, whose settings trial {trial} repeats"
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


def one_line(text: Any) -> str:
    """`text` safe for one comment line (TOML or Python): every control character,
    newline and line separator escaped as in a Python literal."""
    return repr(str(text))[1:-1]


def _plain_toml(value: Any) -> Any:
    """`value` with None left out (TOML has no null) and tuples as lists."""
    if isinstance(value, dict):
        return {k: _plain_toml(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain_toml(v) for v in value]
    return value


_PARAM_TYPES: dict[str, type] = {
    "chunk_size": int,
    "chunk_overlap": int,
    "k": int,
    "fetch_k": int,
    "reranker": str,
    "embedder": str,
}
"""A trial's params (`SearchSpace.settings`) and their types; fetch_k may be absent."""


def check_params(params: Any, where: str, prefix: str = "params") -> dict[str, Any]:
    """A trial's params as read from a results folder, checked: an object of the known
    settings with the right types (the names are checked by the schema later)."""
    if not isinstance(params, dict):
        raise ConfigError(where, prefix, f"expected an object, got {type(params).__name__}")
    unknown = sorted(str(k) for k in params if k not in _PARAM_TYPES)
    if unknown:
        raise ConfigError(where, f"{prefix}.{one_line(unknown[0])}", "unknown setting")
    for name, tp in _PARAM_TYPES.items():
        if name not in params:
            if name == "fetch_k":
                continue
            raise ConfigError(where, f"{prefix}.{name}", "missing")
        value = params[name]
        if isinstance(value, bool) or not isinstance(value, tp):
            raise ConfigError(
                where, f"{prefix}.{name}", f"expected {tp.__name__}, got {one_line(repr(value))}"
            )
    return dict(params)


def exported_data(recorded: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """The TOML mapping of the recorded experiment (`ExperimentConfig.to_dict()`) with a
    trial's settings in place: no [sweep] table, no path, absolute paths, and no endpoint
    field of any component (`harness.components.endpoints`), which a results folder
    never chooses. Raises ConfigError for params or a config the schema refuses."""
    params = check_params(params, "<trial>")
    # as the trial ran it (failures.judge_pool off, as in every trial): the exported file
    # reproduces the trial from the cache; failures.judge_pool = true labels every failure
    config = SearchSpace(experiment_from_dict(strip_endpoints(recorded))).trial_config(params)
    data = config.to_dict()
    data["corpus"]["sources"] = [config.resolve_path(p) for p in config.corpus.sources]
    for section, name in (("questions", "file"), ("questions", "qrels"), ("judge", "calibration")):
        if data[section][name]:
            data[section][name] = config.resolve_path(data[section][name])
    data = strip_endpoints(data)
    data.pop("path", None)
    data.pop("sweep", None)
    return dict(_plain_toml(data))


def _toml(data: dict[str, Any], header: list[str]) -> str:
    import tomli_w

    return "".join(f"# {one_line(line)}\n" for line in header) + "\n" + tomli_w.dumps(data)


def export_config(
    log: SweepLog, out: str | os.PathLike[str], *, trial: int | None = None
) -> ExportedConfig:
    """Write the experiment file of the recommended trial (or `trial`) to `out`, never
    over an existing file, and return it with the matching LangChain code; components
    without a stock LangChain equivalent are logged as warnings and listed in `notes`."""
    path = Path(out)
    if path.exists():
        raise HarnessError(f"{path}: already exists; export-config never overwrites a file")
    rec, why = choose_trial(log, trial)
    where = str(log.sweep_dir / TRIALS_FILE)
    params = check_params(rec.params, where, f"trial {rec.number} params")
    try:
        data = exported_data(log.summary.config, params)
    except ConfigError as exc:  # name the folder, not a file that does not exist yet
        raise ConfigError(str(log.sweep_dir / SWEEP_FILE), exc.field, exc.expected) from None
    header = [
        f"Exported by `harness export-config` from sweep {log.summary.sweep_id}, "
        f"trial {rec.number}:",
        f"{why}.",
        "Endpoints and key variables are never copied from a results folder: set",
        "judge.base_url and judge.api_key_env here (or HARNESS_JUDGE_BASE_URL), and",
        "generate.base_url, retrieval.llm_base_url, embedder.base_url with their",
        "*_api_key_env where used; left out, the judge is the local one when judge.model",
        "is empty.",
    ]
    text = _toml(data, header)
    # The file must load as it stands: check it before it exists.
    config = parse_experiment(tomllib.loads(text), str(path))
    code, notes = langchain_export(config)
    for note in notes:
        logger.warning("export-config: {}; the LangChain code keeps a marked step for it", note)
    with open(path, "x", encoding="utf-8") as f:
        f.write(text)
    return ExportedConfig(
        out=str(path),
        trial=rec.number,
        params=params,
        why=why,
        langchain=code,
        notes=tuple(notes),
    )


def _retriever_export(config: ExperimentConfig) -> RetrieverExport:
    name = config.retrieval.reranker
    module = load("reranker", name)
    if hasattr(module, "export"):
        return module.export(config.retrieval)
    return RetrieverExport(
        body=(
            f'    dense = store.as_retriever(search_kwargs={{"k": {config.retrieval.fetch_k!r}}})',
            "",
            "    def retrieve(question):",
            "        candidates = dense.invoke(question)",
            f"        # {one_line(export_note('reranker', name))}: rerank `candidates` here.",
            f"        return candidates[:{config.retrieval.k!r}]",
        ),
        note=export_note("reranker", name),
    )


def _embeddings_export(config: ExperimentConfig) -> EmbeddingsExport:
    name = config.embedder.name
    module = load("embedder", name)
    if hasattr(module, "export"):
        return module.export(config.embedder)
    note = export_note("embedder", name)
    return EmbeddingsExport(
        f"# {one_line(note)}: build your LangChain Embeddings below", "None", note
    )


def _judge_note(config: ExperimentConfig) -> str:
    """What to report about the judge backend ("" for none): the exported code is
    retrieval only, so a backend without its own `export` is reported."""
    name = config.judge.backend
    module = load("judge", name)
    if hasattr(module, "export"):
        return str(module.export(config.judge))
    return f"{export_note('judge backend', name)}; the exported code covers retrieval only"


def langchain_code(config: ExperimentConfig) -> str:
    """Python source of `build_retriever(documents) -> retrieve(question)`: the
    splitter, embeddings, FAISS index, k and reranker of `config`, in LangChain (see
    `langchain_export`)."""
    return langchain_export(config)[0]


def langchain_export(config: ExperimentConfig) -> tuple[str, list[str]]:
    """(the LangChain code of `config`, what has no stock LangChain equivalent).

    A pure function of the config (compiled, never run, by the tests). The reranker's
    and the embedder's parts come from their modules (`export`); a component without
    one keeps a marked step in the code and is reported, as is a judge backend without
    one.
    """
    ch, r, e = config.chunking, config.retrieval, config.embedder
    rx, ex = _retriever_export(config), _embeddings_export(config)
    notes = [n for n in (rx.note, ex.note, _judge_note(config)) if n]
    imports = [
        *(["import re", ""] if rx.words else []),
        "from langchain_community.vectorstores import FAISS",
        "from langchain_community.vectorstores.utils import DistanceStrategy",
        ex.import_line,
        "from langchain_text_splitters import RecursiveCharacterTextSplitter",
        *rx.imports,
    ]
    embedder = f"{e.name}:{e.model}" if e.model else e.name
    summary = (
        f"chunk_size={ch.chunk_size!r}, chunk_overlap={ch.chunk_overlap!r}, k={r.k!r}, "
        f"reranker={r.reranker!r}, embedder={embedder!r}"
    )
    lines = [
        f"# Retrieval as tuned by harness: {one_line(summary)}.",
        *(f"# Note: {one_line(n)}." for n in notes),
        *imports,
        "",
        "",
        *(
            [
                "def words(text):",
                '    """Lower-cased words: what BM25 matches on, as harness tokenises (a run of',
                '    Chinese or Japanese characters as its overlapping character pairs)."""',
                "    out = []",
                f'    for run in re.findall(r"{RUN}", text.lower()):',
                f'        if re.match(r"[{CJK}]", run) and len(run) > 1:',
                "            out.extend(run[i : i + 2] for i in range(len(run) - 1))",
                "        else:",
                "            out.append(run)",
                "    return out",
                "",
                "",
            ]
            if rx.words
            else []
        ),
        "def build_retriever(documents):",
        '    """Index your LangChain `documents`; returns retrieve(question) -> the top '
        f'{r.k!r} chunks."""',
        "    splitter = RecursiveCharacterTextSplitter(",
        f"        chunk_size={ch.chunk_size!r}, chunk_overlap={ch.chunk_overlap!r}, "
        "add_start_index=True",
        "    )",
        "    chunks = splitter.split_documents(documents)",
        f"    embeddings = {ex.expression}",
        "    # Normalised vectors and inner product: cosine similarity, as harness ranks.",
        "    store = FAISS.from_documents(",
        "        chunks, embeddings, distance_strategy=DistanceStrategy.MAX_INNER_PRODUCT",
        "    )",
        *rx.body,
        "",
        "    return retrieve",
        "",
    ]
    return "\n".join(lines), notes
