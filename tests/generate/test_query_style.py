"""The query style and the hygiene filters of `harness generate` (#24), with a scripted
model on a fake endpoint: questions written from a summary, overlap rewrite and
rejection, the closed-book drop, style examples in the prompt, stand-alone questions
only, every requested type (unanswerable included) kept, and the bias warning."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path

import pytest

from harness.config import load_experiment
from harness.errors import HarnessError
from harness.generate.critique import (
    clip_script_drift,
    dangling_reference,
    echoes_prompt,
    mentions_source,
    names_its_source,
    names_the_search,
    points_at_source,
    repeats_question,
    without_source_noun,
)
from harness.generate.pipeline import (
    closed_book_match,
    overlap_limit,
    read_style_examples,
)
from harness.metrics import kendall_tau, overlap_warning, regret, winner_warning, word_overlap
from harness.metrics.overlap import REAL_QUERY_OVERLAP, source_overlaps
from harness.testing import Act, FakeOpenAI
from harness.types import Document, Question, SourceSpan
from tests.generate.test_generate import QUOTE_ASK, _doc_text, _generate, make_generator

_FACT = re.compile(r"([a-z]+-fact-\d+)")
_MARK = re.compile(r"MARK-([A-Z]+)")

ALL_TYPES = ("simple", "paraphrased", "distracting", "situational", "multi-passage", "unanswerable")


def write_query_corpus(root: Path, docs: dict[str, str], extra: str = "") -> Path:
    folder = root / "corpus"
    folder.mkdir(parents=True)
    for name, text in docs.items():
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
    exp = root / "exp.toml"
    exp.write_text(
        '[corpus]\nsources = ["corpus"]\n[questions]\nfile = "questions.jsonl"\n'
        "[chunking]\nchunk_size = 300\nchunk_overlap = 50\n[retrieval]\nk = 3\n"
        f"[generate]\npassage_chars = 200\n{extra}",
        encoding="utf-8",
    )
    return exp


_UNANSWERABLE_ASK = 'In "missing", name it'
"""How the query style's unanswerable prompt is told from the others."""

SOURCE_ANSWER_ASK = "Answer the search query from this text"
"""How the query style's answer prompt is told from the others."""


class QueryModel:
    """A model for the query style whose answers the corpus's markers decide (the marker
    travels from the passage into the summary): MARK-MENU writes a question about "the
    menu", MARK-COPY copies the passage also when asked to rewrite, MARK-FIXABLE copies
    it first and then rewrites it in other words, MARK-KNOWN is answered closed-book.
    The critique passes everything: only the pipeline's own checks stand between a bad
    question and the file. Every prompt is recorded."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, n: int, prompt: str) -> Act:
        with self.lock:
            self.prompts.append(prompt)
        if "Rate the question" in prompt:
            body = {c: 5 for c in ("groundedness", "usefulness", "standalone")} | {
                f"{c}_why": "fine" for c in ("groundedness", "usefulness", "standalone")
            }
            return Act(text=json.dumps(body))
        if "does any of them answer it" in prompt:
            return Act(text='{"on_topic": "yes", "answered": "no"}')
        if QUOTE_ASK in prompt:
            return Act(text="NONE")
        if SOURCE_ANSWER_ASK in prompt:  # NONE for MARK-NOANSWER, no JSON for MARK-NOJSON
            passage = prompt.split("<<<\n", 1)[1].split("\n>>>", 1)[0]
            if "MARK-NOJSON" in passage:
                return Act(text="I do not know")
            answer = "NONE" if "MARK-NOANSWER" in passage else "secret word list"
            if "MARK-META" in passage:
                answer = "document outlines the word list"
            if "MARK-DRIFT" in passage:  # ends in a script the source does not use
                answer = "secret word list 水分,"
            if "MARK-ECHO" in passage:  # the query itself
                answer = prompt.split("Search query: ", 1)[1].split("\n", 1)[0]
            return Act(text=json.dumps({"answer": answer}))
        if "from what you know" in prompt:
            q = prompt.split("Question:", 1)[1].split("\n", 1)[0]
            known = "zzknown" in q
            return Act(text=json.dumps({"answer": "secret word list" if known else "unknown"}))
        if "Summarise in one line" in prompt:
            passage = prompt.split("<<<\n", 1)[1].split("\n>>>", 1)[0]
            fact = _FACT.search(passage)
            mark = _MARK.search(passage)
            # a passage without its fact line is named by its text's hash
            name = fact.group(1) if fact else "h" + hashlib.sha256(passage.encode()).hexdigest()[:8]
            summary = f"{name} {mark.group(0) if mark else ''} and its word list".strip()
            return Act(text=json.dumps({"summary": summary}))
        if "This query copies" in prompt:
            q = prompt.split("Search query:", 1)[1].split("\n", 1)[0].strip()
            if "fixable" in q:
                return Act(text=json.dumps({"question": "zzfixed lookup", "answer": "x"}))
            if "reworded" in q:  # the rewrite names the text it came from
                body = {"question": "passage about zzreworded lookup", "answer": "x"}
                return Act(text=json.dumps(body))
            return Act(text=json.dumps({"question": q, "answer": "x"}))
        if "Write the terse search query" in prompt or _UNANSWERABLE_ASK in prompt:
            about = prompt.split("About a document:", 1)[1].split("\n", 1)[0]
            fact = _FACT.search(about)
            mark = _MARK.search(about)
            name = fact.group(1) if fact else about.split()[0]
            tag = name.replace("-", "x")
            kind = mark.group(1) if mark else ""
            if kind == "MENU":
                q = "what is the most expensive item on the menu"
            elif kind in ("COPY", "FIXABLE", "REWORDED"):
                # every word is in the passage (alpha, bravo ... are the corpus's words)
                q = f"{name} alpha bravo charlie {kind.lower()}"
            elif kind == "KNOWN":
                q = f"zzknown {tag}"
            elif kind == "SEARCHBOX":
                q = f"zzquery {tag} in a search engine"
            elif kind == "LEADING":  # the text it was shown, before the terms
                q = f"passage about zzquery {tag}"
            elif kind == "SHOWN":  # the summary it was written from, among the terms
                q = f"zzquery {tag} summary highlights"
            elif kind == "PROMPTECHO":  # its instructions, copied
                q = f"zzquery {tag} a reader would look for"
            elif _UNANSWERABLE_ASK in prompt:  # no answer asked: the pipeline sets it
                body = {"missing": "its opening hours", "question": f"zzopening hours {tag}"}
                return Act(text=json.dumps(body))
            else:
                q = f"zzquery {tag}"
            # the query step's own answer, which the source's replaces
            return Act(text=json.dumps({"question": q, "answer": "what the summary says"}))
        raise AssertionError(f"unexpected prompt: {prompt[:200]}")


def _run(tmp_path: Path, docs: dict[str, str], n: int, extra: str = "", **kw):
    write_query_corpus(tmp_path, docs, extra)
    model = QueryModel()
    with FakeOpenAI(model) as fake:
        report = _generate(tmp_path, fake, n, **kw)
    kept = [
        json.loads(line)
        for line in (tmp_path / "q" / "generated.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    return report, kept, model


def test_kept_questions_stand_alone_and_every_type_is_present(tmp_path):
    docs = {f"plain-{c}": _doc_text(f"plain-{c}", 4) for c in "abcd"}
    docs["menu"] = _doc_text("menu", 1, "MARK-MENU")
    docs["menu-two"] = _doc_text("menutwo", 1, "MARK-MENU")
    report, kept, model = _run(tmp_path, docs, 12, types=ALL_TYPES)
    assert report.counts["kept"] == 12
    assert {q["type"] for q in kept} == set(ALL_TYPES)
    for q in kept:
        assert dangling_reference(q["text"]) is None, q["text"]
        assert "menu" not in q["text"]
        assert q["overlap"] <= 0.75
    unanswerable = [q for q in kept if q["type"] == "unanswerable"]
    assert unanswerable and all(q["source"] == [] for q in unanswerable)
    assert all(q["answer"] == "not in the documents" for q in unanswerable)
    # the writer is never shown the phrase (a small model copied it into its query)
    asks = [p for p in model.prompts if _UNANSWERABLE_ASK in p]
    assert asks and not any("not in the documents" in p for p in asks)
    # their critique rates them from the topic alone: no passage, no answer, no
    # groundedness (a small critic rated usefulness by the answer "not in the documents")
    rated = [p for p in model.prompts if "Rate the question" in p and "zzopening hours" in p]
    assert rated and all("\nDocuments on: " in p for p in rated)
    assert not any("groundedness" in p or "Proposed answer" in p or "\n<<<\n" in p for p in rated)
    assert all(q["source"] for q in kept if q["type"] != "unanswerable")
    menus = [d for d in report.dropped if d["text"] and "menu" in d["text"]]
    assert menus and all(d["dropped_by"] == ["standalone"] for d in menus)
    assert "'the menu' refers to something" in menus[0]["reason"]


class AnsweredModel(QueryModel):
    """QueryModel whose corpus check finds the unanswerable questions written from the
    documents named in `answered` answered by the corpus (dropped), and the rest not."""

    def __init__(self, answered: tuple[str, ...]) -> None:
        super().__init__()
        self.answered = answered

    def __call__(self, n: int, prompt: str) -> Act:
        if "does any of them answer it" in prompt:
            q = prompt.split("Question:", 1)[1].split("\n", 1)[0]
            if any(f"{d}xfact" in q for d in self.answered):
                return Act(text='{"on_topic": "yes", "answered": "yes"}')
        return super().__call__(n, prompt)


def test_each_type_is_kept_at_its_share_when_candidates_allow(tmp_path):
    """12 asked over 6 types: a share of 2 each, from 36 planned candidates (6 a type).
    The unanswerable question of document g (the second of the first round) is answered
    by the corpus and dropped; once 12 are kept, rounds go on for the type below its
    share (before: only for a type with no survivor, which stopped at one unanswerable
    question)."""
    docs = {f"plain-{c}": _doc_text(f"plain-{c}", 4) for c in "abcdefghijkl"}
    write_query_corpus(tmp_path, docs)
    with FakeOpenAI(AnsweredModel(answered=("g",))) as fake:
        report = _generate(tmp_path, fake, 12, types=ALL_TYPES)
    assert report.counts["kept"] == 12 and report.counts["answered"] == 1
    assert report.kept_by_type == {t: 2 for t in ALL_TYPES}


class QuotingModel(QueryModel):
    """QueryModel whose corpus check always says unanswered, but which, asked for the
    sentence that answers a question written from document g, copies the first line of
    20 characters or more of the shown passages."""

    def __call__(self, n: int, prompt: str) -> Act:
        if QUOTE_ASK in prompt:
            with self.lock:
                self.prompts.append(prompt)
            q = prompt.split("Question:", 1)[1].split("\n", 1)[0]
            if "gxfact" in q:
                passages = prompt.split("<<<\n", 1)[1].split("Question:", 1)[0]
                line = next(x for x in passages.splitlines() if len(x) >= 20)
                return Act(text=line)
            return Act(text="NONE")
        return super().__call__(n, prompt)


def test_an_unanswerable_question_whose_answer_the_model_quotes_is_dropped(tmp_path):
    """The corpus check's yes/no let an answered question through (the local model did
    so for 10 of 27 answered handbook questions): asked for the sentence that answers,
    the model copies one, and the question is dropped with that sentence as its reason.
    The quote prompt shows the passages without markdown markup."""
    docs = {
        f"plain-{c}": _doc_text(f"plain-{c}", 4).replace(" is ", " is **bold** ", 1)
        for c in "abcdefghijkl"
    }
    write_query_corpus(tmp_path, docs)
    model = QuotingModel()
    with FakeOpenAI(model) as fake:
        report = _generate(tmp_path, fake, 12, types=ALL_TYPES)
    quoted = [d for d in report.dropped if "answered by the corpus: " in d["reason"]]
    assert quoted and all(d["dropped_by"] == ["answered"] for d in quoted)
    assert all(re.search(r": '\S.{19}", d["reason"]) for d in quoted), quoted
    asked = [p for p in model.prompts if QUOTE_ASK in p]
    assert asked and not any("**" in p or "\n# " in p for p in asked)
    assert report.kept_by_type["unanswerable"] == 2  # the others' quotes were NONE


class InventingQuoteModel(QueryModel):
    """QueryModel that, asked for the sentence that answers, writes one of its own."""

    def __call__(self, n: int, prompt: str) -> Act:
        if QUOTE_ASK in prompt:
            return Act(text="The opening hours are nine to five on weekdays.")
        return super().__call__(n, prompt)


def test_a_quote_found_in_no_passage_keeps_the_question(tmp_path):
    """A model without the grammar may answer the quote with a sentence of its own: as in
    extractive judging, that is no answer, and the unanswerable questions stay."""
    docs = {f"plain-{c}": _doc_text(f"plain-{c}", 4) for c in "abcdefghijkl"}
    write_query_corpus(tmp_path, docs)
    with FakeOpenAI(InventingQuoteModel()) as fake:
        report = _generate(tmp_path, fake, 12, types=ALL_TYPES)
    assert report.kept_by_type["unanswerable"] == 2 and report.counts["answered"] == 0


class CorpusCheckModel(QueryModel):
    """QueryModel whose corpus check answers `check(i)` to the i-th unanswerable question
    it reads (from 1); `checked` counts them."""

    def __init__(self) -> None:
        super().__init__()
        self.checked = 0

    def check(self, i: int) -> Act:
        raise NotImplementedError

    def __call__(self, n: int, prompt: str) -> Act:
        if "does any of them answer it" in prompt:
            with self.lock:
                self.checked += 1
                i = self.checked
            return self.check(i)
        return super().__call__(n, prompt)


class OneUnansweredModel(CorpusCheckModel):
    """Only the first unanswerable question checked is unanswered: every later one is
    answered by the corpus (dropped)."""

    def check(self, i: int) -> Act:
        answered = "no" if i == 1 else "yes"
        return Act(text=json.dumps({"on_topic": "yes", "answered": answered}))


def test_a_type_kept_below_its_share_is_named_with_what_to_raise(tmp_path):
    """12 asked over 6 types (a share of 2): one unanswerable question survives its 6
    candidates and every spare candidate of the other types, so the report and the log
    say so and what would plan more."""
    docs = {f"plain-{c}": _doc_text(f"plain-{c}", 4) for c in "abcdefghijkl"}
    write_query_corpus(tmp_path, docs)
    model = OneUnansweredModel()
    with FakeOpenAI(model) as fake:
        report = _generate(tmp_path, fake, 12, types=ALL_TYPES)
    # every one of the 36 planned was tried, the spare ones as unanswerable questions
    # (two may ask the same question: the second check is then read from the reply
    # cache, and one of them is a duplicate)
    assert report.counts["generated"] == 36
    assert report.kept_by_type["unanswerable"] == 1 and model.checked >= 6
    # the i-th candidate is planned as the i-th type in turn, unanswerable the sixth
    spares = [
        d
        for d in report.dropped
        if d["type"] == "unanswerable" and int(d["id"].split("-")[1]) % len(ALL_TYPES)
    ]
    assert len(spares) > 5
    assert report.warnings == (
        "kept below their share of 2 (--n 12 over 6 types): unanswerable 1; every planned "
        "candidate they could take was tried: raise generate.oversample to plan more",
    )
    saved = json.loads((tmp_path / "q" / "generated.report.json").read_text(encoding="utf-8"))
    assert saved["warnings"] == list(report.warnings)


def test_the_corpus_check_comes_before_the_critique_of_an_unanswerable_question(tmp_path):
    """The corpus answers most of the unanswerable questions the local model writes (9 of
    9 that reached it at --n 30 on TREC DL, 45 and 50 at --n 100), so that check is asked
    first: a question it drops costs no critique, and only the one it lets through is
    rated (from its topic: "Documents on:")."""
    docs = {f"plain-{c}": _doc_text(f"plain-{c}", 4) for c in "abcdefghijkl"}
    write_query_corpus(tmp_path, docs)
    model = OneUnansweredModel()
    with FakeOpenAI(model) as fake:
        report = _generate(tmp_path, fake, 12, types=ALL_TYPES)
    answered = [d for d in report.dropped if d["dropped_by"] == ["answered"]]
    assert len(answered) >= 5 and report.kept_by_type["unanswerable"] == 1
    rated = [p for p in model.prompts if "Rate the question" in p and "Documents on:" in p]
    rated_questions = {p.split("Question: ", 1)[1].split("\n", 1)[0] for p in rated}
    assert rated_questions == {q["text"] for q in report.kept if q["type"] == "unanswerable"}


def _yes_no_tokens(*p_yes: float) -> tuple:
    """A JSON reply of yes/no answers as tokens, each answer token with P(yes) = p and
    P(no) = 1 - p among its alternatives, and the greedy answer the likelier one."""
    import math

    keys = ("on_topic", "answered")
    tokens: list = [("{", ())]
    for i, (key, p) in enumerate(zip(keys, p_yes, strict=True)):
        word = "yes" if p >= 0.5 else "no"
        tokens.append((('"' if not i else ', "') + key + '": "', ()))
        tokens.append((word, (("yes", math.log(p)), ("no", math.log(1 - p)))))
        tokens.append(('"', ()))
    tokens.append(("}", ()))
    return tuple(tokens)


class LeaningYesModel(CorpusCheckModel):
    """The corpus check says "answered" for every unanswerable question, as the local
    model leans to: at P(yes) 0.55 for the first one it reads, 0.7 for the rest."""

    def check(self, i: int) -> Act:
        tokens = _yes_no_tokens(0.9, 0.55 if i == 1 else 0.7)
        return Act(text="".join(t for t, _ in tokens), tokens=tokens)


def test_the_corpus_check_counts_a_question_answered_from_its_cut_on_p_yes(tmp_path):
    """The local model says "answered" for 6 of 10 handbook questions the handbook does
    not answer: with logprobs, a question counts answered from P(yes) = ANSWERED_CUT, so
    a yes at 0.55 goes on to the quote (NONE here) and is kept, and one at 0.7 is
    dropped, its reason giving P."""
    from harness.generate.pipeline import ANSWERED_CUT

    assert 0.55 < ANSWERED_CUT <= 0.7
    docs = {f"plain-{c}": _doc_text(f"plain-{c}", 4) for c in "abcdefghijkl"}
    write_query_corpus(tmp_path, docs)
    model = LeaningYesModel()
    with FakeOpenAI(model) as fake:
        report = _generate(tmp_path, fake, 12, types=ALL_TYPES)
    assert report.kept_by_type["unanswerable"] == 1 and model.checked >= 6
    answered = [d for d in report.dropped if d["dropped_by"] == ["answered"]]
    assert answered and all(
        d["reason"]
        == f"an unanswerable question answered by the corpus: P(answered) 0.70, at least "
        f"{ANSWERED_CUT}"
        for d in answered
    ), answered


class LateUnansweredModel(CorpusCheckModel):
    """The first `answered` unanswerable questions checked are answered by the corpus
    (dropped), and every later one unanswered."""

    def __init__(self, answered: int) -> None:
        super().__init__()
        self.answered = answered

    def check(self, i: int) -> Act:
        answered = "yes" if i <= self.answered else "no"
        return Act(text=json.dumps({"on_topic": "yes", "answered": answered}))


def test_a_short_type_takes_the_spare_candidates_of_the_others(tmp_path):
    """12 asked over 6 types (a share of 2, 6 planned a type): the corpus answers the
    first 6 unanswerable questions checked, as many as the type's own candidates, so it
    reaches its share only with candidates planned for types already at theirs, which
    keep their ids."""
    docs = {f"plain-{c}": _doc_text(f"plain-{c}", 4) for c in "abcdefghijkl"}
    write_query_corpus(tmp_path, docs)
    with FakeOpenAI(LateUnansweredModel(answered=6)) as fake:
        report = _generate(tmp_path, fake, 12, types=ALL_TYPES)
    assert report.kept_by_type == {t: 2 for t in ALL_TYPES} and report.warnings == ()
    unanswerable = [k for k in report.kept if k["type"] == "unanswerable"]
    # a spare candidate's id is its place in the plan, and its line says what it was
    # planned as (the i-th candidate gets the i-th type in turn, unanswerable the sixth)
    spares = [k for k in unanswerable if int(k["id"].split("-")[1]) % len(ALL_TYPES)]
    assert spares
    for k in spares:
        assert k["planned_type"] == ALL_TYPES[int(k["id"].split("-")[1]) % len(ALL_TYPES) - 1]
    assert all("planned_type" not in k for k in report.kept if k not in spares)
    ids = [k["id"] for k in report.kept] + [d["id"] for d in report.dropped]
    assert len(ids) == len(set(ids))


def test_spare_candidates_are_dealt_to_the_short_types_in_turn():
    """Spare candidates go to the short types one at a time in turn, each up to what it
    lacks, with their first passage; a multi-passage type takes none (its candidates
    need a second passage planned with them) but keeps its own."""
    import collections

    from harness.generate.pipeline import Candidate, short_types_round
    from harness.generate.sampler import Passage

    def passage(i: int) -> Passage:
        return Passage(text=f"text {i}", span=SourceSpan(f"d{i}", 0, 6), topic=f"t{i}")

    def cand(i: int, qtype: str, n_passages: int = 1) -> Candidate:
        return Candidate(i, qtype, tuple(passage(10 * i + j) for j in range(n_passages)))

    done = [cand(0, "simple"), cand(1, "multi-passage", 2)]
    done += [cand(2, "unanswerable"), cand(6, "distracting")]
    done[2].dropped_by.append("answered")
    done[3].dropped_by.append("usefulness")
    pending = [cand(3, "simple"), cand(4, "multi-passage", 2)]
    pending += [cand(5, "simple"), cand(7, "simple"), cand(8, "simple")]
    types = ("simple", "multi-passage", "distracting", "unanswerable")
    batch = short_types_round(done, pending, 1, 1, types)
    # each short type lacks 1 of 1 after 1 tried: 2 asked (1.1 x 1 / 1, rounded up)
    assert [(c.index, c.qtype) for c in batch] == [
        (3, "distracting"),
        (4, "unanswerable"),
        (5, "distracting"),
        (7, "unanswerable"),
    ]
    assert batch[1].passages == pending[1].passages[:1]
    done[1].dropped_by.append("overlap")  # now multi-passage is short too
    batch = short_types_round(done, pending, 1, 1, types)
    by_type = collections.defaultdict(list)
    for c in batch:
        by_type[c.qtype].append(c.index)
    assert by_type == {"multi-passage": [4], "distracting": [3, 7], "unanswerable": [5, 8]}
    assert short_types_round(done, [pending[0]], 1, 1, ("simple", "multi-passage")) == []


class ParaphrasingQueryModel(QueryModel):
    """QueryModel that also writes a paraphrase when the query prompt asks for one."""

    def __call__(self, n: int, prompt: str) -> Act:
        act = super().__call__(n, prompt)
        asks = "Write the terse search query" in prompt or _UNANSWERABLE_ASK in prompt
        if asks and '"paraphrase"' in prompt:
            body = json.loads(act.text)
            body["paraphrase"] = "zzother words for " + body["question"]
            return Act(text=json.dumps(body))
        return act


def test_the_query_style_writes_paraphrases_when_asked(tmp_path):
    """generate.phrasings = 2 with the default query style: the query prompt asks for a
    paraphrase too, and the paraphrase set has one line per kept question."""
    write_query_corpus(tmp_path, {"plain-a": _doc_text("plain-a", 4)}, "phrasings = 2\n")
    model = ParaphrasingQueryModel()
    with FakeOpenAI(model) as fake:
        report = _generate(tmp_path, fake, 4, types=("simple", "unanswerable"))
    kept = [json.loads(x) for x in (tmp_path / "q" / "generated.jsonl").open(encoding="utf-8")]
    paras = [
        json.loads(x)
        for x in (tmp_path / "q" / "generated.paraphrases.jsonl").open(encoding="utf-8")
    ]
    assert report.counts["kept"] == len(kept) == 4
    assert {q["type"] for q in kept} == {"simple", "unanswerable"}
    assert [p["paraphrase_of"] for p in paras] == [q["id"] for q in kept]
    assert all(
        p["text"] == "zzother words for " + q["text"] for p, q in zip(paras, kept, strict=True)
    )
    queries = [p for p in model.prompts if "Write the terse search query" in p]
    unanswerable = [p for p in model.prompts if _UNANSWERABLE_ASK in p]
    assert queries and unanswerable
    assert all('"paraphrase": "..."' in p for p in queries + unanswerable)


def test_the_summary_names_a_requested_type_with_no_kept_question(tmp_path):
    """--n 5 with the six default types: five questions are kept, no unanswerable one,
    and the run says so (per-type counts, and a warning naming the type)."""
    from harness.report.text import format_generation

    docs = {f"plain-{c}": _doc_text(f"plain-{c}", 4) for c in "abcd"}
    report, kept, _ = _run(tmp_path, docs, 5)
    assert len(kept) == 5 and "unanswerable" not in {q["type"] for q in kept}
    assert report.kept_by_type == {t: (0 if t == "unanswerable" else 1) for t in ALL_TYPES}
    assert len(report.warnings) == 1
    assert "no kept question of type unanswerable" in report.warnings[0]
    assert "--n 5 is below the 6 types" in report.warnings[0]
    summary = format_generation(report)
    assert "kept by type: simple 1, " in summary and "unanswerable 0" in summary
    assert "warning: no kept question of type unanswerable" in summary
    saved = json.loads((tmp_path / "q" / "generated.report.json").read_text(encoding="utf-8"))
    assert saved["kept_by_type"] == report.kept_by_type
    assert saved["warnings"] == list(report.warnings)
    # every type kept: no warning
    report2, _, _ = _run(tmp_path / "all", docs, 6, types=ALL_TYPES)
    assert report2.warnings == () and all(report2.kept_by_type.values())


def test_copying_questions_are_rewritten_once_then_rejected(tmp_path):
    docs = {
        "plain-a": _doc_text("plain-a", 3),
        "copy": _doc_text("copy", 1, "MARK-COPY"),
        "fixable": _doc_text("fixable", 1, "MARK-FIXABLE"),
    }
    report, kept, model = _run(tmp_path, docs, 5, types=("simple",))
    copied = [d for d in report.dropped if "overlap" in d["dropped_by"]]
    assert copied and all("copy" in d["text"] for d in copied)
    # the reason gives the first query, the rewrite and the rewrite's overlap
    assert all(re.search(r"\): '.+'; after a rewrite, '.+' has \d+%$", d["reason"]) for d in copied)
    assert not any("alpha bravo" in q["text"] for q in kept)
    fixed = [q for q in kept if q["text"] == "zzfixed lookup"]
    assert fixed
    # the rewrite keeps the source span of the passage as the label
    assert all(q["source"][0]["doc_id"] == "fixable.md" for q in fixed)
    # one rewrite per copying question, none for the others
    rewrites = {p for p in model.prompts if "This query copies" in p}  # repeats: cache hits
    assert len(rewrites) == len({d["text"] for d in copied}) + 1
    assert report.counts["overlap"] == len(copied)
    # with the filter off, the copying question is kept as it was written
    report2, kept2, _ = _run(
        tmp_path / "off", docs, 5, extra="max_overlap = 1.0\n", types=("simple",)
    )
    assert report2.counts["overlap"] == 0
    assert any("copy" in q["text"] for q in kept2)


def test_a_query_gets_its_answer_from_its_source_or_is_dropped(tmp_path):
    """The query style's answer: once the query is final (after any rewrite), the model
    answers it from its source passage; NONE drops the question (`unanswered`), a reply
    without an answer is malformed. The source's answer replaces the query step's own,
    written from the summary (the local model's described the document: "document
    outlines ...")."""
    docs = {
        "plain-a": _doc_text("plain-a", 3),
        "none": _doc_text("none", 1, "MARK-NOANSWER"),
        "nojson": _doc_text("nojson", 1, "MARK-NOJSON"),
        "fixable": _doc_text("fixable", 1, "MARK-FIXABLE"),
        "meta": _doc_text("meta", 1, "MARK-META"),
        "drift": _doc_text("drift", 1, "MARK-DRIFT"),
        "echo": _doc_text("echo", 1, "MARK-ECHO"),
    }
    report, kept, model = _run(tmp_path, docs, 8, types=("simple",))
    dropped = [d for d in report.dropped if d["dropped_by"] == ["unanswered"]]
    assert report.counts["unanswered"] == len(dropped)
    reasons = {d["text"]: d["reason"] for d in dropped}
    assert set(reasons) == {"zzquery nonexfactx0", "zzquery metaxfactx0", "zzquery echoxfactx0"}
    assert reasons["zzquery echoxfactx0"] == (
        "its source does not answer it (its answer only repeats the query: 'zzquery echoxfactx0')"
    )
    assert reasons["zzquery nonexfactx0"] == "its source does not answer it (answered NONE)"
    assert reasons["zzquery metaxfactx0"] == (
        "its source does not answer it (its answer points at the text: "
        "'document outlines the word list')"
    )
    malformed = [d for d in report.dropped if d["dropped_by"] == ["malformed"]]
    why = "its answer from its source: no answer in the reply"
    assert [d["reason"] for d in malformed] == [why] * len(malformed)
    assert malformed and all("nojsonxfact" in d["text"] for d in malformed)
    # every answer as the source gave it; the one ending in Chinese cut where it began
    assert kept and all(q["answer"] == "secret word list" for q in kept)
    assert any(q["text"].startswith("zzquery driftxfact") for q in kept)
    # asked of the final query: the rewrite's, not the copying first draft
    answered = [p.split("Search query: ", 1)[1].split("\n", 1)[0] for p in model.prompts
                if SOURCE_ANSWER_ASK in p]  # fmt: skip
    assert "zzfixed lookup" in answered and not any("alpha bravo" in q for q in answered)


def test_questions_answered_closed_book_are_dropped(tmp_path):
    docs = {"plain-a": _doc_text("plain-a", 3), "known": _doc_text("known", 1, "MARK-KNOWN")}
    report, kept, model = _run(tmp_path, docs, 3, types=("simple",))
    assert report.counts["closed_book"] >= 1
    assert not any("zzknown" in q["text"] for q in kept)
    drop = next(d for d in report.dropped if d["dropped_by"] == ["closed_book"])
    assert "answered without any passage" in drop["reason"]
    # the closed-book prompt carries no passage
    closed = [p for p in model.prompts if "from what you know" in p]
    assert closed and not any("\n<<<\n" in p for p in closed)
    # off: the question is kept, and no closed-book call is made
    report2, kept2, model2 = _run(
        tmp_path / "off", docs, 3, extra="closed_book = false\n", types=("simple",)
    )
    assert report2.counts["closed_book"] == 0
    assert any("zzknown" in q["text"] for q in kept2)
    assert not any("from what you know" in p for p in model2.prompts)


def test_style_examples_are_in_the_prompt_and_set_the_limit(tmp_path):
    (tmp_path / "real.jsonl").parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "real.jsonl").write_text(
        '{"text": "cheapest lunch near station"}\n{"question": "refund after 30 days"}\n',
        encoding="utf-8",
    )
    docs = {"plain-a": _doc_text("plain-a", 3)}
    report, _, model = _run(
        tmp_path, docs, 2, extra='style_examples = "real.jsonl"\n', types=("simple",)
    )
    queries = [p for p in model.prompts if "Write the terse search query" in p]
    assert queries and all(
        "- cheapest lunch near station" in p and "- refund after 30 days" in p for p in queries
    )
    # the examples share no word with the corpus: the limit drops to 0 + 0.1
    assert report.settings["overlap_limit"] == pytest.approx(0.1)
    assert report.settings["style_examples_used"] == 2


def test_read_style_examples_text_jsonl_and_bad_input(tmp_path):
    txt = tmp_path / "q.txt"
    txt.write_text("first  query\n\nsecond query\n", encoding="utf-8")
    assert read_style_examples(txt) == ["first query", "second query"]
    many = tmp_path / "many.txt"
    many.write_text("".join(f"q {i}\n" for i in range(20)), encoding="utf-8")
    assert len(read_style_examples(many)) == 8
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\n', encoding="utf-8")
    with pytest.raises(HarnessError, match=r"bad\.jsonl:1: text: expected a non-empty question"):
        read_style_examples(bad)
    with pytest.raises(HarnessError, match="style_examples"):
        read_style_examples(tmp_path / "missing.txt")


def test_a_byte_order_mark_does_not_hide_the_first_example(tmp_path):
    bom = tmp_path / "real.jsonl"
    bom.write_text('{"text": "cheap lunch"}\n{"text": "late refund"}\n', encoding="utf-8-sig")
    assert read_style_examples(bom) == ["cheap lunch", "late refund"]
    plain = tmp_path / "real.txt"
    plain.write_text("cheap lunch\n", encoding="utf-8-sig")
    assert read_style_examples(plain) == ["cheap lunch"]


def test_overlap_limit_from_examples():
    passages = ["alpha bravo charlie delta", "echo foxtrot golf hotel"]
    assert overlap_limit([], passages, 0.75) == 0.75
    # overlaps 1.0 and 0.5 -> p90 1.0 + 0.1 -> capped at the default
    assert overlap_limit(["alpha bravo", "echo zulu"], passages, 0.75) == 0.75
    assert overlap_limit(["zulu yankee", "echo zulu xray yankee"], passages, 0.75) == 0.35


@pytest.mark.parametrize(
    "question",
    [
        "What is the most expensive item on the menu?",
        "When was this company founded?",
        "Who is the author?",
        "What does the above say about leave?",
        "How many employees does this company's office have?",
        "Which dishes are listed above?",
        "is this product safe for children",
        # a pronoun or a demonstrative with nothing named before it
        "What does it cost?",
        "When was he born?",
        "Who wrote this?",
        "How many people work there?",
        # seen in a real handbook run with the local model
        "what is this about?",
        "What does this handbook cover?",
        # a word that ends the question pointing at a text
        "What is the deadline mentioned?",
        "What is the main point of the section above?",
        # the search engine the generator was told it writes for (seen in a real run)
        "What does the search engine offer?",
        # code on a technical page the reader never saw (a documentation site's run)
        "what does the function do?",
        "What does the example print?",
        "what does the function return",
        "What type is the parameter?",
        # kept on TREC DL (--n 100, seed 0): a video never named
        "what's the name of the video?",
        "when was the video released",
        # kept on the quick-start handbook (--n 12, seed 1)
        "what are the guidelines?",
        "what year was the photo taken",
        "how long does it take?",
        # a qualifier with nothing after it (kept on TREC DL, --n 100, seed 0)
        "What is this guide on?",
        "what is the menu at?",
    ],
)
def test_dangling_references_are_found(question):
    assert dangling_reference(question) is not None


@pytest.mark.parametrize(
    "question",
    [
        "What is the most expensive item on the menu at Luigi's?",
        "Who is the author of Dune?",
        "When was the company Acme founded?",
        "What is the capital of France?",
        "How does the heart pump blood?",
        "When was Acme's store opened, and what did the store sell?",
        "anthropological definition of environment",
        "what is the best way to cook rice",
        # the quick-start handbook's own questions: "the company" is the corpus's
        "How much annual leave do people get after five years at the company?",
        "Does the company contribute to gym membership, and how much?",
        # a pronoun after what it points at; "there" and "this" that are not the end
        "How do I reset my password if it expired?",
        "Can employees carry leave over, and how do they request it?",
        "how do they test for diabetes",
        "is it safe to drink tap water in Lisbon",
        "Is there a gym in the Leeds office?",
        "What did Ada Lovelace write about her engine?",
        "who uses this phone number for support calls",
        # kept questions of a real handbook run with the local model
        "how often should passwords be changed?",
        "Company closure dates in 2026?",
        "working remotely from abroad",
        "find vpn for Lisbon multi-factor auth 12 hours troubleshooting tips",
        "where does the company ship products from?",
        # code named after its noun, or the noun qualified
        "What does the function exec() return?",
        "What does the method `generate` return?",
        "what does the function sandbox_cleanup do",
        "What is the example of a custom scorer?",
        "What arguments does the eval_set function take?",
        "how do I pass arguments on the command line",
        "what does the parameter timeout control",
        "how do I call the method invoke",
        "What is the variable pay for sales staff?",
        "When does the class start?",
        "How do I fix the script error?",
    ],
)
def test_qualified_references_pass(question):
    assert dangling_reference(question) is None


@pytest.mark.parametrize(
    "question",
    [
        # numbered, counted or ordered passages
        "According to passage 1, what is the fee?",
        "In Passage 2, what is the deadline?",
        "How do the two passages differ on overtime pay?",
        "What does the second passage add to the first?",
        "What do the passages say?",
        # the text the question came from, pointed at or as the subject
        "Per the text, what is the fee?",
        "What does the given text say?",
        "What does the provided document say about fees?",
        "What is the text about?",
        "What does the summary say?",
        "What does the section say about overtime?",
        # kept by a handbook run before "by" and the table were in the rules
        "What types of leave are covered by the document?",
        "What is the table about?",
        # lower case, the verb after an auxiliary: not a name
        "how much does the product cost in euros",
        "what does the author say about love",
        "what is the menu price",
        # a pronoun after only a question's measure words
        "How much does it cost?",
        "How big is it?",
        "What year was it built?",
        "How old is he?",
    ],
)
def test_questions_that_lean_on_their_source_are_caught(question):
    assert mentions_source(question) or dangling_reference(question) is not None


@pytest.mark.parametrize(
    "question",
    [
        # existential "there", the dummy "it" of the weather and of evaluation
        "How many planets are there?",
        "Does it rain a lot in Seattle in winter?",
        "Is it worth buying an electric car?",
        # names in lower case, as the query style asks
        "the movie titanic release date",
        "who wrote the book dune",
        "cast of the show friends",
        # a quoted title, and a compound qualified after it
        "Who is the author of the paper 'Attention Is All You Need'?",
        "What is the item number on a W-2 form?",
        # the dummy "it" after measure words
        "How long does it take to boil an egg?",
        "how long does it take for a chicken egg to hatch?",  # dropped on TREC DL before
        "how long does it take an egg to hatch",
        "what is the requirement to become an rn?",
        "what are the guidelines for expense claims",
        "how long does it usually take for an egg to hatch",
        "How far is it from Paris to London?",
        "What does it cost to renew a US passport?",
        # "by" and "table" that do not point at a text
        "what is covered by home insurance",
        "what is the periodic table about",
    ],
)
def test_stand_alone_questions_pass_the_rules(question):
    assert not mentions_source(question)
    assert dangling_reference(question) is None


@pytest.mark.parametrize(
    ("rule", "question", "passage", "named"),
    [
        (
            names_the_search,
            "how do i submit a claim to a search engine?",
            "Submit claims in Fernhill.",
            "search engine",
        ),
        (
            names_the_search,
            "what is the search query for release planning",
            "Releases ship monthly.",
            "search query",
        ),
        (names_the_search, "Search Box tips", "Type in the field.", "Search Box"),
        (
            names_the_search,
            "search engine ranking factors",
            "A search engine ranks pages by links.",
            None,
        ),
        (names_the_search, "search results for leave policy", "Leave: 27 days.", None),
        (names_the_search, "searching engines of old cars", "Engines.", None),
        # the passage or summary the writer saw (kept on TREC DL before the rule)
        (
            names_its_source,
            "what is Nelson Mandela's summary about imprisonment?",
            "Mandela was jailed.",
            "summary",
        ),
        (names_its_source, "yeast summary facts", "Yeast cells are ...", "summary"),
        (names_its_source, "passages on yeast", "Yeast cells are ...", "passages"),
        (names_its_source, "yeast summaries", "A summary: yeast cells are ...", None),
        (
            names_its_source,
            "which excerpts mention tornadoes",
            "A tornado watch is issued ...",
            "excerpts",
        ),
        (names_its_source, "plot summary of hamlet", "Hamlet: a summary of the plot.", None),
        (names_its_source, "plot summary of hamlet", "Hamlet returns to Elsinore.", None),
        (names_its_source, "mountain passes in winter", "The pass is closed.", None),
        (
            names_its_source,
            "what document led to the us entering world war i?",
            "The telegram ...",
            None,
        ),
    ],
)
def test_queries_that_name_the_search_or_their_source_are_caught(rule, question, passage, named):
    assert rule(question, [passage]) == named


def test_no_prompt_names_a_search_engine_for_the_model_to_echo():
    """The system message said "test questions for a search engine" and the model wrote
    that search engine into 21 of 36 queries on a documentation corpus."""
    from harness.generate import prompts

    passages, summary = ["Leave: 27 days."], "Leave policy: 27 days a year."
    messages = [
        prompts.generation_messages("simple", passages, 2),
        prompts.critique_messages("annual leave days", "27", passages, "staff"),
        prompts.unanswerable_critique_messages("leave in 2030", "Leave", "staff", ("usefulness",)),
        prompts.summary_messages(passages),
        prompts.query_messages("simple", summary, ["how many days off"], 2),
        prompts.source_answer_messages("annual leave days", passages),
        prompts.unanswerable_query_messages(summary, ["how many days off"], 2),
        prompts.rewrite_messages("leave 27 days", "27"),
        prompts.closed_book_messages("annual leave days"),
        prompts.quote_messages("leave in 2030", passages),
        prompts.answered_messages("leave in 2030", passages),
    ]
    for message in (m for ms in messages for m in ms):
        assert "search engine" not in message["content"].lower(), message


def test_a_query_naming_the_search_is_dropped_unless_its_source_does(tmp_path):
    docs = {
        "plain-a": _doc_text("plain-a", 2),
        "box": _doc_text("box", 1, "MARK-SEARCHBOX"),
        "engine": _doc_text("engine", 1, "MARK-SEARCHBOX").replace(
            " is ", " is a search engine ", 1
        ),
    }
    report, kept, _ = _run(tmp_path, docs, 4, types=("simple",))
    named = [d for d in report.dropped if "names the search" in d["reason"]]
    assert named and all(d["dropped_by"] == ["standalone"] for d in named)
    assert all(d["text"].startswith("zzquery boxxfact") for d in named)
    assert "'search engine' names the search, not what it looks for" in named[0]["reason"]
    # the source that speaks of a search engine keeps its query
    assert any(q["text"].startswith("zzquery enginexfact") for q in kept)


LUSITANIA = "the sinking of the lusitania by a german submarine"


@pytest.mark.parametrize(
    ("query", "passage", "terms"),
    [
        # kept on TREC DL (--n 100, seeds 0 and 1) before the rule
        (f"passage about {LUSITANIA}", "The Lusitania was sunk by a U-boat.", LUSITANIA),
        ("forensic anthropology document", "Forensic anthropology is ...", "forensic anthropology"),
        ("summary of yeast characteristics", "Yeast cells are ...", "yeast characteristics"),
        ("Documents about leave policy?", "Leave: 27 days.", "leave policy?"),
        ("lusitania sinking passage", "The Lusitania was sunk ...", "lusitania sinking"),
        # None: unchanged. A word its source uses stays
        ("tax documents", "Keep these tax documents for 7 years.", None),
        ("summary of benefits", "A summary of your benefits is sent yearly.", None),
        # fewer than two words would be left, or a function word at the end
        ("passage about yeast", "Yeast cells are ...", None),
        ("procurement process for documents", "Buy through the portal.", None),
        # a noun phrase's head, not a keyword query's last word (found in review)
        ("what is a legal document?", "The deed ...", None),
        ("how to cite a journal article", "Cite with APA.", None),
        # "text of" and "documents for" ask for the text or the documents
        ("text of the gettysburg address", "Four score ...", None),
        ("documents for passport renewal", "Renew online.", None),
        # neither at an end
        ("what document led to the us entering world war i?", "The telegram ...", None),
    ],
)
def test_the_text_a_query_was_written_from_is_left_off_its_ends(query, passage, terms):
    assert without_source_noun(query, [passage]) == (terms or query)


def test_a_question_repeating_its_instructions_is_caught():
    from harness.generate.prompts import writing_instructions

    instructions = writing_instructions()
    echo = "what is a fact a reader would look for in a document about Jamaica"
    assert echoes_prompt(echo, ["Jamaica is warm."], instructions) == "fact a reader would"
    # the same words in its source are the source's
    passage = "Every fact a reader would look for is in the index."
    assert echoes_prompt(echo, [passage], instructions) == "would look for in"
    passage = "Find each fact a reader would look for in a book."
    assert echoes_prompt(echo, [passage], instructions) is None
    # every content word an instruction's, none its source's
    echo = "what does a reader look for in a document"
    assert echoes_prompt(echo, ["Jamaica is warm."], instructions) == "reader look document"
    assert echoes_prompt(echo, ["A document on Jamaica."], instructions) is None
    assert echoes_prompt("missing", ["Jamaica is warm."], instructions) == "missing"
    assert echoes_prompt("what is it?", ["x"], instructions) is None
    # with no source text, an echo is still one
    assert echoes_prompt("missing", [], instructions) == "missing"
    assert echoes_prompt("missing", [""], instructions) == "missing"
    # the worked example's words and everyday words the prompts use are a corpus's too
    payroll = ["Expense claims are paid monthly by bank transfer."]
    for real in (
        "public holidays",
        "order number",
        "user name",
        "museum holiday opening hours",
        "what are the opening hours on public holidays",
    ):
        assert echoes_prompt(real, payroll, instructions) is None, real
    for real in (
        "how long is life cycle of flea",
        "what is the best way to cook rice",
        "museum opening hours on weekends",
        "how do i submit a claim",
    ):
        assert echoes_prompt(real, ["x"], instructions) is None, real


def test_a_query_naming_its_source_is_tidied_or_dropped(tmp_path):
    docs = {
        "plain-a": _doc_text("plain-a", 2),
        "lead": _doc_text("lead", 1, "MARK-LEADING"),
        "shown": _doc_text("shown", 1, "MARK-SHOWN"),
        "echo": _doc_text("echo", 1, "MARK-PROMPTECHO"),
        "reworded": _doc_text("reworded", 1, "MARK-REWORDED"),
    }
    report, kept, _ = _run(tmp_path, docs, 6, types=("simple",))
    texts = {q["text"] for q in kept}
    assert "zzquery leadxfactx0" in texts  # "passage about" left off
    assert "zzreworded lookup" in texts  # and off the overlap rewrite's query too
    dropped = {d["text"]: d for d in report.dropped}
    shown = dropped["zzquery shownxfactx0 summary highlights"]
    assert shown["dropped_by"] == ["standalone"]
    assert shown["reason"] == "'summary' names the text it was written from (its source never does)"
    echo = dropped["zzquery echoxfactx0 a reader would look for"]
    assert echo["dropped_by"] == ["standalone"]
    assert echo["reason"] == "'a reader would look' repeats the instructions it was written with"


@pytest.mark.parametrize(
    ("answer", "points"),
    [
        ("document outlines procedures for requesting software subscriptions", True),
        ("The text provides statistical weather data from a weather station", True),
        ("follow the procedure described in the text", True),
        ("this document", True),
        ("search engine document about guidelines for software quotes", True),
        ("Passages contain the answer", True),
        ("Passage 1", True),
        ("Liquid Lanolin is a moisturizer for dry skin.", False),
        ("27 days of paid leave", False),
        ("Text messages are not monitored", False),
        ("The Salvation Army", False),
    ],
)
def test_answers_that_point_at_their_source_are_caught(answer, points):
    assert points_at_source(answer) is points


@pytest.mark.parametrize(
    ("query", "answer", "repeats"),
    [
        ("what is the data handling guide?", "Data handling guide", True),
        ("badge collection, laptop setup, weekly buddy meetings",
         "Badge collection, laptop setup, weekly buddy meetings", True),
        ("search office closure days 2026 customer support",
         "search office closure days 2026 customer support", True),
        ("how many days of annual leave", "27 days of paid annual leave", False),
        ("is parental leave paid?", "yes, parental leave is paid", False),
        ("vpn on android", "", False),  # no content word: says_none's case
    ],
)  # fmt: skip
def test_an_answer_that_only_repeats_its_query_is_caught(query, answer, repeats):
    assert repeats_question(query, answer) is repeats


def test_an_answer_is_cut_where_it_drifts_into_another_script():
    english = ["Xylem vessels transport water in plants."]
    assert clip_script_drift("xylem vessels specialized to transport水分,", english) == (
        "xylem vessels specialized to transport"
    )
    assert clip_script_drift("水分", english) == ""
    assert clip_script_drift("Café au lait, 27 days", english) == "Café au lait, 27 days"
    # a script the source uses is no drift
    assert clip_script_drift("植物 transport 水分", ["植物は水分を運ぶ (transport)"]) == (
        "植物 transport 水分"
    )


def test_closed_book_match():
    assert closed_book_match("Paris", "It is Paris.")
    assert not closed_book_match("Paris", "unknown")
    assert not closed_book_match("the 1889 World's Fair", "London")
    assert not closed_book_match("", "Paris")
    # the question's own words are no knowledge: only the answer's other words count
    question, source = "moisturizer for dry skin", "Liquid Lanolin is a moisturizer for dry skin."
    guess = "Moisturizer for dry skin is a lotion or cream designed to hydrate the skin"
    assert closed_book_match(source, guess) and not closed_book_match(source, guess, question)
    assert closed_book_match(source, "liquid lanolin", question)
    # an answer that only restates its question matches nothing
    assert not closed_book_match(
        "legionnaires' disease causes", "it causes fever", question="legionnaires' disease causes"
    )


# ---------------------------------------------------------------- metrics and warnings


def test_word_overlap_and_regret():
    assert word_overlap("What is the capital of France?", "Paris is in France.") == 0.5
    assert word_overlap("the of what", "anything") == 0.0
    assert word_overlap("Capital FRANCE", "capital of france") == 1.0
    assert regret([0.2, 0.5, 0.4], [0.8, 0.6, 0.7]) == pytest.approx(0.2)
    assert regret([0.5, 0.1], [0.9, 0.1]) == 0.0
    # a tie on the chosen side counts its worst truth
    assert regret([0.5, 0.5], [0.9, 0.3]) == pytest.approx(0.6)
    with pytest.raises(ValueError):
        regret([], [])
    # Kendall tau with ties (tau-b): the package's one function
    assert kendall_tau([1, 2, 3], [1, 2, 3]) == 1.0
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == -1.0
    assert kendall_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / (2 * 3) ** 0.5)


def test_bias_warnings():
    doc = Document(doc_id="d", text="alpha bravo charlie delta echo", source="d", title="d")
    copied = Question(
        question_id="g1", text="alpha bravo charlie", source=(SourceSpan("d", 0, 30),)
    )
    own = Question(question_id="g2", text="zulu yankee alpha", source=(SourceSpan("d", 0, 30),))
    hand = Question(question_id="h", text="alpha")
    assert source_overlaps([copied, own, hand], [doc]) == [1.0, pytest.approx(1 / 3)]
    warning = overlap_warning([1.0, 0.9])
    assert warning and "95%" in warning and f"{REAL_QUERY_OVERLAP:.0%}" in warning
    assert overlap_warning([REAL_QUERY_OVERLAP]) is None
    assert overlap_warning([]) is None
    w = winner_warning([0.4, 0.2], [0.5, 0.7], ["bm25", "none"])
    assert w and "source metrics pick bm25 but the judge picks none" in w
    assert winner_warning([0.4, 0.2], [0.5, 0.1], ["bm25", "none"]) is None


def test_winner_warning_only_when_each_winner_is_strictly_beaten():
    # the judge rates both equally: its winners include the source metric's
    assert winner_warning([0.5, 0.6], [0.7, 0.7], ["t0", "t1"]) is None
    assert winner_warning([0.6, 0.6], [0.7, 0.1], ["t0", "t1"]) is None
    # ties on both sides that share no setting still disagree, naming every winner
    w = winner_warning([0.6, 0.6, 0.1, 0.1], [0.1, 0.2, 0.9, 0.9], ["a", "b", "c", "d"])
    assert w and "source metrics pick a or b but the judge picks c or d" in w
    assert winner_warning([], [], []) is None


def test_regret_refuses_a_nan_score():
    nan = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        regret([0.5, 0.3], [0.2, nan])  # max(truth) would skip the NaN: regret 0
    with pytest.raises(ValueError, match="NaN"):
        regret([nan, 0.3], [0.2, 0.9])


def test_every_run_on_copying_generated_questions_warns(tmp_path, cache_dir):
    from harness.pipeline import run_experiment
    from harness.testing import answer_yes

    text = _doc_text("plain-a", 3)
    write_query_corpus(tmp_path, {"plain-a": text})
    doc_text = (tmp_path / "corpus" / "plain-a.md").read_text(encoding="utf-8")
    start = doc_text.index("plain-a-fact-0")
    words = doc_text[start : start + 60].split()[:5]
    line = {
        "id": "gen-0001",
        "text": " ".join(words),
        "type": "simple",
        "source": [{"doc_id": "plain-a.md", "start": start, "end": start + 200}],
    }
    (tmp_path / "questions.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    with FakeOpenAI(answer_yes) as fake:
        config = load_experiment(
            tmp_path / "exp.toml",
            [f'judge.base_url="{fake.base_url}"', 'judge.model="fake"', "failures.explain=false"],
        )
        run = run_experiment(config, results_dir=tmp_path / "results", cache_dir=cache_dir)
    assert any("of their words with their source passages" in w for w in run.header.warnings)


def test_a_sweep_warns_when_source_metrics_and_the_judge_disagree():
    from harness.sweep.book import source_judge_disagreement

    agree = {
        0: ({"source_mrr@3": 0.5, "mrr@3": 0.6}, 3),
        1: ({"source_mrr@2": 0.3, "mrr@2": 0.4}, 2),
    }
    assert source_judge_disagreement(agree) is None
    differ = {**agree, 2: ({"source_mrr@4": 0.9, "mrr@4": 0.1}, 4)}
    warning = source_judge_disagreement(differ)
    assert warning and "source metrics pick trial 2 but the judge picks trial 0" in warning
    # hand-written questions have no source metrics: nothing to compare
    assert source_judge_disagreement({0: ({"mrr@3": 0.6}, 3), 1: ({"mrr@3": 0.2}, 3)}) is None


def test_dry_run_counts_the_query_style_calls(tmp_path):
    from harness.generate import estimate_generation

    write_query_corpus(tmp_path, {"plain-a": _doc_text("plain-a", 3)})
    exp = load_experiment(tmp_path / "exp.toml")
    with FakeOpenAI(QueryModel()) as fake:
        gen = make_generator(fake, tmp_path / "c2")
        est = estimate_generation(
            exp, n=6, types=ALL_TYPES, cache_dir=tmp_path / "cache", generator=gen
        )
        assert fake.requests == 0
    # summary, query, critique, and for an answerable candidate its answer from the
    # source and closed-book, for the one unanswerable candidate the corpus check and the
    # quote (a sentence as long as the widest window, 200 characters widened by 40 at
    # each end, at most)
    assert est["least"]["candidates"] == 6 and est["least"]["calls"] == 5 * 5 + 5
    answerable = 72 + 96 + 150 + 64 + 40
    unanswerable = 72 + 96 + 150 + 40 + 280 // 3 + 16
    assert est["least"]["completion_tokens_max"] == 5 * answerable + unanswerable


def test_the_local_models_critique_does_not_score_standalone(tmp_path):
    """generate.standalone_critic = "auto": the packaged local model's critique is asked
    for groundedness and usefulness only (its stand-alone scores were measured to be
    noise), an endpoint's for all three; "on" and "off" decide for either, and the
    rules drop a question that leans on something unnamed whatever the critic says."""
    from harness.config import GenerateConfig
    from harness.generate import prompts
    from harness.generate.critique import failed_filters, parse_critique
    from harness.generate.llm import Generator
    from harness.generate.pipeline import critic_criteria

    local = Generator(None, "local", None, seed=0, grammar=True)
    hosted = Generator(None, "hosted", None, seed=0, grammar=False)
    auto, on, off = (GenerateConfig(standalone_critic=v) for v in ("auto", "on", "off"))
    two = ("groundedness", "usefulness")
    assert critic_criteria(auto, local) == two
    assert critic_criteria(auto, hosted) == prompts.CRITERIA
    assert critic_criteria(on, local) == prompts.CRITERIA
    assert critic_criteria(off, hosted) == two

    user = prompts.critique_messages("q?", "a", ["p"], "staff", two)[1]["content"]
    assert "standalone" not in user and "standalone" not in prompts.critique_grammar(two)
    assert user.endswith(
        'JSON: {"groundedness_why": "...", "groundedness": N, '
        '"usefulness_why": "...", "usefulness": N}'
    )
    crit = parse_critique('{"groundedness": 5, "usefulness": 4}', two)
    assert not isinstance(crit, str) and failed_filters("simple", crit, 4) == []
    assert isinstance(parse_critique('{"groundedness": 5, "usefulness": 4}'), str)


def test_all_three_criteria_ask_what_they_asked_before():
    """With stand-alone on, the critique's prompt is the one earlier runs cached."""
    from harness.generate import prompts

    user = prompts.critique_messages("Q?", "A", ["P"], "staff")[1]["content"]
    assert user == (
        "Passage:\n<<<\nP\n>>>\nQuestion: Q?\nProposed answer: A\n"
        "Rate the question from 1 (worst) to 5 (best), a reason of a few words first:\n"
        "groundedness: can it be answered clearly and unambiguously from the passage?\n"
        "usefulness: how useful is it to staff?\n"
        "standalone: does it make sense without the passage (no mention of a passage, "
        "text, context or document)?\n"
        'JSON: {"groundedness_why": "...", "groundedness": N, "usefulness_why": "...", '
        '"usefulness": N, "standalone_why": "...", "standalone": N}'
    )


def test_a_bad_standalone_critic_value_is_one_line(tmp_path):
    exp = write_query_corpus(tmp_path, {"a": "alpha"}, 'standalone_critic = "maybe"\n')
    with pytest.raises(HarnessError) as err:
        load_experiment(exp)
    assert "generate.standalone_critic" in str(err.value) and "auto, on, off" in str(err.value)


def test_the_surplus_is_cut_so_every_surviving_type_is_kept():
    """More survivors than asked for: the cut takes the types in turn, so a type with one
    survivor late in the run is kept and an over-represented one gives way."""
    from harness.generate.pipeline import Candidate, balance_types

    order = ["simple"] * 4 + ["distracting"] * 2 + ["situational"]
    survivors = [Candidate(index=i, qtype=t, passages=()) for i, t in enumerate(order)]
    kept, surplus = balance_types(survivors, 5)
    assert [c.qtype for c in kept] == [
        "simple",
        "simple",
        "distracting",
        "distracting",
        "situational",
    ]
    assert [c.index for c in kept] == sorted(c.index for c in kept)
    assert [c.index for c in surplus] == [2, 3]
    assert balance_types(survivors, 9) == (survivors, [])


def test_a_round_asks_for_what_is_missing_at_the_share_kept_so_far():
    from harness.generate.pipeline import round_size

    assert round_size(missing=3, kept=9, tried=12) == 5  # 3 x 1.1 x 12 / 9 = 4.4
    assert round_size(missing=10, kept=5, tried=20) == 44
    assert round_size(missing=2, kept=0, tried=10) == 22  # none kept yet: counted as one


def test_the_rewrite_of_an_unanswerable_question_shows_no_answer():
    """Its answer, "not in the documents", is never shown to the writing model (it copied
    the phrase into its queries); other questions' rewrites show theirs."""
    from harness.generate import prompts

    assert "Answer:" not in prompts.rewrite_messages("zz query", None)[1]["content"]
    assert "Answer: a fact\n" in prompts.rewrite_messages("zz query", "a fact")[1]["content"]


def test_a_paraphrase_is_tidied_and_one_that_cannot_stand_alone_is_left_out():
    from harness.generate.critique import Draft
    from harness.generate.pipeline import _tidy
    from harness.generate.sampler import Passage

    source = (Passage(SourceSpan("d.md", 0, 20), "Yeast cells bud.", "D"),)
    draft = Draft("yeast budding", "they bud", "passage about yeast budding")
    assert _tidy(draft, source).paraphrase == "yeast budding"
    draft = Draft("yeast budding", "they bud", "yeast summary facts")
    assert _tidy(draft, source).paraphrase is None
    assert _tidy(draft, source).question == "yeast budding"
