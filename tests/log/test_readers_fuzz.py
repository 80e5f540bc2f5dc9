"""Property test: every reader of a results folder or a cache, fed random bytes and random
JSON shapes, either returns or raises one HarnessError of one line; never a traceback."""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harness.errors import HarnessError
from harness.log import list_results, read_header, read_run, read_sweep, read_trials
from harness.retrieval.index import Index, load_or_build_index
from harness.stores import EmbeddingCache, SignedStore, SQLiteStore, VerdictCache
from harness.types import CriterionVerdict
from tests.conftest import DATA
from tests.retrieval.test_index import HashEmbedder

V1 = DATA / "logs" / "v1"
RUN_HEADER = json.loads((V1 / "run" / "header.json").read_text())
QUESTION_LINE = json.loads((V1 / "run" / "questions.jsonl").read_text().splitlines()[0])
SWEEP_JSON = json.loads((V1 / "sweep" / "sweep.json").read_text())
TRIAL_LINE = json.loads((V1 / "sweep" / "trials.jsonl").read_text().splitlines()[0])
VERDICT = CriterionVerdict(criterion="relevant", value=True, reason="r", raw="yes").to_dict()

FUZZ = settings(
    max_examples=60,
    deadline=None,
    database=None,  # no .hypothesis/ folder in the working tree
    # the fixtures below hold constant settings, the same for every example
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

T = TypeVar("T")

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["", "done", "running", "relevant", "mrr@3", "\n", "\x00"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.text(max_size=8) | st.sampled_from(["a\nb", "\r"]), children, max_size=4
        )
    ),
    max_leaves=12,
)


@st.composite
def mutated(draw: st.DrawFn, obj: Any) -> Any:
    """`obj` with one node, anywhere in it, replaced by a random JSON value or dropped:
    records that are almost right go deeper into the checks than random ones."""
    if isinstance(obj, dict) and obj and draw(st.integers(0, 3)):
        key = draw(st.sampled_from(sorted(obj)))
        if draw(st.integers(0, 4)) == 0:
            return {k: v for k, v in obj.items() if k != key}
        return {**obj, key: draw(mutated(obj[key]))}
    if isinstance(obj, list) and obj and draw(st.integers(0, 3)):
        i = draw(st.integers(0, len(obj) - 1))
        return [*obj[:i], draw(mutated(obj[i])), *obj[i + 1 :]]
    return draw(json_values)


def content(valid: Any) -> st.SearchStrategy[bytes]:
    """A file's bytes: random bytes, random JSON, or a mutation of a valid record."""
    return st.one_of(
        st.binary(max_size=300),
        json_values.map(lambda v: json.dumps(v).encode()),
        mutated(valid).map(lambda v: json.dumps(v).encode()),
        mutated(valid).map(lambda v: json.dumps(v).encode()[:-3]),  # torn
    )


def jsonl(valid: Any) -> st.SearchStrategy[bytes]:
    """A JSONL file: valid lines mixed with bad ones, a torn last line now and then."""
    line = st.one_of(st.just(json.dumps(valid).encode()), content(valid))
    return st.lists(line, max_size=4).map(lambda lines: b"\n".join(lines))


def returns_or_one_line(call: Callable[[], T]) -> T | None:
    """The call's result, or None after a HarnessError of one line; anything else fails."""
    try:
        return call()
    except HarnessError as exc:
        message = str(exc)
        assert message and "\n" not in message and "\r" not in message, repr(message)
        return None


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HARNESS_CACHE_KEY", "test-key-fuzz-0123456789")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def _folder(files: dict[str, bytes], base: Path | None = None) -> Path:
    root = Path(tempfile.mkdtemp(prefix="fuzz-"))
    if base is not None:
        shutil.copytree(base, root, dirs_exist_ok=True)
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


DEEP = b"[" * 5_000 + b"]" * 5_000  # deeper than json.loads can go
NEWLINE_KEY = json.dumps({**RUN_HEADER, "metrics": {"mrr@3\nforged": "x"}}).encode()


@FUZZ
@given(header=content(RUN_HEADER))
@example(header=DEEP)
@example(header=NEWLINE_KEY)  # a key read from the file is named in the message
def test_read_header(header):
    folder = _folder({"header.json": header})
    try:
        returns_or_one_line(lambda: read_header(folder))
    finally:
        shutil.rmtree(folder)


@FUZZ
@given(
    header=st.one_of(st.just(json.dumps(RUN_HEADER).encode()), content(RUN_HEADER)),
    questions=jsonl(QUESTION_LINE),
)
@example(header=json.dumps(RUN_HEADER).encode(), questions=DEEP + b"\n{}")
def test_read_run(header, questions):
    folder = _folder({"header.json": header, "questions.jsonl": questions})
    try:
        returns_or_one_line(lambda: read_run(folder))
    finally:
        shutil.rmtree(folder)


@FUZZ
@given(
    summary=st.one_of(st.just(json.dumps(SWEEP_JSON).encode()), content(SWEEP_JSON)),
    trials=jsonl(TRIAL_LINE),
)
def test_read_sweep_and_trials(summary, trials):
    folder = _folder({"sweep.json": summary, "trials.jsonl": trials})
    try:
        returns_or_one_line(lambda: read_sweep(folder))
        returns_or_one_line(lambda: read_trials(folder))
    finally:
        shutil.rmtree(folder)


@FUZZ
@given(
    name=st.sampled_from(["header.json", "sweep.json"]),
    data=st.one_of(content(RUN_HEADER), content(SWEEP_JSON)),
)
def test_list_results_with_one_corrupt_folder(name, data):
    root = _folder({}, V1)  # a good run and a good sweep
    try:
        (root / "corrupt").mkdir()
        (root / "corrupt" / name).write_bytes(data)
        returns_or_one_line(lambda: list_results(root))
    finally:
        shutil.rmtree(root)


class Caches(NamedTuple):
    """The caches under test and raw connections to their files."""

    verdicts: VerdictCache
    embeddings: EmbeddingCache
    raw_verdicts: sqlite3.Connection
    raw_embeddings: sqlite3.Connection


raw_values = st.one_of(
    st.binary(max_size=120),
    st.none(),
    st.integers(-(2**63), 2**63 - 1),  # what a SQLite column can hold
    st.floats(allow_nan=False),
    st.text(max_size=40),
)


@pytest.fixture(scope="module")
def caches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Caches]:
    """A verdict and an embedding cache (one SQLite file each, kept for every example: a
    new file per example would be most of the time spent), and a raw connection to each."""
    folder = tmp_path_factory.mktemp("caches")
    secret = b"test-key-fuzz-0123456789"
    vc = VerdictCache(
        SignedStore(
            SQLiteStore(folder / "v.sqlite", "verdicts", value_column="verdict"),
            "verdicts",
            secret=secret,
        )
    )
    ec = EmbeddingCache(
        SignedStore(SQLiteStore(folder / "e.sqlite", "embeddings"), "embeddings", secret=secret)
    )
    raw_v, raw_e = sqlite3.connect(folder / "v.sqlite"), sqlite3.connect(folder / "e.sqlite")
    yield Caches(vc, ec, raw_v, raw_e)
    for closeable in (vc, ec, raw_v, raw_e):
        closeable.close()


@FUZZ
@given(raw=raw_values, signed=content(VERDICT))
def test_verdict_cache_get(caches, raw, signed):
    cache = caches.verdicts
    cache.put("k", CriterionVerdict(**VERDICT))
    caches.raw_verdicts.execute("UPDATE verdicts SET verdict = ? WHERE key = 'k'", (raw,))
    caches.raw_verdicts.commit()
    got = returns_or_one_line(lambda: cache.get("k"))
    assert got is None or got == CriterionVerdict(**VERDICT)  # tags are not guessed
    # A value signed with the right key but of any shape: checked as a record.
    cache.store.put_many({"k": signed})
    got = returns_or_one_line(lambda: cache.get("k"))
    assert got is None or isinstance(got, CriterionVerdict)


@FUZZ
@given(raw=raw_values, signed=st.binary(max_size=200))
def test_embedding_cache_get_many(caches, raw, signed):
    cache = caches.embeddings
    cache.put_many("spec", "doc", {"a": np.ones(4), "b": np.zeros(4)})
    caches.raw_embeddings.execute(
        "UPDATE embeddings SET value = ? WHERE key = 'spec:doc:a'", (raw,)
    )
    caches.raw_embeddings.commit()
    got = returns_or_one_line(lambda: cache.get_many("spec", "doc", ["a", "b", "c"]))
    assert got is None or set(got) == {"b"}
    cache.store.put_many({"spec:doc:a": signed})
    got = returns_or_one_line(lambda: cache.get_many("spec", "doc", ["a"]))
    assert got is None or all(v.dtype == np.float32 and v.size for v in got.values())


@pytest.fixture(scope="module")
def index_entry(tmp_path_factory: pytest.TempPathFactory) -> tuple[list, Path]:
    """A sound index cache entry to corrupt, and the chunks it holds."""
    from harness.corpus import chunk_documents, load_documents

    chunks = chunk_documents(
        load_documents([str(DATA / "corpus")]), chunk_size=300, chunk_overlap=0
    )
    cache_dir = tmp_path_factory.mktemp("index-template")
    load_or_build_index(chunks, HashEmbedder(dim=8), key="k", cache_dir=cache_dir)
    return chunks, cache_dir


@FUZZ
@given(
    victim=st.sampled_from(["meta.json", "chunks.json", "index.faiss"]),
    data=st.one_of(
        content({"key": "k", "n_chunks": 3}),
        content([{"chunk_id": "a#0", "doc_id": "a", "text": "t", "start_char": 0}]),
    ),
)
def test_load_or_build_index_on_a_corrupt_entry(index_entry, victim, data):
    chunks, template = index_entry
    cache_dir = _folder({}, template)
    try:
        (cache_dir / "index" / "k" / victim).write_bytes(data)
        idx = returns_or_one_line(
            lambda: load_or_build_index(chunks, HashEmbedder(dim=8), key="k", cache_dir=cache_dir)
        )
        # Nothing in these files can stop a rebuild from the corpus.
        assert isinstance(idx, Index) and idx.from_cache is False
        assert idx.chunks == {c.chunk_id: c for c in chunks}
    finally:
        shutil.rmtree(cache_dir)
