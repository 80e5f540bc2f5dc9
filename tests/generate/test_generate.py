"""`harness generate` with a scripted model on a fake endpoint: sampling, spans, filters,
duplicates, the files, the exam, source metrics, and a round trip through `harness run`."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

import pytest

from harness.analysis.sources import breakdown, source_qrels
from harness.config import GenerateConfig, load_experiment
from harness.corpus import chunk_documents, load_questions
from harness.errors import ConfigError, HarnessError
from harness.generate import (
    Generator,
    GenStats,
    ReplyCache,
    estimate_generation,
    exam_rates,
    generate_questions,
    read_exam,
    sample_passages,
)
from harness.generate.critique import (
    Critique,
    failed_filters,
    mentions_source,
    parse_draft,
    search_terms,
)
from harness.generate.dedup import near_duplicates
from harness.generate.pipeline import NEAREST, corpus_bm25, plan
from harness.generate.sampler import corpus_windows, topic_label
from harness.llm.client import ChatClient, Reply
from harness.metrics.source import source_hit, source_metrics, source_mrr
from harness.pipeline.prepare import load_corpus
from harness.testing import Act, FakeOpenAI
from harness.types import Chunk, Cost, CriterionVerdict, Document, SourceSpan, Verdict, span_digest

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
]


def _doc_text(name: str, paragraphs: int, marker: str = "") -> str:
    rng = random.Random(name)
    lines = [f"# {name.title()}", ""]
    for p in range(paragraphs):
        lines.append(f"## Part {p + 1}")
        body = " ".join(rng.choice(WORDS) for _ in range(40))
        lines.append(f"{marker} {name}-fact-{p} is {body}.".strip())
        lines.append("")
    return "\n".join(lines)


def write_corpus(root: Path, docs: dict[str, str]) -> Path:
    folder = root / "corpus"
    folder.mkdir(parents=True)
    for name, text in docs.items():
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
    exp = root / "exp.toml"
    exp.write_text(
        '[corpus]\nsources = ["corpus"]\n[questions]\nfile = "questions.jsonl"\n'
        "[chunking]\nchunk_size = 300\nchunk_overlap = 50\n[retrieval]\nk = 3\n"
        # the one-step style without the overlap and closed-book filters: what these
        # tests' scripted model answers (the query style is tested in test_query_style.py)
        '[generate]\npassage_chars = 200\nstyle = "question"\nclosed_book = false\n'
        "max_overlap = 1.0\n",
        encoding="utf-8",
    )
    return exp


def fake_embed(texts):
    """Deterministic unit-ish vectors from the text's sha256: equal texts are equal,
    different texts nearly orthogonal."""
    out = []
    for t in texts:
        digest = hashlib.sha256(t.lower().strip().encode()).digest()
        out.append([b / 255 - 0.5 for b in digest])
    return out


_MARK = re.compile(r"MARK-([A-Z]+)")
_FACT = re.compile(r"([a-z]+-fact-\d+)")
QUOTE_ASK = "Copy the one sentence from the passages"
"""How the unanswerable check's quote prompt is told from the others."""


def scripted_model(n: int, prompt: str) -> Act:
    """A model whose answers the corpus's markers decide: MARK-GARBAGE answers no JSON,
    MARK-PASSAGE writes "according to the passage", MARK-UNGROUNDED and MARK-USELESS get
    low critique scores, MARK-DUP writes the same question whatever the passage."""
    if "Rate the question" in prompt:
        q = prompt.split("Question:", 1)[1].split("\n", 1)[0]
        g = 2 if "MARK-UNGROUNDED" in q else 5
        u = 1 if "MARK-USELESS" in q else 4
        if "not answered" in q:
            g = 1  # an unanswerable question, as it should be
        body = {
            "groundedness_why": "clear",
            "groundedness": g,
            "usefulness_why": "fine",
            "usefulness": u,
            "standalone_why": "ok",
            "standalone": 5,
        }
        return Act(text=json.dumps(body))
    if "does any of them answer it" in prompt:  # the unanswerable check: on topic, unanswered
        return Act(text='{"on_topic": "yes", "answered": "no"}')
    if QUOTE_ASK in prompt:  # and no sentence to copy as its answer
        return Act(text="NONE")
    passage = prompt.split("<<<\n", 1)[1].split("\n>>>", 1)[0]
    mark = _MARK.search(passage)
    fact = _FACT.search(passage)
    name = fact.group(1) if fact else passage.strip()[:20]
    kind = mark.group(1) if mark else ""
    if kind == "GARBAGE":
        return Act(text="I cannot do that")
    if kind == "DUP":
        return Act(text='{"question": "What is the duplicate fact?", "answer": "dup"}')
    if kind == "PASSAGE":
        q = f"According to the passage, what is {name}?"
    elif "does NOT answer" in prompt:
        q = f"Which thing about {name} is not answered?"
    else:
        q = f"What is {name}? MARK-{kind}" if kind else f"What is {name}?"
    para = ', "paraphrase": "Tell me ' + name + '"' if '"paraphrase"' in prompt else ""
    return Act(text=f'{{"question": "{q}"{para}, "answer": "{name} is a word list"}}')


def make_generator(fake: FakeOpenAI, cache_dir: Path, seed: int = 0) -> Generator:
    client = ChatClient(base_url=fake.base_url, model="fake", api_key="", logprobs=False)
    cache_dir.mkdir(parents=True, exist_ok=True)
    return Generator(
        client,
        "fake",
        ReplyCache(cache_dir / "generations.sqlite"),
        seed=seed,
        stats=GenStats(),
    )


MARKED = {
    "plain-one": _doc_text("plain-one", 6),
    "plain-two": _doc_text("plain-two", 6),
    "garbage": _doc_text("garbage", 1, "MARK-GARBAGE"),
    "passage": _doc_text("passage", 1, "MARK-PASSAGE"),
    "ungrounded": _doc_text("ungrounded", 1, "MARK-UNGROUNDED"),
    "useless": _doc_text("useless", 1, "MARK-USELESS"),
    "dup-a": _doc_text("dup-a", 1, "MARK-DUP"),
    "dup-b": _doc_text("dup-b", 1, "MARK-DUP"),
}


# ----------------------------------------------------------------------- sampling


def _docs(lengths: dict[str, int]) -> list[Document]:
    return [
        Document(doc_id=name, text=_doc_text(name, n), source=name, title=name)
        for name, n in lengths.items()
    ]


def test_sampler_spreads_over_documents_and_positions():
    docs = _docs({"a": 30, "b": 10, "c": 3, "d": 1, "e": 20})
    passages = sample_passages(docs, 25, seed=3, passage_chars=200)
    per_doc = {d.doc_id: [p for p in passages if p.span.doc_id == d.doc_id] for d in docs}
    # every document, the first five passages already one per document
    assert all(per_doc[d.doc_id] for d in docs)
    assert {p.span.doc_id for p in passages[:5]} == {"a", "b", "c", "d", "e"}
    # longer documents get more, but not in proportion to length (sqrt)
    assert len(per_doc["a"]) > len(per_doc["b"]) > len(per_doc["d"])
    # positions spread over the longest document: a passage in each third
    n = len(docs[0].text)
    thirds = {min(2, 3 * p.span.start // n) for p in per_doc["a"]}
    assert thirds == {0, 1, 2}
    # spans are the passage text, and the same seed gives the same passages
    for p in passages:
        doc = next(d for d in docs if d.doc_id == p.span.doc_id)
        assert doc.text[p.span.start : p.span.end] == p.text
        assert 0 < p.span.end - p.span.start <= 200
    assert sample_passages(docs, 25, seed=3, passage_chars=200) == passages
    assert sample_passages(docs, 25, seed=4, passage_chars=200) != passages


def _one_line(chars: int, seed: int = 1, period: bool = True) -> str:
    """A document of `chars` characters without a line break: sentences of 5-15 words
    (or, without `period`, words only)."""
    rng = random.Random(seed)
    sentences: list[str] = []
    while sum(len(s) + 1 for s in sentences) < chars:
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 15)))
        sentences.append(words.capitalize() + "." if period else words)
    return " ".join(sentences)[:chars]


def test_a_long_line_is_sampled_over_its_length_from_sentence_starts():
    """A document without line breaks (or a paragraph on one line) is sampled over its
    whole length, each passage from a sentence start, not all from the line's start."""
    text = _one_line(10_000)
    doc = Document(doc_id="d", text=text, source="d", title="d")
    passages = sample_passages([doc], 30, seed=0, passage_chars=700)
    spans = {p.span for p in passages}
    assert len(spans) >= 25
    assert max(p.span.start for p in passages) > 8_000
    for p in passages:
        assert text[p.span.start : p.span.end] == p.text  # offsets are labels
        assert p.span.start == 0 or text[p.span.start - 2 : p.span.start] == ". "
    assert sample_passages([doc], 30, seed=0, passage_chars=700) == passages
    # no sentence end near the point: a word start, never mid-word
    words = _one_line(10_000, period=False)
    wdoc = Document(doc_id="w", text=words, source="w", title="w")
    wpassages = sample_passages([wdoc], 30, seed=0, passage_chars=700)
    assert len({p.span for p in wpassages}) >= 25
    for p in wpassages:
        assert p.span.start == 0 or words[p.span.start - 1] == " "
        assert words[p.span.start : p.span.end] == p.text


@pytest.mark.parametrize("seed", range(6))
def test_search_windows_hold_every_short_sentence_of_every_document(seed):
    """The unanswerable check searches the whole corpus, cut by `corpus_windows`: every
    sentence up to half a passage long is whole in some window of its document, whatever
    its place (before: passages snapped to the nearest sentence start could skip one
    that straddled a step, as an 83-character sentence at characters 151-234 with
    passages of 200), and every window's offset is a label."""
    rng = random.Random(seed)

    def sentences(n: int) -> list[str]:
        return [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 22))).capitalize() + "."
            for _ in range(n)
        ]

    docs = [
        Document(doc_id="one-line", text=" ".join(sentences(60)), source="a", title="a"),
        Document(doc_id="lines", text="\n".join(sentences(40)), source="b", title="b"),
        Document(doc_id="short", text="Only this.", source="c", title="c"),
        Document(doc_id="blank", text="  \n ", source="d", title="d"),
    ]
    windows = corpus_windows(docs, 200)
    assert len({w.chunk_id for w in windows}) == len(windows)
    assert {w.doc_id for w in windows} == {"one-line", "lines", "short"}
    by_id = {d.doc_id: d.text for d in docs}
    for w in windows:
        assert by_id[w.doc_id][w.start_char : w.start_char + len(w.text)] == w.text
    for doc in docs:
        for sentence in re.findall(r"[^.\n ][^.\n]*\.", doc.text):
            if len(sentence) <= 100:
                assert any(sentence in w.text for w in windows if w.doc_id == doc.doc_id)


def test_the_unanswerable_check_reads_the_whole_corpus_not_only_the_sampled_passages():
    """A question whose answer lies in a passage no candidate sampled finds it (before:
    BM25 over the sampled passages only, so it passed as unanswerable)."""
    docs = _docs({f"d{i}": 3 for i in range(10)})
    docs.append(
        Document(
            doc_id="hours",
            text="# Hours\n\nThe museum opens on public holidays from ten to four.\n",
            source="hours",
            title="hours",
        )
    )
    sampled = {p.span.doc_id for p in sample_passages(docs, 3, seed=0, passage_chars=200)}
    assert "hours" not in sampled
    nearest = corpus_bm25(docs, 200)
    assert any("public holidays" in t for t in nearest("museum public holidays opening"))
    assert len(nearest("museum")) == NEAREST


_SETUP = (
    "# Setup guide\n\n## Install\n\nRun the installer.\n\n```toml\n"
    "# the NAME of the variable\nkey = 1\n```\n\nThen restart the machine.\n"
)
_PAY = "# Payroll\n\n## Pay\n\nMonthly.\n\n## C#\n\nx"
_RST = "Install\n=======\n\nIntro.\n\nUpgrades\n--------\n\nRun the upgrade.\n"


def test_topic_is_title_and_heading():
    docs = _docs({"benefits": 3})
    p = sample_passages(docs, 1, seed=0, passage_chars=150)[0]
    assert p.topic.startswith("benefits / Part ")


@pytest.mark.parametrize(
    ("text", "title", "at", "topic"),
    [
        (_SETUP, "Setup guide", "Then restart", "Setup guide / Install"),
        (_SETUP, "Setup guide", "Run the", "Setup guide / Install"),
        (_SETUP, "Setup guide", "## Install", "Setup guide / Install"),
        (_SETUP, "Setup guide", "etup guide", "Setup guide"),
        # a saved page's title holds its first heading: the heading adds nothing
        (_SETUP, "Setup guide - site", "etup guide", "Setup guide - site"),
        (_SETUP, "Setup guide - site", "Then", "Setup guide - site / Install"),
        # a word of the title is not the heading; a heading may end in # (C#)
        (_PAY, "Payroll handbook", "Monthly", "Payroll handbook / Pay"),
        (_PAY, "Payroll handbook", "x", "Payroll handbook / C#"),
        (_RST, "Install", "Run", "Install / Upgrades"),
    ],
)
def test_topic_is_the_title_and_the_last_heading_outside_code(text, title, at, topic):
    doc = Document(doc_id="d", text=text, source="d", title=title)
    assert topic_label(doc, text.index(at)) == topic


@pytest.mark.parametrize("size,overlap", [(50, 0), (120, 30), (300, 0), (300, 299), (5000, 100)])
def test_spans_map_to_chunks_under_any_chunk_size(size, overlap):
    docs = _docs({"a": 12, "b": 4})
    passages = sample_passages(docs, 12, seed=1, passage_chars=250)
    chunks = chunk_documents(docs, chunk_size=size, chunk_overlap=overlap)
    for p in passages:
        hits = [c for c in chunks if source_metrics([c], [p.span], [1])["source_hit@1"] == 1.0]
        assert hits, (size, overlap, p.span)
        # the overlapping chunks cover the whole span (no character of it is lost)
        covered = set()
        for c in hits:
            covered |= set(range(c.start_char, c.start_char + len(c.text)))
        text = next(d.text for d in docs if d.doc_id == p.span.doc_id)
        missing = [
            i for i in range(p.span.start, p.span.end) if i not in covered and not text[i].isspace()
        ]
        assert not missing


# ----------------------------------------------------------------------- source metrics


def test_source_metrics_by_hand():
    span = SourceSpan("d", 100, 200)
    chunks = [
        Chunk("x#0", "x", "a" * 300, 0),  # other document
        Chunk("d#0", "d", "a" * 100, 0),  # ends exactly where the span starts: no overlap
        Chunk("d#150", "d", "a" * 100, 150),  # overlaps
        Chunk("d#190", "d", "a" * 100, 190),  # overlaps
    ]
    m = source_metrics(chunks, [span], [1, 2, 3, 4])
    assert m == {
        "source_hit@1": 0.0,
        "source_mrr@1": 0.0,
        "source_hit@2": 0.0,
        "source_mrr@2": 0.0,
        "source_hit@3": 1.0,
        "source_mrr@3": pytest.approx(1 / 3),
        "source_hit@4": 1.0,
        "source_mrr@4": pytest.approx(1 / 3),
    }
    assert source_metrics(chunks, [], [1]) == {}  # no source: no value, not 0
    assert source_hit([], 3) == 0.0 and source_mrr([False, True], 5) == 0.5
    with pytest.raises(ValueError):
        source_mrr([True], 0)


# ----------------------------------------------------------------------- critique pieces


def test_standalone_violations_are_recognised():
    for q in (
        "According to the passage, when is the deadline?",
        "What does the text say about pensions?",
        "In this excerpt, who approves expenses?",
        "Based on the context, how many days?",
    ):
        assert mentions_source(q), q
    for q in ("How many days of leave do I get?", "Who approves a text message campaign?"):
        assert not mentions_source(q), q


def test_parse_draft_limits():
    assert isinstance(parse_draft("no json here"), str)
    assert isinstance(parse_draft('{"question": "Q?", "answer": "' + "x" * 300 + '"}'), str)
    d = parse_draft('Sure! ```json\n{"question": " What  is X? ", "answer": "Y"}\n```')
    assert not isinstance(d, str) and d.question == "What is X?" and d.answer == "Y"


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        # the local model's kept handbook queries that began with a command
        ("search sensor release process", "sensor release process"),
        ("search for password manager instructions", "password manager instructions"),
        ("find the contact info for team lead", "contact info for team lead"),
        (
            "find document about working from home or booking hotels",
            "working from home or booking hotels",
        ),
        ("Search for: vpn setup", "vpn setup"),
        ("look up the holiday calendar 2026", "holiday calendar 2026"),
        # a user's own words, left as they are
        ("search results retention", "search results retention"),
        ("search engine settings for staff", "search engine settings for staff"),
        ("find out when the office closes", "find out when the office closes"),
        ("how to find my payslip", "how to find my payslip"),
        ("findings on remote work", "findings on remote work"),
        ("find it", "find it"),  # too little would be left
        ("search Legionellosis", "Legionellosis"),  # one content word is a query
        ("search covid-19", "covid-19"),
        ("search now", "search now"),
        ("find something", "find something"),
    ],
)
def test_a_command_to_the_search_box_is_dropped_from_a_draft(query, terms):
    assert search_terms(query) == terms
    d = parse_draft(json.dumps({"question": query, "paraphrase": query, "answer": "A"}))
    assert not isinstance(d, str) and d.question == terms and d.paraphrase == terms


def test_unanswerable_groundedness_is_inverted():
    crit = Critique(
        scores={"groundedness": 1, "usefulness": 4, "standalone": 5},
        reasons={"groundedness": "", "usefulness": "", "standalone": ""},
    )
    assert failed_filters("unanswerable", crit, 4) == []
    assert failed_filters("simple", crit, 4) == ["groundedness"]


def test_near_duplicates_by_cosine():
    vecs = {"a": [1.0, 0.0], "a2": [0.99, 0.05], "b": [0.0, 1.0], "A ": [1.0, 0.0]}
    twins = near_duplicates(["a", "b", "a2", "A "], lambda ts: [vecs[t] for t in ts], 0.9)
    assert twins == [None, None, 0, 0]
    assert near_duplicates(["a", "a2"], lambda ts: [vecs[t] for t in ts], 0.9999) == [None, None]


# ----------------------------------------------------------------------- end to end


def _generate(tmp_path: Path, fake: FakeOpenAI, n: int, **kw):
    exp = load_experiment(tmp_path / "exp.toml", kw.pop("overrides", []))
    gen = make_generator(fake, tmp_path / "cache", seed=kw.get("seed") or 0)
    try:
        return generate_questions(
            exp,
            out=tmp_path / "q" / "generated.jsonl",
            n=n,
            cache_dir=tmp_path / "cache",
            generator=gen,
            embed=fake_embed,
            **kw,
        )
    finally:
        gen.cache.close()


def test_each_filter_drops_what_it_should(tmp_path):
    write_corpus(tmp_path, MARKED)
    with FakeOpenAI(scripted_model) as fake:
        report = _generate(tmp_path, fake, 14, types=("simple",))
    c = report.counts
    assert c["malformed"] >= 1 and c["standalone"] >= 1
    assert c["groundedness"] >= 1 and c["usefulness"] >= 1 and c["duplicates"] >= 1
    assert c["generated"] == c["kept"] + c["dropped"] + c["surplus"]
    kept = [json.loads(line) for line in (tmp_path / "q" / "generated.jsonl").open()]
    assert len(kept) == c["kept"] > 0
    for q in kept:
        assert "MARK" not in q["text"] and "passage" not in q["text"].lower()
        assert set(q) >= {"id", "text", "answer", "type", "topic", "source", "scores"}
        assert q["type"] == "simple" and len(q["source"]) == 1
        assert all(v >= 4 for v in q["scores"].values())
    texts = [q["text"] for q in kept]
    assert texts.count("What is the duplicate fact?") == 1
    # every dropped question is in the report, with its scores and reasons
    rep = json.loads((tmp_path / "q" / "generated.report.json").read_text())
    assert rep["counts"] == c and len(rep["dropped"]) == c["dropped"]
    by = {tuple(d["dropped_by"]): d for d in rep["dropped"]}
    assert by[("groundedness",)]["scores"]["groundedness"] == 2
    assert "MARK-UNGROUNDED" in by[("groundedness",)]["text"]
    assert by[("usefulness",)]["reasons"]["usefulness"] == "fine"
    assert "passage" in by[("standalone",)]["reason"]
    assert by[("duplicates",)]["duplicate_of"].startswith("gen-")
    assert "not a JSON object" in by[("malformed",)]["reason"]


def test_a_dead_endpoint_stops_the_run_and_keeps_the_questions_file(tmp_path):
    """Every call fails: after MAX_CONSECUTIVE_FAILURES in a row the run stops with one
    line, paying for no more calls, and the questions file of an earlier run stays."""
    from harness.generate.llm import MAX_CONSECUTIVE_FAILURES

    write_corpus(tmp_path, {k: v for k, v in MARKED.items() if k.startswith("plain")})
    out = tmp_path / "q" / "generated.jsonl"
    out.parent.mkdir()
    out.write_text('{"id": "gen-0001", "text": "an earlier question"}\n', encoding="utf-8")
    exp = load_experiment(tmp_path / "exp.toml")
    with FakeOpenAI(lambda n, prompt: Act(kind="500")) as fake:
        client = ChatClient(
            base_url=fake.base_url, model="fake", api_key="", logprobs=False, max_retries=0
        )
        gen = Generator(client, "fake", None, seed=0, stats=GenStats())
        with pytest.raises(HarnessError) as err:
            generate_questions(
                exp, out=out, n=10, cache_dir=tmp_path / "cache", generator=gen, embed=fake_embed
            )
        requests = fake.requests
    message = str(err.value)
    assert "\n" not in message and f"failed {MAX_CONSECUTIVE_FAILURES} calls in a row" in message
    assert "500" in message and "left as it was" in message
    # 30 candidates planned; the calls in flight when it stopped may finish, no more
    assert MAX_CONSECUTIVE_FAILURES <= requests < MAX_CONSECUTIVE_FAILURES + 4 + 2
    assert out.read_text(encoding="utf-8") == '{"id": "gen-0001", "text": "an earlier question"}\n'
    assert not (tmp_path / "q" / "generated.report.json").exists()


def test_cli_on_a_dead_endpoint_exits_non_zero_with_one_line(tmp_path, capsys, monkeypatch):
    from harness.cli.app import main

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    exp = write_corpus(tmp_path, {k: v for k, v in MARKED.items() if k.startswith("plain")})
    out = tmp_path / "q" / "generated.jsonl"
    with FakeOpenAI(lambda n, prompt: Act(kind="500")) as fake:
        code = main(
            [
                "generate",
                str(exp),
                "--n",
                "3",
                "--out",
                str(out),
                "--cache-dir",
                str(tmp_path / "cache"),
                "--set",
                f'generate.base_url="{fake.base_url}"',
                "--set",
                'generate.model="fake"',
                "--set",
                "judge.max_retries=0",
            ]
        )
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("harness: error: generation stopped:") and "in a row" in err[-1]
    assert not out.exists()


def test_a_failure_now_and_then_is_dropped_as_an_error_and_the_run_goes_on(tmp_path):
    """Failures that do not come MAX_CONSECUTIVE_FAILURES in a row are per-candidate
    errors, as before: the answered calls between them reset the count."""
    write_corpus(tmp_path, {k: v for k, v in MARKED.items() if k.startswith("plain")})

    def flaky(n: int, prompt: str) -> Act:
        return Act(kind="500") if n % 3 == 0 else scripted_model(n, prompt)

    exp = load_experiment(tmp_path / "exp.toml", ["judge.concurrency=1"])
    with FakeOpenAI(flaky) as fake:
        client = ChatClient(
            base_url=fake.base_url, model="fake", api_key="", logprobs=False, max_retries=0
        )
        gen = Generator(client, "fake", None, seed=0, stats=GenStats())
        report = generate_questions(
            exp,
            out=tmp_path / "q" / "generated.jsonl",
            n=4,
            types=("simple",),
            cache_dir=tmp_path / "cache",
            generator=gen,
            embed=fake_embed,
        )
    assert report.counts["errors"] >= 1 and report.counts["kept"] >= 1


def test_rerun_with_the_same_seed_pays_nothing(tmp_path):
    write_corpus(tmp_path, MARKED)
    with FakeOpenAI(scripted_model) as fake:
        first = _generate(tmp_path, fake, 6, seed=5)
        paid = fake.requests
        est = estimate_generation(
            load_experiment(tmp_path / "exp.toml"),
            n=6,
            seed=5,
            cache_dir=tmp_path / "cache",
            generator=make_generator(fake, tmp_path / "cache", seed=5),
        )
        second = _generate(tmp_path, fake, 6, seed=5)
        assert fake.requests == paid
    assert second.kept == first.kept and second.stats["calls"] == 0
    assert second.stats["cache_hits"] > 0
    assert est["least"]["calls"] == 0


def test_asking_for_more_questions_pays_only_for_the_new_candidates(tmp_path):
    """The i-th candidate depends on the seed and i, not on --n: a rerun with a larger n
    asks the earlier candidates' prompts again, read from the cache."""
    write_corpus(tmp_path, MARKED)
    with FakeOpenAI(scripted_model) as fake:
        first = _generate(tmp_path, fake, 4, seed=5)
        paid = fake.requests
        more = _generate(tmp_path, fake, 8, seed=5)
        assert more.stats["calls"] == fake.requests - paid
    assert first.stats["calls"] == paid > 0
    assert more.stats["cache_hits"] >= paid  # every earlier call asked again, from the cache


def test_sampled_passages_and_candidates_do_not_move_when_more_are_asked():
    docs = _docs({"a": 30, "b": 10, "c": 3})
    few = sample_passages(docs, 7, seed=2, passage_chars=200)
    assert sample_passages(docs, 20, seed=2, passage_chars=200)[:7] == few
    settings = GenerateConfig(seed=2, passage_chars=200)
    five = plan(docs, settings, 5)
    assert plan(docs, settings, 12)[: len(five)] == five
    # a document's first c passages spread over it, whatever the count
    n = len(docs[0].text)
    for c in (2, 4, 8):
        starts = sorted(p.span.start for p in sample_passages(docs[:1], c, seed=2))
        assert starts[-1] - starts[0] > n // 4, (c, starts)


def test_dry_run_estimates_calls_and_tokens(tmp_path):
    write_corpus(tmp_path, MARKED)
    exp = load_experiment(tmp_path / "exp.toml")
    with FakeOpenAI(scripted_model) as fake:
        est = estimate_generation(
            exp, n=10, cache_dir=tmp_path / "cache", generator=make_generator(fake, tmp_path / "c2")
        )
        assert fake.requests == 0
    # two calls a candidate, and two more (the corpus check, 40 tokens, and the quote)
    # for each unanswerable one (#24): every 6th candidate, as types are taken in turn;
    # at most n x oversample (3) of them, and past the first round's 10 any of them may
    # be a spare one taken by the unanswerable type when it is short
    assert est["least"]["candidates"] == 10 and est["least"]["calls"] == 20 + 2
    assert est["most"]["candidates"] == 30 and est["most"]["calls"] == 60 + 2 * (1 + 20)
    assert est["least"]["prompt_tokens"] > 0
    quote = min(512, (exp.generate.passage_chars + 2 * 40) // 3 + 16)  # the widest window
    assert est["least"]["completion_tokens_max"] == 10 * (160 + 150) + 40 + quote


def test_types_paraphrases_exam_and_round_trip_through_run(tmp_path, cache_dir):
    from harness.pipeline import run_experiment
    from harness.testing import ScriptedJudge

    docs = {k: v for k, v in MARKED.items() if k.startswith("plain")}
    docs["third"] = _doc_text("third", 6)
    exp_path = write_corpus(tmp_path, docs)
    prompts_seen: list[str] = []

    def recording_model(n: int, prompt: str) -> Act:
        prompts_seen.append(prompt)
        return scripted_model(n, prompt)

    with FakeOpenAI(recording_model) as fake:
        report = _generate(
            tmp_path,
            fake,
            6,
            types=("simple", "multi-passage", "unanswerable"),
            overrides=["generate.phrasings=2"],
        )
    out = tmp_path / "q" / "generated.jsonl"
    kept = [json.loads(line) for line in out.open()]
    assert {q["type"] for q in kept} == {"simple", "multi-passage", "unanswerable"}
    for q in kept:
        n_src = {"simple": 1, "multi-passage": 2, "unanswerable": 0}[q["type"]]
        assert len(q["source"]) == n_src
        # set by harness, never asked of the model (it copied the phrase into questions)
        assert (q["answer"] == "not in the documents") == (q["type"] == "unanswerable")
    assert not any("not in the documents" in p for p in prompts_seen)
    paras = [json.loads(line) for line in (tmp_path / "q" / "generated.paraphrases.jsonl").open()]
    assert len(paras) == len(kept) and all(p["paraphrase_of"] for p in paras)
    # the exam: a source and an unrelated passage for each simple question
    items = read_exam(tmp_path / "q" / "generated.exam.jsonl")
    simple = [q for q in kept if q["type"] == "simple"]
    assert len(items) == 2 * len(simple) == report.exam["items"]
    assert all(i.span.doc_id != s.span.doc_id for i, s in zip(items[1::2], items[::2], strict=True))
    qrels = (tmp_path / "q" / "generated.exam.qrels.tsv").read_text().splitlines()
    assert len(qrels) == 1 + len(items) and qrels[1].endswith("\t2")

    # the file reads as a questions file, and a run keeps its fields and reports sources
    questions = load_questions(out)
    assert questions[0].source and questions[0].extra["scores"]
    # each span carries the fingerprint of the text it was written from
    texts = {d.doc_id: d.text for d in load_corpus(load_experiment(exp_path))}
    assert all(
        s.digest == span_digest(texts[s.doc_id][s.start : s.end])
        for q in questions
        for s in q.source
    )
    script = tmp_path / "script.jsonl"
    script.write_text(
        "".join(
            json.dumps({"text": q["text"], "topic": ["fact"], "answer": q["answer"][:8]}) + "\n"
            for q in kept
        )
    )
    exp_path.write_text(exp_path.read_text().replace("questions.jsonl", "q/generated.jsonl"))
    run = run_experiment(
        load_experiment(exp_path),
        results_dir=tmp_path / "results",
        cache_dir=cache_dir,
        judge=ScriptedJudge(script),
    )
    assert run.header.status == "done"
    logged = {q.question.question_id: q.question for q in run.questions}
    for q in kept:
        assert logged[q["id"]].type == q["type"] and logged[q["id"]].topic == q["topic"]
        assert logged[q["id"]].extra["scores"] == q["scores"]
    assert "source_hit@3" in run.header.metrics and "hit_rate@3" in run.header.metrics
    with_source = [q for q in run.questions if q.question.source]
    assert all("source_mrr@3" in q.metrics for q in with_source)
    assert all("source_mrr@3" not in q.metrics for q in run.questions if not q.question.source)
    rows = breakdown(run.questions, 3, "type")
    assert [r["type"] for r in rows] == ["multi-passage", "simple", "unanswerable"]
    assert rows[2]["source_hit"] is None
    labels = source_qrels(run)
    assert set(labels) == {q.question.question_id for q in with_source}

    # a sweep reads the same file and keeps source metrics beside the judge's in each trial
    from harness.log import read_run
    from harness.sweep import run_sweep

    exp_path.write_text(
        exp_path.read_text()
        + '\n[sweep]\ntrials = 2\nsampler = "grid"\npruner = "none"\nbaseline = false\n'
        + "[sweep.space]\nk = [2, 3]\n"
    )
    swept = run_sweep(
        load_experiment(exp_path),
        results_dir=tmp_path / "results",
        cache_dir=cache_dir,
        judge=ScriptedJudge(script),
    )
    assert [t.state for t in swept.trials] == ["complete", "complete"]
    for t in swept.trials:
        k = t.params["k"]
        metrics = read_run(Path(t.run_dir)).header.metrics
        assert f"source_hit@{k}" in metrics and f"mrr@{k}" in metrics


def test_exam_rates_count():
    from harness.generate.exam import ExamItem

    def v(rel, comp):
        return Verdict(
            relevant=CriterionVerdict("relevant", rel),
            complete=CriterionVerdict("complete", comp),
        )

    def item(kind):
        return ExamItem("i", "q", "Q?", "text", SourceSpan("d", 0, 4), kind)

    items = [item("source")] * 4 + [item("unrelated")] * 3
    verdicts = [
        v(True, True),
        v(True, True),
        v(True, False),
        v(False, False),
        v(False, False),
        v(True, False),
        Verdict(
            relevant=CriterionVerdict("relevant", None, error="boom"),
            complete=CriterionVerdict("complete", None, error="boom"),
        ),
    ]
    r = exam_rates(items, verdicts)
    assert r["source_items"] == 4 and r["unrelated_items"] == 2 and r["errors"] == 1
    assert r["relevant"] == {"tpr": 0.75, "tnr": 0.5}
    assert r["complete"] == {"tpr": 0.5, "tnr": 1.0}


# ----------------------------------------------------------------------- bad input


def test_bad_source_in_questions_file_is_one_line(tmp_path):
    p = tmp_path / "q.jsonl"
    p.write_text('{"id": "a", "text": "Q?", "source": [{"doc_id": "d", "start": 5, "end": 2}]}\n')
    with pytest.raises(ConfigError) as e:
        load_questions(p)
    assert str(e.value).count("\n") == 0 and "q.jsonl:1" in str(e.value)
    p.write_text('{"id": "a", "text": "Q?", "source": {"doc_id": "d", "start": 0, "end": 2, '
                 '"digest": "not hex"}}\n')  # fmt: skip
    with pytest.raises(ConfigError) as e:
        load_questions(p)
    assert e.value.field == "source.digest" and "q.jsonl:1" in str(e.value)


def test_bad_generate_settings_are_one_line(tmp_path):
    exp = write_corpus(tmp_path, {"a": _doc_text("a", 2)})
    for bad in ("generate.min_score=7", 'generate.types=["nope"]', "generate.phrasings=3"):
        with pytest.raises(ConfigError) as e:
            load_experiment(exp, [bad])
        assert "generate." in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(HarnessError):
        generate_questions(load_experiment(exp), out=tmp_path / "x.txt", n=1, embed=fake_embed)


def test_cli_bad_input_is_one_line(tmp_path, capsys):
    from harness.cli.app import main

    exp = write_corpus(tmp_path, {"a": _doc_text("a", 2)})
    with pytest.raises(SystemExit) as e:  # argparse's own error for a bad option value
        main(["generate", str(exp), "--types", "simple,bogus"])
    assert e.value.code == 2
    assert main(["generate", str(exp), "--set", "generate.dedup_threshold=2", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("harness: error:") and "generate.dedup_threshold" in err[-1]


def test_judge_exam_rates_and_calibration_input(tmp_path):
    from harness.analysis import read_qrels
    from harness.analysis.calibrate import labelled_hits
    from harness.analysis.sources import judge_exam
    from harness.config import CriteriaConfig
    from harness.log import read_run
    from harness.testing import ScriptedJudge

    write_corpus(tmp_path, {k: v for k, v in MARKED.items() if k.startswith("plain")})
    with FakeOpenAI(scripted_model) as fake:
        _generate(tmp_path, fake, 4, types=("simple",))
    exam = tmp_path / "q" / "generated.exam.jsonl"
    items = read_exam(exam)
    # a judge that knows each question's fact: yes on the source passage only
    script = tmp_path / "script.jsonl"
    script.write_text(
        "".join(
            json.dumps({"text": i.question, "topic": [i.question.split()[2][:-1]],
                        "answer": i.question.split()[2][:-1]}) + "\n"
            for i in items if i.kind == "source"
        )
    )  # fmt: skip
    res = judge_exam(
        exam, ScriptedJudge(script), CriteriaConfig(), out_dir=tmp_path / "run" / "exam"
    )
    assert res["source_items"] == res["unrelated_items"] == len(items) // 2
    assert res["relevant"] == {"tpr": 1.0, "tnr": 1.0}
    assert res["complete"] == {"tpr": 1.0, "tnr": 1.0}
    run = read_run(tmp_path / "run" / "exam")
    qrels = read_qrels(tmp_path / "q" / "generated.exam.qrels.tsv")
    grades = [g for _, g in labelled_hits([run], qrels)]
    assert sorted(grades) == [0] * (len(items) // 2) + [2] * (len(items) // 2)


class _Recording:
    """A chat client that answers "ok" and records the temperature each call asked for."""

    def __init__(self) -> None:
        self.temperatures: list[float | None] = []

    def chat(self, messages, *, max_tokens, grammar=None, temperature=None, logprobs=None):
        self.temperatures.append(temperature)
        return Reply(text="ok", tokens=[], cost=Cost(calls=1))


def test_checks_ask_at_temperature_zero_and_writing_calls_sample(tmp_path):
    """A filter's question (`check=True`) goes out at temperature 0 and is cached apart
    from the same prompt sampled at the generator's temperature (None: the client's);
    the request body carries the override, and only it."""
    client = _Recording()
    gen = Generator(client, "fake", ReplyCache(tmp_path / "g.sqlite"), seed=0, temperature=0.7)
    messages = [{"role": "user", "content": "Is it answered?"}]
    gen.ask(messages, max_tokens=4, check=True)
    gen.ask(messages, max_tokens=4)
    gen.ask(messages, max_tokens=4, check=True)  # from the cache
    assert client.temperatures == [0.0, None]
    assert gen.key(messages, 4, check=True) != gen.key(messages, 4)
    chat = ChatClient(base_url="http://127.0.0.1:9", model="m", api_key="", temperature=0.7)
    assert chat.request_body(messages, max_tokens=4)["temperature"] == 0.7
    assert chat.request_body(messages, max_tokens=4, temperature=0.0)["temperature"] == 0.0


def test_a_check_with_p_yes_is_asked_with_logprobs_and_cached_with_them(tmp_path):
    """`ask_p_yes` asks at temperature 0 for logprobs (the generator's client asks for
    none otherwise), returns P(yes) at each yes/no answer, and keeps both under a key of
    their own: asked again, nothing is paid; an endpoint without logprobs gives none."""
    import math

    top = (("yes", math.log(0.7)), ("no", math.log(0.3)))

    def model(n: int, prompt: str) -> Act:
        return Act(text='{"a": "yes"}', tokens=(('{"a": "', ()), ("yes", top), ('"}', ())))

    messages = [{"role": "user", "content": "Is it answered?"}]
    with FakeOpenAI(model) as fake:
        gen = make_generator(fake, tmp_path / "c")
        text, p = gen.ask_p_yes(messages, max_tokens=8)
        again = gen.ask_p_yes(messages, max_tokens=8)
        paid = fake.requests
        plain = gen.ask(messages, max_tokens=8, check=True)  # no logprobs: its own key
        gen.cache.close()
    assert text == plain == '{"a": "yes"}' and again == (text, p) and math.isclose(p[0], 0.7)
    assert paid == 1 and fake.requests == 2
    assert gen.key(messages, 8, check=True, p_yes=True) != gen.key(messages, 8, check=True)

    class Recording:
        def __init__(self) -> None:
            self.asked: list[dict] = []

        def chat(self, messages, **kw):
            self.asked.append(kw)
            return Reply(text="ok", tokens=[], cost=Cost(calls=1))

    client = Recording()
    bare = Generator(client, "fake", None, seed=0, temperature=0.7)
    assert bare.ask_p_yes(messages, max_tokens=8) == ("ok", [])
    assert client.asked[0]["temperature"] == 0.0 and client.asked[0]["logprobs"] is True


def test_a_request_asks_for_logprobs_when_told_unless_the_endpoint_refused_them():
    """`logprobs` of one request overrides the client's choice, but not an endpoint's
    refusal of them (which turns them off for every later request)."""
    messages = [{"role": "user", "content": "q"}]
    chat = ChatClient(base_url="http://127.0.0.1:9", model="m", api_key="", logprobs=False)
    assert "logprobs" not in chat.request_body(messages, max_tokens=4)
    assert chat.request_body(messages, max_tokens=4, logprobs=True)["logprobs"] is True
    body = chat.request_body(messages, max_tokens=4, logprobs=True)
    assert chat._drop_logprobs(Exception("logprobs are not supported"), body)
    assert "logprobs" not in chat.request_body(messages, max_tokens=4, logprobs=True)


def test_a_long_topic_is_cut_in_the_breakdown_table():
    from harness.report.text import GROUP_WIDTH, format_breakdown

    long = "Experiment file reference - mysite / " + "a very long heading " * 5
    rows = [
        {"topic": long, "questions": 2, "hit_rate": 0.5, "mrr": 0.5},
        {"topic": "Short", "questions": 1, "hit_rate": 1.0, "mrr": 1.0},
    ]
    for r in rows:
        r.update(source_hit=None, source_mrr=None)
    lines = format_breakdown(rows, "topic", 4).splitlines()
    assert lines[1].startswith(long[: GROUP_WIDTH - 1] + "…  ")
    assert lines[2].startswith("Short" + " " * (GROUP_WIDTH - 5) + "  ")


def test_the_exam_of_a_one_document_corpus_draws_its_unrelated_passage_from_afar():
    """A corpus of one document (a manual as one PDF) has no other document to draw the
    exam's unrelated passage from: it is the least similar passage of the same document
    at least a passage's length away from the source, never its neighbour."""
    from harness.generate.critique import Draft
    from harness.generate.pipeline import Candidate, _exam
    from harness.generate.sampler import Passage

    def passage(start: int, text: str) -> Passage:
        return Passage(SourceSpan("manual.pdf", start, start + 100), text, "Manual")

    source, near, far, farther = (
        passage(1000, "leave"),
        passage(1100, "leave too"),
        passage(1300, "printers"),
        passage(5000, "parking"),
    )
    kept = Candidate(0, "simple", (source,), Draft("How long is leave?", "27 days"))
    others = [Candidate(i, "simple", (p,)) for i, p in enumerate((near, far, farther), 1)]
    vectors = {"How long is leave?": [1.0, 0.0], "leave": [1.0, 0.0], "leave too": [0.0, 1.0]}
    vectors |= {"printers": [0.6, 0.8], "parking": [0.8, 0.6]}

    def embed(texts):
        return [vectors[t] for t in texts]

    items = _exam([kept], [kept, *others], embed)
    assert [(i.kind, i.passage) for i in items] == [("source", "leave"), ("unrelated", "printers")]
