"""Shared fixtures: the tiny corpus, a scripted judge, and a real llama.cpp server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import testing

DATA = Path(__file__).parent / "data"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Cache rows are signed with a per-user key: the suite (and the processes it starts) uses
# this one rather than creating ~/.config/harness/cache.key in the real home.
os.environ.setdefault("HARNESS_CACHE_KEY", "harness-test-suite-cache-key")


class ScriptedJudge(testing.ScriptedJudge):
    """The scripted judge over the tiny corpus's questions (tests/data/questions.jsonl)."""

    def __init__(self, questions_file: Path = DATA / "questions.jsonl", fail_on: str = "") -> None:
        super().__init__(questions_file, fail_on=fail_on)


@pytest.fixture
def scripted_judge() -> ScriptedJudge:
    return ScriptedJudge()


@pytest.fixture
def warnings() -> Iterator[list[str]]:
    """Messages loguru logs at WARNING or above while the test runs."""
    from loguru import logger

    seen: list[str] = []
    sink = logger.add(lambda m: seen.append(m.record["message"]), level="WARNING")
    yield seen
    logger.remove(sink)


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture(scope="session")
def smollm_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from harness.llm.local import resolve_model

    path, _ = resolve_model("smollm2-135m", tmp_path_factory.mktemp("models"))
    return path


@pytest.fixture(scope="session")
def llama_server(smollm_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real llama.cpp server with the smallest packaged model, on 127.0.0.1."""
    from harness.llm.local import LlamaServer

    log = tmp_path_factory.mktemp("llama") / "server.log"
    with LlamaServer(
        smollm_path, alias="smollm2-135m", parallel=2, ctx_per_slot=2048, log_path=log
    ) as s:
        yield s


@pytest.fixture(scope="session")
def postgres() -> Iterator[object]:
    """A real PostgreSQL server on 127.0.0.1 (tests/postgres.py), for the whole session."""
    from tests.postgres import postgres_server

    yield from postgres_server()


@pytest.fixture
def pg_url(postgres, request: pytest.FixtureRequest) -> str:
    """A fresh database on the test server: its URL (with the test password)."""
    import re

    name = "t_" + re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:50]
    return postgres.new_database(name)
