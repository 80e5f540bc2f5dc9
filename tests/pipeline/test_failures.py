"""Why each failure failed (issue 15): a corpus built so that every label occurs, a
scripted judge whose answers follow the text, the real local embedder, FAISS and BM25."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness.cli import main
from harness.config import parse_experiment
from harness.log import read_run
from harness.pipeline import estimate_run, load_inputs, run_experiment
from harness.report import text
from harness.testing import ScriptedJudge
from harness.types import Failure, QuestionResult

DOCS = {
    # "missed": a near copy of the question outranks the chunk that answers it (k = 1)
    "choir-faq.md": "When does the choir rehearse? Everyone asks when the choir rehearses.",
    "choir.md": "Singers meet in the church hall every Tuesday at 7 pm.",
    # "split": at chunk_size 80 the answer crosses the boundary after "always"
    "shed.md": (
        "The tool shed stands behind the greenhouse near the gate. The shed key is "
        "always kept with the treasurer of the society, who lives next door."
    ),
    # answered in its own top chunk: no failure
    "swap.md": "The plant swap is held on 14 May in the village hall.",
}
QUESTIONS = [
    {
        "id": "choir",
        "text": "When does the choir rehearse?",
        "topic": ["choir", "singers"],
        "answer": "every Tuesday at 7 pm",
    },
    {
        "id": "key",
        "text": "Who keeps the key of the tool shed?",
        "topic": ["shed"],
        "answer": "always kept with the treasurer",
    },
    {
        "id": "parking",
        "text": "Where can visitors park their cars?",
        "topic": ["parking"],
        "answer": "no such answer",
    },
    {"id": "swap", "text": "When is the plant swap?", "topic": ["swap"], "answer": "14 May"},
]


@pytest.fixture
def setup(tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, body in DOCS.items():
        (docs / name).write_text(body + "\n", encoding="utf-8")
    qfile = tmp_path / "questions.jsonl"
    qfile.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    data = {
        "name": "failures",
        "corpus": {"sources": [str(docs)]},
        "questions": {"file": str(qfile)},
        "chunking": {"chunk_size": 80, "chunk_overlap": 0},
        "retrieval": {"k": 1},
        "judge": {"concurrency": 1},
    }
    return data, qfile, tmp_path


def _run(data, qfile, tmp_path, overrides=(), name="results"):
    config = parse_experiment(data, overrides=list(overrides))
    judge = ScriptedJudge(qfile)
    run = run_experiment(
        config, results_dir=tmp_path / name, cache_dir=tmp_path / "cache", judge=judge
    )
    return config, judge, run


def test_each_failure_is_labelled(setup, capsys):
    data, qfile, tmp_path = setup
    config, judge, run = _run(data, qfile, tmp_path)
    chunks = {c.chunk_id: c for c in load_inputs(config).chunks}
    # the corpus does what it was built for
    assert not any("always kept with the treasurer" in c.text for c in chunks.values())
    by_id = {q.question.question_id: q for q in run.questions}
    assert by_id["swap"].metrics["hit_rate@1"] == 1.0 and by_id["swap"].failure is None

    missed = by_id["choir"].failure
    assert by_id["choir"].metrics["hit_rate@1"] == 0.0
    assert missed is not None and missed.label == "missed"
    assert "every Tuesday at 7 pm" in chunks[missed.chunk_id].text
    assert missed.rank is not None and missed.rank >= 2  # ranked below k = 1
    assert f"ranks it {missed.rank}" in missed.reason

    split = by_id["key"].failure
    assert split is not None and split.label == "split"
    assert chunks[split.chunk_id].doc_id == next(
        c.doc_id for c in chunks.values() if "shed key" in c.text
    )
    assert "chunk_overlap" in split.reason

    gap = by_id["parking"].failure
    assert gap is not None and gap.label == "not-in-corpus" and gap.chunk_id is None

    h = run.header
    assert h.metrics["failures@1"] == 3
    assert h.metrics["failures_missed@1"] == 1
    assert h.metrics["failures_split@1"] == 1
    assert h.metrics["failures_not_in_corpus@1"] == 1
    # the pool is paid through the same judge: booked in the totals and apart
    pool_calls = h.stats["failure_pool_calls"]
    assert 0 < pool_calls < h.stats["judge_calls"] == len(judge.calls)
    assert h.stats["failure_pool_cache_hits"] >= 0

    # the log round-trips; a question without a failure writes no "failure" key
    for q in run.questions:
        d = q.to_dict()
        assert QuestionResult.from_dict(d) == q
        assert ("failure" in d) == (q.failure is not None)
    assert Failure.from_dict(missed.to_dict()) == missed

    # show --failures labels every failure
    assert main(["show", str(run.run_dir), "--failures"]) == 0
    out = capsys.readouterr().out
    assert f"failure: missed  rank {missed.rank}  {missed.chunk_id}" in out
    assert f"failure: split  {split.chunk_id}" in out
    assert "failure: not-in-corpus" in out
    assert (
        "failures at k=1: 1 missed, 1 split, 0 judge-missed, 0 multi-part, 1 not-in-corpus" in out
    )
    assert f"({pool_calls} of the judge calls went to their pools)" in out

    # a rerun pays nothing: the pool's verdicts are in the cache
    _, again_judge, again = _run(data, qfile, tmp_path, name="again")
    assert again_judge.calls == []
    assert [q.failure for q in again.questions] == [q.failure for q in run.questions]


def test_explain_off_labels_nothing_and_judges_only_the_top_k(setup):
    data, qfile, tmp_path = setup
    _, judge, run = _run(data, qfile, tmp_path, ["failures.explain=false"])
    assert all(q.failure is None for q in run.questions)
    assert run.header.metrics["failures@1"] == 3
    assert not any(k.startswith("failures_") for k in run.header.metrics)
    assert "failure_pool_calls" not in run.header.stats
    assert len(judge.calls) == run.header.stats["judge_calls"]
    assert len(judge.calls) <= 2 * len(QUESTIONS)  # one chunk per question


def test_the_dry_run_bounds_the_pool(setup):
    data, qfile, tmp_path = setup
    fake = ["judge.base_url=http://127.0.0.1:9/v1", "judge.model=fake"]  # never called
    est = estimate_run(parse_experiment(data, overrides=fake), cache_dir=tmp_path / "c1")
    assert est["failure_pool_pairs"] > 0
    assert est["failure_pool_calls_max"] >= est["failure_pool_open_pairs"] > 0
    assert "every question could fail" in text.format_run_estimate(est)
    # what a run pays for the pool stays within the bound
    _, _, run = _run(data, qfile, tmp_path)
    assert run.header.stats["failure_pool_calls"] <= est["failure_pool_calls_max"]
    off = estimate_run(
        parse_experiment(data, overrides=[*fake, "failures.explain=false"]),
        cache_dir=tmp_path / "c1",
    )
    assert "failure_pool_calls_max" not in off
    assert off["judge_calls_max"] == est["judge_calls_max"]


def _span(doc: str, text: str) -> dict:
    """The source span of `text` in DOCS[doc]."""
    start = DOCS[doc].index(text)
    return {"doc_id": doc, "start": start, "end": start + len(text)}


SHED_KEY = "The shed key is always kept with the treasurer"
SPANNED = [
    # outside the top 1 (the FAQ's near copy outranks it): missed, with its dense rank
    {**QUESTIONS[0], "source": [_span("choir.md", "every Tuesday at 7 pm")]},
    # across the chunk boundary after "always": no chunk holds it, so the pool is judged
    # (and finds the split)
    {**QUESTIONS[1], "source": [_span("shed.md", SHED_KEY)]},
    # the same span, and a judge that finds nothing anywhere: not-in-corpus, with a note
    {
        "id": "shed-who",
        "text": "Which member of the society holds the spare key?",
        "topic": ["spare"],
        "answer": "no such answer",
        "source": [_span("shed.md", SHED_KEY)],
    },
    # in the top chunk, which the judge does not call complete: judge-missed
    {
        "id": "swap-time",
        "text": "At what time does the plant swap start?",
        "topic": ["swap"],
        "answer": "at 10 am",
        "source": [_span("swap.md", "The plant swap is held on 14 May")],
    },
    QUESTIONS[2],  # no span: its pool is judged, as before
]


def test_a_failure_with_a_source_span_is_read_from_it_without_judging_a_pool(setup, capsys):
    """A question's one source span, held whole by a chunk, says where its answer is: the
    failure is labelled from it (judge-missed or missed) and judges no pool; a question
    without a span or with one no chunk holds is judged from its pool, as before, and the
    dry run's bound leaves out only the first kind."""
    data, _, tmp_path = setup
    qfile = tmp_path / "spanned.jsonl"
    qfile.write_text("".join(json.dumps(q) + "\n" for q in SPANNED), encoding="utf-8")
    data = {**data, "questions": {"file": str(qfile)}}
    config, judge, run = _run(data, qfile, tmp_path, name="spanned")
    chunks = {c.chunk_id: c for c in load_inputs(config).chunks}
    by_id = {q.question.question_id: q for q in run.questions}

    missed = by_id["choir"].failure
    assert missed is not None and missed.label == "missed"
    assert "every Tuesday at 7 pm" in chunks[missed.chunk_id].text
    assert missed.rank is not None and missed.rank >= 2
    assert f"dense retrieval ranks it {missed.rank}, outside the top 1" in missed.reason

    split = by_id["key"].failure  # from the pool: the relevant chunk joined with its neighbour
    assert split is not None and split.label == "split"
    assert chunks[split.chunk_id].doc_id == "shed.md" and "joined with its neighbour" in (
        split.reason
    )

    lost = by_id["shed-who"].failure
    assert lost is not None and lost.label == "not-in-corpus"
    start = DOCS["shed.md"].index(SHED_KEY)
    assert f"yet its source lies in the corpus (shed.md, characters {start}-" in lost.reason
    assert "so the judge more likely missed it" in lost.reason

    top = by_id["swap-time"]
    judged = top.failure
    assert judged is not None and judged.label == "judge-missed"
    assert judged.rank == 1 and judged.chunk_id == top.hits[0].chunk.chunk_id
    # the scripted judge calls it relevant (its topic) but not complete (no answer text)
    assert "and the judge did not call it complete: the retriever found" in judged.reason

    gap = by_id["parking"].failure
    assert gap is not None and gap.label == "not-in-corpus"

    # only the questions without a span held whole were asked about chunks beyond their top 1
    asked = {}
    for q, c, _ in judge.calls:
        asked.setdefault(q, set()).add(c)
    pooled = {"key", "shed-who", "parking"}
    for q in run.questions:
        extra = asked.get(q.question.text, set()) - {jh.chunk.text for jh in q.hits}
        assert bool(extra) == (q.question.question_id in pooled), q.question.question_id
    h = run.header
    assert h.metrics["failures@1"] == 5
    assert [h.metrics[f"failures_{n}@1"] for n in ("missed", "split", "judge_missed")] == [1, 1, 1]
    assert h.metrics["failures_not_in_corpus@1"] == 2

    assert main(["show", str(run.run_dir), "--failures"]) == 0
    out = capsys.readouterr().out
    assert f"failure: judge-missed  rank 1  {judged.chunk_id}" in out
    assert (
        "failures at k=1: 1 missed, 1 split, 1 judge-missed, 0 multi-part, 2 not-in-corpus" in out
    )

    # with probabilities the reason says how sure the judge was
    unsure = run_experiment(
        config, results_dir=tmp_path / "u", cache_dir=tmp_path / "uc", judge=Unsure(qfile)
    )
    q = next(q for q in unsure.questions if q.question.question_id == "swap-time")
    p = _p_of_no(q.hits[0].chunk.text)
    assert q.failure is not None and f"did not call it complete (P(complete) {p:.2f})" in (
        q.failure.reason
    )

    # the dry run's bound leaves out the pools of the questions a span explains: below the
    # bound of the same questions without their spans
    spanned, plain = _dry_runs(data, SPANNED, tmp_path, "c2")
    assert 0 < spanned["failure_pool_pairs"] < plain["failure_pool_pairs"]
    assert h.stats["failure_pool_calls"] <= spanned["failure_pool_calls_max"]


FAKE_JUDGE = ["judge.base_url=http://127.0.0.1:9/v1", "judge.model=fake"]
"""An endpoint the dry run names but never calls."""


def _dry_runs(data: dict, questions: list[dict], tmp_path: Path, name: str) -> tuple[dict, dict]:
    """The dry run's estimates of `data` with `questions` as they are, and without their
    source spans."""
    spanned = estimate_run(parse_experiment(data, overrides=FAKE_JUDGE), cache_dir=tmp_path / name)
    bare = tmp_path / f"{name}-bare.jsonl"
    bare.write_text(
        "".join(
            json.dumps({k: v for k, v in q.items() if k != "source"}) + "\n" for q in questions
        ),
        encoding="utf-8",
    )
    plain_data = {**data, "questions": {"file": str(bare)}}
    plain = estimate_run(
        parse_experiment(plain_data, overrides=FAKE_JUDGE), cache_dir=tmp_path / name
    )
    return spanned, plain


@pytest.mark.parametrize("field", ["pool_dense", "pool_bm25"])
def test_negative_pool_sizes_are_refused(setup, field):
    from harness.errors import ConfigError

    data, _, _ = setup
    with pytest.raises(ConfigError) as exc:
        parse_experiment(data, overrides=[f"failures.{field}=-1"])
    assert exc.value.field == f"failures.{field}"


def _p_of_no(chunk_text: str) -> float:
    """`Unsure`'s P(yes) for a no: under 0.5, differing from chunk to chunk by length."""
    return 0.05 + (len(chunk_text) % 40) / 100


class Unsure(ScriptedJudge):
    """The scripted judge with a P(yes): 0.9 for its yes, `_p_of_no` for its no."""

    def grade(self, question, chunk_text, criterion, criterion_text):
        v = super().grade(question, chunk_text, criterion, criterion_text)
        return replace(v, p_yes=0.9 if v.value else _p_of_no(chunk_text))


def test_not_in_corpus_names_the_chunk_the_judge_was_likeliest_to_call_relevant(setup):
    data, qfile, tmp_path = setup
    config = parse_experiment(data)
    judge = Unsure(qfile)
    run = run_experiment(config, results_dir=tmp_path / "r", cache_dir=tmp_path / "c", judge=judge)
    q = next(q for q in run.questions if q.question.question_id == "parking")
    assert q.failure is not None and q.failure.label == "not-in-corpus"
    # every chunk the question's top k and pool showed the judge, with its P(relevant)
    asked = {
        c: _p_of_no(c)
        for qt, c, crit in judge.calls
        if qt == q.question.text and crit == "relevant"
    }
    assert len(asked) > 1 and len(set(asked.values())) > 1
    best_text = max(asked, key=asked.__getitem__)
    best_id = next(c.chunk_id for c in load_inputs(config).chunks if c.text == best_text)
    assert q.failure.reason.endswith(
        "not the retriever, unless the judge missed it: the chunk it was likeliest to call "
        f"relevant is {best_id} (P(relevant) {asked[best_text]:.2f})"
    )
    # without probabilities (the scripted judge) the reason names no chunk
    _, _, plain = _run(data, qfile, tmp_path, name="plain")
    gap = next(q.failure for q in plain.questions if q.question.question_id == "parking")
    assert gap is not None and "likeliest" not in gap.reason


MULTI = [
    # both parts in the top 2 (the swap's chunk and the shed's first): multi-part
    {
        "id": "swap-shed",
        "text": "When is the plant swap, and where does the tool shed stand?",
        "topic": ["swap", "shed"],
        "answer": "no single chunk says both",
        "source": [
            _span("swap.md", "held on 14 May"),
            _span("shed.md", "The tool shed stands behind the greenhouse"),
        ],
    },
    # the FAQ's near copy takes a place of the top 2 and the choir's answer is left out
    {
        "id": "choir-swap",
        "text": "When does the choir rehearse? When is the plant swap?",
        "topic": ["choir", "swap"],
        "answer": "no single chunk says both",
        "source": [
            _span("choir.md", "every Tuesday at 7 pm"),
            _span("swap.md", "held on 14 May"),
        ],
    },
    # a part outside every chunk (a stale span): its pool is judged, as before
    {
        "id": "stale",
        "text": "Who keeps the key of the tool shed?",
        "topic": ["nothing"],
        "answer": "no such answer",
        "source": [_span("swap.md", "held on 14 May"), {"doc_id": "gone.md", "start": 0, "end": 9}],
    },
]


def test_a_multi_passage_failure_is_read_from_its_parts(setup, capsys):
    """A question whose answer needs several passages cannot have a complete chunk: with
    a chunk of every part in the top k it is `multi-part` (no pool judged), with a part
    the top k does not touch it is `missed` naming that part's chunk and dense rank."""
    data, _, tmp_path = setup
    qfile = tmp_path / "multi.jsonl"
    qfile.write_text("".join(json.dumps(q) + "\n" for q in MULTI), encoding="utf-8")
    data = {**data, "questions": {"file": str(qfile)}, "retrieval": {"k": 2}}
    config, judge, run = _run(data, qfile, tmp_path, name="multi")
    chunks = {c.chunk_id: c for c in load_inputs(config).chunks}
    by_id = {q.question.question_id: q for q in run.questions}

    both = by_id["swap-shed"]
    assert {chunks[jh.chunk.chunk_id].doc_id for jh in both.hits} == {"swap.md", "shed.md"}
    multi = both.failure
    assert multi is not None and multi.label == "multi-part"
    assert multi.rank is None and multi.chunk_id is None
    for jh in both.hits:
        assert f"in {jh.chunk.chunk_id} at rank {jh.hit.rank}" in multi.reason
    assert "its answer needs 2 passages and the top 2 holds a chunk of each" in multi.reason

    part = by_id["choir-swap"]
    assert "choir.md" not in {jh.chunk.doc_id for jh in part.hits}
    missed = part.failure
    assert missed is not None and missed.label == "missed"
    assert chunks[missed.chunk_id].doc_id == "choir.md"
    assert missed.rank is not None and missed.rank > 2
    start = DOCS["choir.md"].index("every Tuesday")
    assert f"part 1 (choir.md, characters {start}-" in missed.reason
    assert f"which dense retrieval ranks {missed.rank}, outside the top 2" in missed.reason

    stale = by_id["stale"].failure
    assert stale is not None and stale.label == "not-in-corpus"

    # only the stale question was asked about chunks beyond its top 2
    asked: dict[str, set[str]] = {}
    for q, c, _ in judge.calls:
        asked.setdefault(q, set()).add(c)
    for q in run.questions:
        extra = asked.get(q.question.text, set()) - {jh.chunk.text for jh in q.hits}
        assert bool(extra) == (q.question.question_id == "stale"), q.question.question_id

    h = run.header
    assert h.metrics["failures_multi_part@2"] == 1 and h.metrics["failures_missed@2"] == 1
    assert main(["show", str(run.run_dir), "--failures"]) == 0
    out = capsys.readouterr().out
    assert "failure: multi-part\n" in out
    assert (
        "failures at k=2: 1 missed, 0 split, 0 judge-missed, 1 multi-part, 1 not-in-corpus" in out
    )

    # the dry run bounds only the stale question's pool
    est, plain = _dry_runs(data, MULTI, tmp_path, "c3")
    assert 0 < h.stats["failure_pool_calls"] <= est["failure_pool_calls_max"]
    assert est["failure_pool_pairs"] < plain["failure_pool_pairs"]


def test_without_judging_pools_only_the_spans_label_failures(setup, capsys):
    """failures.judge_pool = false (a sweep's trials): a failure its source spans explain
    is labelled as before, the others are left unlabelled and counted as not explained,
    and no judge call goes to failures; the dry run bounds no pool."""
    data, _, tmp_path = setup
    qfile = tmp_path / "spanned.jsonl"
    qfile.write_text("".join(json.dumps(q) + "\n" for q in SPANNED), encoding="utf-8")
    data = {**data, "questions": {"file": str(qfile)}}
    spans_only = ["failures.judge_pool=false"]
    _, judge, run = _run(data, qfile, tmp_path, spans_only, name="spans-only")
    by_id = {q.question.question_id: q for q in run.questions}
    assert [by_id[i].failure.label for i in ("choir", "swap-time")] == ["missed", "judge-missed"]
    assert all(by_id[i].failure is None for i in ("key", "shed-who", "parking"))
    for q in run.questions:  # only the top 1 was judged
        asked = {c for qq, c, _ in judge.calls if qq == q.question.text}
        assert asked <= {jh.chunk.text for jh in q.hits}
    h = run.header
    assert h.metrics["failures@1"] == 5 and h.stats["failure_pool_calls"] == 0
    assert main(["show", str(run.run_dir), "--failures"]) == 0
    out = capsys.readouterr().out
    assert (
        "failures at k=1: 1 missed, 0 split, 1 judge-missed, 0 multi-part, 0 not-in-corpus, "
        "3 not explained (from their source spans; no pool judged: failures.judge_pool = false)"
    ) in out
    # the report's first screen counts them too
    assert main(["report", str(run.run_dir)]) == 0
    capsys.readouterr()
    page = (run.run_dir / "report.html").read_text(encoding="utf-8")
    assert "1 judge-missed, 0 multi-part, 0 not-in-corpus, 3 not explained</p>" in page
    est = estimate_run(
        parse_experiment(data, overrides=[*FAKE_JUDGE, *spans_only]), cache_dir=tmp_path / "c4"
    )
    assert "failure_pool_calls_max" not in est


def test_a_sweeps_trials_label_failures_from_their_spans_alone(setup):
    """A sweep's trials judge no failure pool, but a failure its source spans explain is
    labelled in the trial, for free."""
    from harness.sweep import run_sweep

    data, _, tmp_path = setup
    qfile = tmp_path / "spanned.jsonl"
    qfile.write_text("".join(json.dumps(q) + "\n" for q in SPANNED), encoding="utf-8")
    data = {
        **data,
        "questions": {"file": str(qfile)},
        "sweep": {"trials": 2, "seed": 3, "space": {"k": [1, 2]}},
    }
    config = parse_experiment(data)
    assert config.failures.explain and config.failures.judge_pool  # the user's settings
    judge = ScriptedJudge(qfile)
    log = run_sweep(config, results_dir=tmp_path / "sw", cache_dir=tmp_path / "swc", judge=judge)
    runs = [read_run(t.run_dir) for t in log.trials]
    assert runs and all(not r.header.config["failures"]["judge_pool"] for r in runs)
    for r in runs:
        assert r.header.stats["failure_pool_calls"] == 0
        labelled = {q.question.question_id: q.failure.label for q in r.questions if q.failure}
        assert labelled.get("swap-time") == "judge-missed"  # its span is in its top chunk
        assert "parking" not in labelled  # no span, no pool: not explained
