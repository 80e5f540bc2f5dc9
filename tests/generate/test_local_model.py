"""`harness generate` end to end with the real local model (SmolLM2-135M on llama.cpp).

Asserts structure, not quality: the tiny model writes poor questions, and the filters
may drop most of them; what must hold is that every call went through, every candidate
is accounted for, and what is kept is a well-formed questions file."""

from __future__ import annotations

import json

import pytest

from harness.config import load_experiment
from harness.corpus import load_questions
from harness.generate import Generator, GenStats, ReplyCache, generate_questions
from harness.generate.critique import CUT_OFF
from harness.llm.client import ChatClient

pytestmark = pytest.mark.llama


def test_generates_a_few_questions_with_the_local_model(llama_server, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "leave.md").write_text(
        "# Leave\n\nEvery full-time employee gets 27 days of paid annual leave a year, plus "
        "public holidays. Up to 5 unused days can be carried over to the next year and must "
        "be used by 31 March.\n",
        encoding="utf-8",
    )
    (corpus / "laptops.md").write_text(
        "# Laptops\n\nNew employees receive a 14-inch laptop on their first day. Laptops are "
        "replaced every three years; a broken screen is repaired by the IT desk in Lisbon.\n",
        encoding="utf-8",
    )
    exp = tmp_path / "exp.toml"
    exp.write_text(
        '[corpus]\nsources = ["corpus"]\n[questions]\nfile = "q.jsonl"\n'
        "[generate]\npassage_chars = 300\nmin_score = 1\ntemperature = 0.0\n",
        encoding="utf-8",
    )
    config = load_experiment(exp)
    client = ChatClient(
        base_url=llama_server.base_url, model="smollm2-135m", api_key="", logprobs=False
    )
    (tmp_path / "cache").mkdir()
    cache = ReplyCache(tmp_path / "cache" / "generations.sqlite")
    gen = Generator(client, "smollm", cache, seed=0, grammar=True, stats=GenStats())
    try:
        report = generate_questions(
            config,
            out=tmp_path / "out" / "gen.jsonl",
            n=3,
            types=("simple", "situational"),
            cache_dir=tmp_path / "cache",
            generator=gen,
        )
    finally:
        cache.close()
    c = report.counts
    assert c["generated"] >= 3
    assert c["generated"] == c["kept"] + c["dropped"] + c["surplus"]
    assert report.stats["calls"] >= c["generated"]  # a question and (mostly) its critique
    assert c["errors"] == 0
    rep = json.loads((tmp_path / "out" / "gen.report.json").read_text())
    # The grammar fixes each reply's shape, not its length: the tiny model can still run
    # to max_tokens (rarely, with the bounds fitted to the budget), and that is the only
    # way a reply may be malformed here; never a reply of another shape.
    malformed = [d["reason"] for d in rep["dropped"] if d["dropped_by"] == ["malformed"]]
    assert all(CUT_OFF in why for why in malformed), malformed
    assert len(rep["dropped"]) == c["dropped"]
    if c["kept"]:
        qs = load_questions(tmp_path / "out" / "gen.jsonl")
        assert all(q.type in ("simple", "situational") and q.source for q in qs)
