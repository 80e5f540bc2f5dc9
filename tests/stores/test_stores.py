"""The caches trust only what this user wrote: every row is signed with a per-user key
(HARNESS_CACHE_KEY, or a key file outside the cache folder), checked on read, and a row
that fails (forged, copied under another key, garbled, another user's) is asked again."""

from __future__ import annotations

import json
import sqlite3
import stat
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from harness.config import CriteriaConfig, load_experiment
from harness.errors import HarnessError
from harness.judge import JudgeStats, judge_pairs
from harness.pipeline import run_experiment
from harness.retrieval.embedders import CachedEmbedder
from harness.stores import (
    EmbeddingCache,
    SQLiteStore,
    VerdictCache,
    base,
    cache_secret,
    verdict_key,
)
from harness.types import ComponentSpec, CriterionVerdict
from tests.conftest import DATA, ScriptedJudge

PAIRS = [
    ("When is the plant swap?", "The annual plant swap is on 14 May."),
    ("When is the plant swap?", "Tomatoes like warmth."),
]
CRITERIA = CriteriaConfig()


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A test key, and a config home in tmp_path, so no test touches the real home."""
    monkeypatch.setenv("HARNESS_CACHE_KEY", "test-key-one-0123456789")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(base, "_warned", False)  # the once-per-process warning, per test


def _judge(cache: VerdictCache) -> tuple[ScriptedJudge, list[int | None]]:
    judge = ScriptedJudge()
    grades = [
        v.grade
        for v in judge_pairs(PAIRS, judge, criteria=CRITERIA, cache=cache, stats=JudgeStats())
    ]
    return judge, grades


def _key_of(judge: ScriptedJudge, pair: int, criterion: str) -> str:
    q, c = PAIRS[pair]
    return verdict_key(judge.identity(), getattr(CRITERIA, criterion), q, c)


def _raw_write(path: Path, key: str, value: object) -> None:
    """Overwrite a row behind the cache's back, as someone editing the file would."""
    db = sqlite3.connect(path)
    db.execute("INSERT OR REPLACE INTO verdicts (key, verdict) VALUES (?, ?)", (key, value))
    db.commit()
    db.close()


def _raw_read(path: Path, key: str) -> bytes:
    db = sqlite3.connect(path)
    (value,) = db.execute("SELECT verdict FROM verdicts WHERE key = ?", (key,)).fetchone()
    db.close()
    return bytes(value)


def test_forged_verdict_row_is_ignored_and_asked_again(tmp_path, warnings):
    path = tmp_path / "v.sqlite"
    cache = VerdictCache(path)
    first, grades = _judge(cache)
    assert grades == [2, 0] and len(first.calls) == 3
    # Flip the second pair's relevance to "yes" under its real key, as the issue did.
    forged = CriterionVerdict(criterion="relevant", value=True, reason="forged", raw="yes")
    _raw_write(path, _key_of(first, 1, "relevant"), json.dumps(forged.to_dict()).encode())

    again, grades = _judge(cache)
    assert grades == [2, 0]  # the forged "yes" was not believed
    assert again.calls == [(*PAIRS[1], "relevant")]  # and that verdict was asked again
    assert cache.rejected == 1
    assert len(warnings) == 1 and str(path) in warnings[0] and "integrity" in warnings[0]
    # The answer asked again is stored signed, and trusted from then on.
    third, grades = _judge(cache)
    assert grades == [2, 0] and third.calls == [] and cache.rejected == 1


def test_forged_rows_do_not_move_a_runs_metrics(tmp_path):
    """The issue's attack: every verdict row set to "yes" raised MRR from 0.504 to 0.892."""
    config = load_experiment(DATA / "experiment.toml")
    cache_dir = tmp_path / "cache"
    first = run_experiment(
        config, results_dir=tmp_path / "r", cache_dir=cache_dir, judge=ScriptedJudge()
    )
    db = sqlite3.connect(cache_dir / "verdicts.sqlite")
    keys = [k for (k,) in db.execute("SELECT key FROM verdicts")]
    assert keys
    for k in keys:
        v = CriterionVerdict(criterion="relevant", value=True, raw="yes").to_dict()
        db.execute("UPDATE verdicts SET verdict = ? WHERE key = ?", (json.dumps(v), k))
    db.commit()
    db.close()

    judge = ScriptedJudge()
    second = run_experiment(config, results_dir=tmp_path / "r", cache_dir=cache_dir, judge=judge)
    assert second.header.metrics == first.header.metrics
    assert second.header.stats["judge_cache_hits"] == 0
    assert len(judge.calls) == first.header.stats["judge_calls"]


def test_row_copied_under_another_key_is_ignored(tmp_path):
    path = tmp_path / "v.sqlite"
    cache = VerdictCache(path)
    first, _ = _judge(cache)
    yes_row = _raw_read(path, _key_of(first, 0, "relevant"))  # a genuine, signed "yes"
    _raw_write(path, _key_of(first, 1, "relevant"), yes_row)

    assert cache.get(_key_of(first, 1, "relevant")) is None
    assert cache.get(_key_of(first, 0, "relevant")) is not None  # the original still holds
    again, grades = _judge(cache)
    assert grades == [2, 0] and again.calls == [(*PAIRS[1], "relevant")]
    assert cache.rejected == 2


def test_a_row_moved_to_another_cache_is_ignored(tmp_path):
    """The tag covers the cache's name: a signed vector is not a verdict, and back."""
    vc = VerdictCache(tmp_path / "v.sqlite")
    vc.put("k", CriterionVerdict(criterion="relevant", value=True, raw="yes"))
    vc.flush()  # puts are written behind
    ec = EmbeddingCache(SQLiteStore(tmp_path / "v.sqlite", "verdicts", value_column="verdict"))
    assert ec.store.get_many(["k"]) == {} and ec.rejected == 1


@pytest.mark.parametrize(
    "value",
    [
        b"\x00\xff\xfe garbage",
        b"",
        None,
        12345,
        "not json",
        b"[1, 2, 3]",
        json.dumps({"criterion": "relevant"}).encode(),
        json.dumps({"criterion": "relevant", "value": "maybe", "p_yes": "high"}).encode(),
    ],
    ids=["bytes", "empty", "null", "integer", "text", "list", "no-value", "wrong-types"],
)
def test_garbage_in_a_row_is_asked_again_without_a_traceback(tmp_path, value):
    path = tmp_path / "v.sqlite"
    cache = VerdictCache(path)
    first, _ = _judge(cache)
    _raw_write(path, _key_of(first, 0, "complete"), value)

    again, grades = _judge(cache)
    assert grades == [2, 0] and again.calls == [(*PAIRS[0], "complete")]
    assert cache.rejected == 1


@pytest.mark.parametrize(
    "obj",
    [
        [1, 2],
        {"criterion": "relevant"},
        {"criterion": "relevant", "value": None, "error": "timeout"},  # never stored
        {"criterion": "relevant", "value": True, "p_yes": 7.5},
        {"criterion": ["x"], "value": True},
    ],
)
def test_signed_values_of_the_wrong_shape_are_asked_again(tmp_path, obj):
    """A correctly tagged row that is not a successful verdict (a bug, or someone with the
    key) is read as absent too: the record is checked field by field."""
    cache = VerdictCache(tmp_path / "v.sqlite")
    first, _ = _judge(cache)
    cache.store.put_many({_key_of(first, 0, "relevant"): json.dumps(obj).encode()})

    again, grades = _judge(cache)
    assert grades == [2, 0] and again.calls[0] == (*PAIRS[0], "relevant")
    assert cache.rejected == 1


def test_rows_written_before_signing_are_paid_for_once_more(tmp_path):
    """A cache from an earlier harness holds plain JSON rows: each is asked once more, then
    stored signed."""
    path = tmp_path / "v.sqlite"
    ok = CriterionVerdict(criterion="relevant", value=True, reason="r", raw="yes")
    store = SQLiteStore(path, "verdicts", value_column="verdict")
    store.put_many({"k1": json.dumps(ok.to_dict()).encode()})  # how rows used to be written
    store.close()
    cache = VerdictCache(path)
    assert cache.get("k1") is None and cache.rejected == 1
    cache.put("k1", ok)
    assert cache.get("k1") == ok and cache.rejected == 1


def test_a_cache_signed_with_another_key_is_not_trusted(tmp_path, monkeypatch):
    path = tmp_path / "v.sqlite"
    first, _ = _judge(VerdictCache(path))
    assert len(first.calls) == 3
    monkeypatch.setenv("HARNESS_CACHE_KEY", "someone-elses-key-0123456789")
    cache = VerdictCache(path)
    again, grades = _judge(cache)
    assert grades == [2, 0] and len(again.calls) == 3
    assert cache.rejected == 3


def test_the_key_file_is_made_once_outside_the_cache_with_mode_0600(tmp_path, monkeypatch):
    monkeypatch.delenv("HARNESS_CACHE_KEY")
    key_file = tmp_path / "config" / "harness" / "cache.key"
    assert not key_file.exists()
    cache = VerdictCache(tmp_path / "cache" / "v.sqlite")
    assert key_file.is_file() and stat.S_IMODE(key_file.stat().st_mode) == 0o600
    secret = key_file.read_bytes()
    first, _ = _judge(cache)
    again, _ = _judge(VerdictCache(tmp_path / "cache" / "v.sqlite"))  # another process
    assert len(first.calls) == 3 and again.calls == []
    assert key_file.read_bytes() == secret and cache_secret() == secret.strip()
    assert not list((tmp_path / "cache").glob("*.key"))

    # Without XDG_CONFIG_HOME the key lives in ~/.config (here a fake home).
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    cache_secret()
    assert (tmp_path / "home" / ".config" / "harness" / "cache.key").is_file()


@pytest.mark.parametrize("content", [b"", b"short\n"])
def test_a_bad_key_file_is_one_line(tmp_path, monkeypatch, content):
    monkeypatch.delenv("HARNESS_CACHE_KEY")
    key_file = tmp_path / "config" / "harness" / "cache.key"
    key_file.parent.mkdir(parents=True)
    key_file.write_bytes(content)
    with pytest.raises(HarnessError) as err:
        VerdictCache(tmp_path / "v.sqlite")
    assert str(key_file) in str(err.value) and "\n" not in str(err.value)


def test_a_cache_file_that_is_not_sqlite_is_one_line(tmp_path):
    path = tmp_path / "v.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(HarnessError) as err:
        VerdictCache(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


class _Counting(Embeddings):
    """A 4-dimensional embedder that counts the texts it is asked to embed."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts += texts
        return [[float(len(t)), 1.0, 2.0, 3.0] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@pytest.mark.parametrize(
    "raw",
    [b"\x01\x02\x03", b"", None, "text", np.ones(4, np.float32).tobytes()],
    ids=["odd-length", "empty", "null", "text", "unsigned-vector"],
)
def test_embedding_rows_that_fail_are_embedded_again(tmp_path, raw):
    path = tmp_path / "e.sqlite"
    inner = _Counting()
    emb = CachedEmbedder(inner, ComponentSpec("counting", {}), EmbeddingCache(path))
    first = emb.embed_documents(["alpha", "beta"])
    assert inner.texts == ["alpha", "beta"]
    db = sqlite3.connect(path)
    db.execute("UPDATE embeddings SET value = ?", (raw,))
    db.commit()
    db.close()

    again = emb.embed_documents(["alpha", "beta"])
    assert again == first and inner.texts == ["alpha", "beta"] * 2
    assert emb.cache is not None and emb.cache.rejected == 2


@pytest.mark.parametrize(
    "vector",
    [np.full(4, np.nan, np.float32), np.zeros(0, np.float32), np.ones(70_000, np.float32)],
    ids=["nan", "empty", "too-long"],
)
def test_signed_vectors_that_are_not_sane_are_embedded_again(tmp_path, vector):
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    cache.store.put_many({"spec:doc:abc": vector.tobytes()})
    assert cache.get_many("spec", "doc", ["abc"]) == {} and cache.rejected == 1


class _Failing(_Counting):
    """Embeds `ok` calls, then fails as a killed process or a lost connection would."""

    def __init__(self, ok: int) -> None:
        super().__init__()
        self.ok = ok

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.ok == 0:
            raise KeyboardInterrupt
        self.ok -= 1
        return super().embed_documents(texts)


def test_an_interrupted_embedding_keeps_its_finished_slices(tmp_path, monkeypatch):
    from harness.retrieval.embedders import base

    monkeypatch.setattr(base, "SLICE", 4)
    texts = [f"text {i}" for i in range(10)]
    path = tmp_path / "e.sqlite"
    failing = _Failing(ok=2)
    emb = CachedEmbedder(failing, ComponentSpec("counting", {}), EmbeddingCache(path))
    with pytest.raises(KeyboardInterrupt):
        emb.embed_documents(texts)
    assert failing.texts == texts[:8]
    rerun = _Counting()
    again = CachedEmbedder(rerun, ComponentSpec("counting", {}), EmbeddingCache(path))
    vectors = again.embed_documents(texts)
    assert rerun.texts == texts[8:] and len(vectors) == 10
