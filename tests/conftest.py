"""Shared fixtures: the tiny corpus, a scripted judge, and a real llama.cpp server."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.types import ComponentSpec, CriterionVerdict

DATA = Path(__file__).parent / "data"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class ScriptedJudge:
    """A deterministic judge for unit tests.

    relevant: the chunk mentions one of the question's topic words;
    complete: the chunk contains the question's answer text.
    Questions it does not know are graded "no". `fail_on` makes chosen chunks fail.
    """

    def __init__(self, questions_file: Path = DATA / "questions.jsonl", fail_on: str = "") -> None:
        self.script: dict[str, tuple[list[str], str]] = {}
        for line in questions_file.read_text().splitlines():
            q = json.loads(line)
            self.script[q["text"]] = (q["topic"], q["answer"])
        self.fail_on = fail_on
        self.calls: list[tuple[str, str, str]] = []
        self._lock = threading.Lock()
        self.spec = ComponentSpec(name="scripted", args={"version": 1})

    def identity(self) -> str:
        return "scripted-v1"

    def grade(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str
    ) -> CriterionVerdict:
        with self._lock:
            self.calls.append((question, chunk_text, criterion))
        if self.fail_on and self.fail_on in chunk_text:
            return CriterionVerdict(
                criterion=criterion, value=None, raw="??", error="scripted failure", calls=1
            )
        topics, answer = self.script.get(question, ([], "\0"))
        text = chunk_text.lower()
        if criterion == "relevant":
            value = any(t in text for t in topics)
        else:
            value = answer.lower() in text
        return CriterionVerdict(
            criterion=criterion,
            value=value,
            reason=f"scripted {criterion}",
            raw="yes" if value else "no",
            calls=1,
        )


@pytest.fixture
def scripted_judge() -> ScriptedJudge:
    return ScriptedJudge()


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture(scope="session")
def smollm_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from harness.llama_server import resolve_model

    path, _ = resolve_model("smollm2-135m", tmp_path_factory.mktemp("models"))
    return path


@pytest.fixture(scope="session")
def llama_server(smollm_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real llama.cpp server with the smallest packaged model, on 127.0.0.1."""
    from harness.llama_server import LlamaServer

    log = tmp_path_factory.mktemp("llama") / "server.log"
    with LlamaServer(
        smollm_path, alias="smollm2-135m", parallel=2, ctx_per_slot=2048, log_path=log
    ) as s:
        yield s
