"""`harness generate` end to end: sample, ask, critique, deduplicate, write.

1. Sample n x oversample source passages over the documents (`sampler`); the i-th
   candidate gets the i-th type of `generate.types` in turn.
2. Ask the model for one question per candidate (its type's prompt; a second passage for
   multi-passage). With `generate.style = "query"` that is two calls: a one-line summary
   of the passage, then the terse search query a user would type, written from the
   summary, so it does not copy the passage (#24). Then the filters, cheapest first:
   rule-based stand-alone checks; word overlap with the source above `max_overlap`
   (rewritten once, then dropped); with the query style, the answer (the final query
   answered from its source; NONE drops it); the closed-book check (the question asked
   without any passage: a matching answer means it tests memory, not retrieval); for
   unanswerable questions, the corpus's nearest passages (BM25 over all of it) must be
   on its topic and not answer it (the model's P(yes) for "answered" below
   `ANSWERED_CUT`), and the model must find no sentence of them to copy as the answer
   (asked before the critique, which it saves: it drops most of them);
   the critique (`critique`). The first filter failed is why it is dropped. Every
   filter's question to the model is asked at temperature 0 (`Generator.ask`'s
   `check`); the writing calls sample at `generate.temperature`.
3. Drop near-duplicates among the survivors (`dedup`), in candidate order.
4. Candidates are taken in rounds (n first, then enough for what is still missing at
   the share kept so far; a type below its share takes the spare candidates of the
   types at theirs) until n are kept or the planned candidates (n x oversample) run
   out; a rerun with the same seed asks the same prompts and reads every answer
   from the cache.
5. Write the kept questions (`writer`), the report of every dropped one, the judge exam
   and, with `phrasings = 2`, the paraphrase set. A dead endpoint (calls failing in a
   row, `llm.MAX_CONSECUTIVE_FAILURES`) stops the run first, writing nothing.
"""

from __future__ import annotations

import collections
import math
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from loguru import logger

from harness.config import ExperimentConfig, GenerateConfig
from harness.corpus.language import ENGLISH, corpus_language, passage_language
from harness.errors import JudgeUnavailable
from harness.generate import prompts
from harness.generate.critique import (
    CUT_OFF,
    Critique,
    Draft,
    _json_object,
    clip_script_drift,
    cut_off,
    dangling_reference,
    echoes_prompt,
    failed_filters,
    mentions_source,
    names_its_source,
    names_the_search,
    parse_critique,
    parse_draft,
    points_at_source,
    repeats_question,
    without_source_noun,
)
from harness.generate.dedup import Embed, near_duplicates
from harness.generate.exam import ExamItem
from harness.generate.llm import Generator, dry_generator, open_generator, prompt_tokens
from harness.generate.sampler import (
    WIDEN_CHARS,
    Passage,
    corpus_windows,
    sample_passages,
    second_passage,
)
from harness.generate.writer import GenerationReport, output_paths, write_outputs
from harness.judge.markdown import strip_markdown
from harness.judge.parsing import parse_extract, says_none, split_sentences
from harness.judge.prompts import extract_max_tokens, grammar_extract
from harness.llm.client import ChatFailed
from harness.metrics.overlap import content_words, word_overlap
from harness.types import Document, SourceSpan

CRITIQUE_MAX_TOKENS = 150
"""Three reasons of at most 80 characters and three digits fit in this."""

FILTERS = (
    "malformed",
    "errors",
    "standalone",
    "overlap",
    "unanswered",
    "closed_book",
    "groundedness",
    "usefulness",
    "answered",
    "duplicates",
)
"""Why a candidate can be dropped, in report order (see harness.generate.critique)."""


@dataclass
class Candidate:
    """One generated question on its way through the filters."""

    index: int
    qtype: str
    passages: tuple[Passage, ...]
    draft: Draft | None = None
    critique: Critique | None = None
    dropped_by: list[str] = field(default_factory=list)
    reason: str = ""
    duplicate_of: int | None = None
    overlap: float | None = None
    """Share of the question's content words found in its passage(s)."""
    planned_type: str | None = None
    """The type it was planned as, when a short type took it as a spare (`as_spare`)."""
    language: str = ENGLISH
    """The language its passages are written in (`harness.corpus.language`): its
    prompts ask for the question in it."""

    @property
    def per_token(self) -> float:
        """The characters a token of its replies holds (`prompts.chars_per_token`)."""
        return prompts.chars_per_token(self.language)

    @property
    def question_id(self) -> str:
        """The id the question gets in every file: gen-0001, gen-0002, ..."""
        return f"gen-{self.index + 1:04d}"

    @property
    def passed(self) -> bool:
        """True when no filter dropped it."""
        return not self.dropped_by

    @property
    def topic(self) -> str:
        """The topic label of its (first) passage."""
        return self.passages[0].topic

    def source(self) -> list[dict[str, Any]]:
        """Its source spans as written (none for an unanswerable question)."""
        if self.qtype == "unanswerable":
            return []
        return [p.span.to_dict() for p in self.passages]

    def to_dict(self) -> dict[str, Any]:
        """Everything about it, as the report keeps a dropped question."""
        d: dict[str, Any] = {
            "id": self.question_id,
            "type": self.qtype,
            "topic": self.topic,
            "text": self.draft.question if self.draft else None,
            "answer": self.draft.answer if self.draft else None,
            "source": self.source(),
            "dropped_by": list(self.dropped_by),
            "reason": self.reason,
            **({"planned_type": self.planned_type} if self.planned_type else {}),
        }
        if self.critique is not None:
            d["scores"] = dict(self.critique.scores)
            d["reasons"] = dict(self.critique.reasons)
        if self.duplicate_of is not None:
            d["duplicate_of"] = f"gen-{self.duplicate_of + 1:04d}"
        return d


def plan(docs: Sequence[Document], settings: GenerateConfig, n: int) -> list[Candidate]:
    """Every candidate the run may ask for, in order: ceil(n x oversample) sampled
    passages with their types (a second passage for multi-passage ones) and their
    language (a passage too short to tell: the corpus's)."""
    total = max(n, math.ceil(n * settings.oversample))
    passages = sample_passages(
        docs, total, seed=settings.seed, passage_chars=settings.passage_chars
    )
    rng = random.Random(settings.seed + 1)
    corpus = corpus_language([d.text for d in docs])
    out = []
    for i, p in enumerate(passages):
        qtype = settings.types[i % len(settings.types)]
        ps: tuple[Passage, ...] = (p,)
        if qtype == "multi-passage":
            ps = (p, second_passage(docs, p, rng, settings.passage_chars))
        language = passage_language([x.text for x in ps], corpus)
        out.append(Candidate(index=i, qtype=qtype, passages=ps, language=language))
    return out


def _gen_messages(c: Candidate, settings: GenerateConfig) -> list[dict[str, str]]:
    return prompts.generation_messages(
        c.qtype, [p.text for p in c.passages], settings.phrasings, c.language
    )


def critic_criteria(settings: GenerateConfig, gen: Generator) -> tuple[str, ...]:
    """What the critique scores: groundedness and usefulness, and stand-alone unless
    `generate.standalone_critic` turns it off ("auto": off for the packaged local model,
    whose stand-alone scores were measured to be noise; rules check it either way)."""
    on = settings.standalone_critic == "on" or (
        settings.standalone_critic == "auto" and not gen.local
    )
    return prompts.CRITERIA if on else tuple(c for c in prompts.CRITERIA if c != "standalone")


def _crit_criteria(c: Candidate, criteria: tuple[str, ...]) -> tuple[str, ...]:
    """What a candidate's critique scores: `criteria`, less groundedness for an
    unanswerable question (nothing answers it)."""
    if c.qtype == "unanswerable":
        return tuple(x for x in criteria if x != "groundedness")
    return criteria


def _crit_messages(
    c: Candidate, draft: Draft, settings: GenerateConfig, criteria: tuple[str, ...]
) -> list[dict[str, str]]:
    """The critique's messages on `criteria` (`_crit_criteria` of the candidate): an
    unanswerable question is rated from its topic alone
    (`prompts.unanswerable_critique_messages`), the others with their passages and
    answer."""
    if c.qtype == "unanswerable":
        return prompts.unanswerable_critique_messages(
            draft.question, c.topic, settings.audience, criteria
        )
    return prompts.critique_messages(
        draft.question, draft.answer, [p.text for p in c.passages], settings.audience, criteria
    )


@dataclass(frozen=True)
class Context:
    """What every candidate's filters share: style examples, the overlap limit, and the
    passages nearest a question (for the unanswerable check)."""

    examples: tuple[str, ...] = ()
    max_overlap: float = 1.0
    nearest: Any = None
    """question -> the texts of the corpus's nearest passages (`corpus_bm25`), or None."""


NEAREST = 3
"""Passages the unanswerable check reads."""

ANSWERED_CUT = 0.6
"""The P(yes) for "answered" from which the corpus check counts an unanswerable
question answered. The local model leans to yes: on 25 handbook questions read against
the handbook by hand (15 answered there, 10 not), its greedy yes (P >= 0.5) dropped 6 of
the 10 it does not answer ("pricing options of Skyward", P 0.62; "new job roles in
lisbon", 0.51) with 14 of the 15 it does; its P(answered) ranked them with an AUC of
0.92, and from 0.6 it drops 3 of the 10 and 14 of the 15 (before the quote). On a run
not looked at before (`--types unanswerable --n 8 --seed 5`) it kept 5 of 24 candidates
where the greedy yes would have kept 2, and dropped 12 of the 13 the handbook answers.
Set on the handbook; on TREC DL's development half (`--n 30`, seed 0) the run kept its
share of 5 (none the day before), 4 of them answered nowhere in the pool by a reading of
it ("salad dressing recipe"; "heart growth symptoms" is answered)."""

CLOSED_BOOK_MATCH = 0.6
"""Share of the source answer's content words a closed-book answer must contain to
count as the same answer."""


def _ask_json(
    gen: Generator, messages: list[dict[str, str]], max_tokens: int, grammar: str
) -> dict[str, Any] | None:
    """The JSON object of one check's reply (None when there is none; asked at
    temperature 0, `Generator.ask`'s `check`); ChatFailed propagates. `grammar` holds a
    local server to the object's shape (prompts.object_grammar)."""
    return _json_object(gen.ask(messages, max_tokens=max_tokens, grammar=grammar, check=True))


def _ask_draft(
    gen: Generator,
    messages: list[dict[str, str]],
    phrasings: int,
    max_tokens: int,
    language: str,
) -> tuple[str, Draft | str]:
    """One generation reply and its draft (or why it cannot be used); ChatFailed
    propagates. A local server is held to the draft's shape by a grammar whose string
    bound fits `max_tokens` in the `language` it is written in, and the same bound tells
    a question the grammar cut."""
    per_token = prompts.chars_per_token(language)
    grammar = prompts.generation_grammar(phrasings, max_tokens, per_token)
    text = gen.ask(messages, max_tokens=max_tokens, grammar=grammar)
    bound = prompts.field_chars(max_tokens, phrasings + 1, per_token) if gen.grammar else None
    return text, parse_draft(text, bound)


def _ask_unanswerable(
    gen: Generator, summary: str, examples: list[str], settings: GenerateConfig, language: str
) -> tuple[str, Draft | str]:
    """The query style's unanswerable query (`prompts.unanswerable_query_messages`) and
    its draft, answered UNANSWERABLE_ANSWER; ChatFailed propagates."""
    max_tokens = prompts.query_max_tokens(settings.phrasings)
    fields = prompts.unanswerable_fields(settings.phrasings)
    per_token = prompts.chars_per_token(language)
    text = gen.ask(
        prompts.unanswerable_query_messages(summary, examples, settings.phrasings, language),
        max_tokens=max_tokens,
        grammar=prompts.object_grammar(*fields, max_tokens=max_tokens, per_token=per_token),
    )
    bound = prompts.field_chars(max_tokens, len(fields), per_token) if gen.grammar else None
    return text, parse_draft(text, bound, answer=prompts.UNANSWERABLE_ANSWER)


def _draft(c: Candidate, gen: Generator, settings: GenerateConfig, ctx: Context) -> Candidate:
    """The candidate with its draft, or dropped as errors/malformed."""
    passages = [p.text for p in c.passages]
    if settings.style == "query":
        try:
            reply = gen.ask(
                prompts.summary_messages(passages, c.language),
                max_tokens=prompts.QUERY_SUMMARY_MAX_TOKENS,
                grammar=prompts.object_grammar(
                    "summary",
                    max_tokens=prompts.QUERY_SUMMARY_MAX_TOKENS,
                    per_token=c.per_token,
                ),
            )
            obj = _json_object(reply)
            summary = obj.get("summary") if obj else None
            if not isinstance(summary, str) or not summary.strip():
                why = f"summary: {CUT_OFF}" if cut_off(reply) else "no summary in the reply"
                return replace(c, dropped_by=["malformed"], reason=why)
            summary = " ".join(summary.split())
            if c.qtype == "unanswerable":
                text, draft = _ask_unanswerable(
                    gen, summary, list(ctx.examples), settings, c.language
                )
            else:  # its answer is replaced by its source's once the query is final
                msgs = prompts.query_messages(
                    c.qtype, summary, list(ctx.examples), settings.phrasings, c.language
                )
                text, draft = _ask_draft(
                    gen,
                    msgs,
                    settings.phrasings,
                    prompts.query_max_tokens(settings.phrasings),
                    c.language,
                )
        except ChatFailed as exc:
            return replace(c, dropped_by=["errors"], reason=f"generation failed: {exc.error}")
    else:
        try:
            text, draft = _ask_draft(
                gen, _gen_messages(c, settings), settings.phrasings, settings.max_tokens, c.language
            )
        except ChatFailed as exc:
            return replace(c, dropped_by=["errors"], reason=f"generation failed: {exc.error}")
    if isinstance(draft, str):
        return replace(c, dropped_by=["malformed"], reason=f"{draft}: {text[:200]!r}")
    if c.qtype == "unanswerable":  # whatever the reply said (the passage style asks one)
        draft = replace(draft, answer=prompts.UNANSWERABLE_ANSWER)
    return replace(c, draft=draft)


def _tidy(draft: Draft, passages: Sequence[Passage]) -> Draft:
    """The draft with the text it was written from left off its question's and
    paraphrase's ends (`without_source_noun`), and without a paraphrase that cannot
    stand alone (`_standalone`; the question's own check drops the candidate)."""
    texts = [p.text for p in passages]
    para = draft.paraphrase
    if para is not None:
        para = without_source_noun(para, texts)
        para = None if _standalone(para, passages) else para
    return replace(draft, question=without_source_noun(draft.question, texts), paraphrase=para)


def _standalone(question: str, passages: Sequence[Passage]) -> str | None:
    """Why `question` cannot stand alone (rule-based), or None."""
    if mentions_source(question):
        return "the question mentions the passage it came from"
    ref = dangling_reference(question)
    if ref:
        return f"{ref!r} refers to something the question never names"
    texts = [p.text for p in passages]
    search = names_the_search(question, texts)
    if search:
        return f"{search!r} names the search, not what it looks for (its source never does)"
    shown = names_its_source(question, texts)
    if shown:
        return f"{shown!r} names the text it was written from (its source never does)"
    echo = echoes_prompt(question, texts, prompts.writing_instructions())
    if echo:
        return f"{echo!r} repeats the instructions it was written with"
    return None


def _overlap(c: Candidate, gen: Generator, ctx: Context) -> Candidate:
    """Measure the question's word overlap with its passage(s); above the limit it is
    rewritten once, then dropped, the reason giving both queries and what failed the
    rewrite (its overlap, its stand-alone rule, or a reply with no query)."""
    assert c.draft is not None
    text = " ".join(p.text for p in c.passages)
    ov = word_overlap(c.draft.question, text)
    if ov <= ctx.max_overlap:
        return replace(c, overlap=ov)
    first = c.draft.question
    try:
        _, again = _ask_draft(
            gen,
            prompts.rewrite_messages(
                first, None if c.qtype == "unanswerable" else c.draft.answer, c.language
            ),
            1,
            prompts.QUERY_MAX_TOKENS,
            c.language,
        )
    except ChatFailed as exc:
        return replace(c, dropped_by=["errors"], reason=f"rewrite failed: {exc.error}")
    failed = "the reply has no query"
    if not isinstance(again, str):
        question = without_source_noun(again.question, [p.text for p in c.passages])
        why = _standalone(question, c.passages)
        ov2 = word_overlap(question, text)
        if why is None and ov2 <= ctx.max_overlap:
            # the source span stays the label; the answer is the first draft's
            return replace(c, draft=replace(c.draft, question=question), overlap=ov2)
        failed = f"{question!r} " + (f"does not stand alone: {why}" if why else f"has {ov2:.0%}")
    return replace(
        c,
        overlap=ov,
        dropped_by=["overlap"],
        reason=f"{ov:.0%} of its words are in the passage (limit {ctx.max_overlap:.0%}): "
        f"{first!r}; after a rewrite, {failed}",
    )


def closed_book_match(source_answer: str, model_answer: str, question: str = "") -> bool:
    """True when the model's answer without any passage is the source's: it is not
    "unknown" and holds at least CLOSED_BOOK_MATCH of the source answer's content words
    that are not the `question`'s own. An answer restates its question's words, and so
    does a guess: "moisturizer for dry skin" answered "Liquid Lanolin is a moisturizer
    for dry skin" from its source and "Moisturizer for dry skin is a lotion or cream"
    from memory, which matched on the question's three words alone. An answer with no
    word of its own matches nothing."""
    if not model_answer.strip() or "unknown" in model_answer.lower():
        return False
    want = set(content_words(source_answer)) - set(content_words(question))
    if not want:
        return False
    got = set(content_words(model_answer))
    return len(want & got) / len(want) >= CLOSED_BOOK_MATCH


def _closed_book(c: Candidate, gen: Generator) -> Candidate:
    """Drop a question the model answers without any passage (memory, not retrieval)."""
    assert c.draft is not None
    try:
        obj = _ask_json(
            gen,
            prompts.closed_book_messages(c.draft.question),
            prompts.CLOSED_BOOK_MAX_TOKENS,
            prompts.object_grammar(
                "answer",
                max_tokens=prompts.CLOSED_BOOK_MAX_TOKENS,
                per_token=c.per_token,
            ),
        )
    except ChatFailed as exc:
        return replace(c, dropped_by=["errors"], reason=f"closed-book check failed: {exc.error}")
    said = obj.get("answer") if obj else None
    if isinstance(said, str) and closed_book_match(c.draft.answer, said, c.draft.question):
        return replace(
            c,
            dropped_by=["closed_book"],
            reason=f"answered without any passage: {said[:100]!r}",
        )
    return c


def _source_answer(c: Candidate, gen: Generator) -> Candidate:
    """The query style's answer and answerability check, once the query is final: the
    query answered from its source passage(s) in at most ten words
    (`prompts.source_answer_messages`). NONE, or an answer that points at the text
    instead of giving a fact (`points_at_source`) or only repeats the query
    (`repeats_question`), drops the question (`unanswered`):
    its label would be a passage that does not answer it. An answer that drifts into a
    script its source does not use is cut there (`clip_script_drift`)."""
    assert c.draft is not None
    texts = [p.text for p in c.passages]
    try:
        reply = gen.ask(
            prompts.source_answer_messages(c.draft.question, texts, c.language),
            max_tokens=prompts.SOURCE_ANSWER_MAX_TOKENS,
            grammar=prompts.object_grammar(
                "answer",
                max_tokens=prompts.SOURCE_ANSWER_MAX_TOKENS,
                per_token=c.per_token,
            ),
            check=True,
        )
    except ChatFailed as exc:
        return replace(c, dropped_by=["errors"], reason=f"answer failed: {exc.error}")
    obj = _json_object(reply)
    said = obj.get("answer") if obj else None
    if not isinstance(said, str) or not said.strip():
        why = CUT_OFF if cut_off(reply) else "no answer in the reply"
        return replace(c, dropped_by=["malformed"], reason=f"its answer from its source: {why}")
    answer = clip_script_drift(" ".join(said.split()), texts)
    if not answer:
        why = f"all in a script its source does not use: {said[:100]!r}"
        return replace(c, dropped_by=["malformed"], reason=f"its answer from its source: {why}")
    if says_none(answer):
        why = "answered NONE"
    elif points_at_source(answer):
        why = f"its answer points at the text: {answer[:100]!r}"
    elif repeats_question(c.draft.question, answer):
        why = f"its answer only repeats the query: {answer[:100]!r}"
    else:
        return replace(c, draft=replace(c.draft, answer=answer))
    return replace(c, dropped_by=["unanswered"], reason=f"its source does not answer it ({why})")


def _answered(c: Candidate, gen: Generator, ctx: Context) -> Candidate:
    """An unanswerable question must be on the corpus's topic and not answered by the
    corpus's passages nearest to it: the model's P(yes) for "answered" below
    ANSWERED_CUT (its yes or no where the endpoint gives no logprobs), then no sentence
    of them quoted as the answer (`_quoted`)."""
    assert c.draft is not None
    near = ctx.nearest(c.draft.question) if ctx.nearest else [p.text for p in c.passages]
    try:
        text, p_yes = gen.ask_p_yes(
            prompts.answered_messages(c.draft.question, near),
            max_tokens=prompts.ANSWERED_MAX_TOKENS,
            grammar=prompts.object_grammar(
                "on_topic", "answered", max_tokens=prompts.ANSWERED_MAX_TOKENS, values="yesno"
            ),
        )
    except ChatFailed as exc:
        return replace(c, dropped_by=["errors"], reason=f"answered check failed: {exc.error}")
    obj = _json_object(text)
    if obj is None:
        return replace(c, dropped_by=["malformed"], reason="the answered check is not JSON")
    if str(obj.get("on_topic", "")).strip().lower() != "yes":
        return replace(
            c, dropped_by=["answered"], reason="an unanswerable question off the corpus's topic"
        )
    p = p_yes[1] if len(p_yes) == 2 else None  # on_topic's, then answered's
    if p is not None and p >= ANSWERED_CUT:
        why = f"P(answered) {p:.2f}, at least {ANSWERED_CUT}"
    elif p is None and str(obj.get("answered", "")).strip().lower() != "no":
        why = "the check says yes"
    else:
        return _quoted(c, gen, near)
    return replace(
        c, dropped_by=["answered"], reason=f"an unanswerable question answered by the corpus: {why}"
    )


def _quoted(c: Candidate, gen: Generator, near: Sequence[str]) -> Candidate:
    """The corpus check's second question, for an unanswerable question its first let
    through: the sentence of the nearest passages that answers it, or NONE (shown
    without markdown markup; a local server's grammar allows only their sentences or
    NONE). A sentence found in them drops the question and is its reason (its first
    120 characters); NONE or a sentence of the model's own keeps it. Asked only whether
    a passage answers (sampled at 0.7 then, as every check was), the local model said no
    for 10 of 27 handbook questions the handbook answers ("vpn access to internal
    systems"); asked for the sentence, it copied one for 5 of those 10 ("Your line
    manager approves claims up to £1,000"), and answered NONE for both of 2 it does not
    answer (questions of earlier runs, read against the handbook by hand)."""
    assert c.draft is not None
    shown = [strip_markdown(text).text for text in near]
    sentences = [s for text in shown for s in split_sentences(text)]
    try:
        reply = gen.ask(
            prompts.quote_messages(c.draft.question, shown),
            max_tokens=extract_max_tokens(sentences),
            grammar=grammar_extract(sentences) if sentences else None,
            check=True,
        )
    except ChatFailed as exc:
        return replace(c, dropped_by=["errors"], reason=f"answered check failed: {exc.error}")
    quote = " ".join(reply.split())
    if not quote:
        return replace(c, dropped_by=["malformed"], reason="the answered check's quote is empty")
    # NONE, or a "copy" found in no passage (a model without the grammar may write one of
    # its own), is no answer, as in extractive judging (`parse_extract`)
    if not any(parse_extract(quote, text)[0] for text in shown):
        return c
    return replace(
        c,
        dropped_by=["answered"],
        reason=f"an unanswerable question answered by the corpus: {quote[:120]!r}",
    )


def process(
    c: Candidate, gen: Generator, settings: GenerateConfig, ctx: Context | None = None
) -> Candidate:
    """Ask for the candidate's question and run it through the filters (see the module);
    returns it with its draft, critique and (when dropped) the filters it failed and why."""
    ctx = ctx or Context(max_overlap=settings.max_overlap)
    c = _draft(c, gen, settings, ctx)
    if not c.passed or c.draft is None:
        return c
    tidy = _tidy(c.draft, c.passages)
    c = replace(c, draft=tidy)
    why = _standalone(tidy.question, c.passages)
    if why:
        return replace(c, dropped_by=["standalone"], reason=why)
    c = _overlap(c, gen, ctx)
    if not c.passed:
        return c
    if c.qtype == "unanswerable":  # before the critique: it drops most of them (#24)
        c = _answered(c, gen, ctx)
    else:
        if settings.style == "query":
            c = _source_answer(c, gen)
        if c.passed and settings.closed_book:
            c = _closed_book(c, gen)
    if not c.passed:
        return c
    draft = c.draft
    assert draft is not None
    criteria = _crit_criteria(c, critic_criteria(settings, gen))
    try:
        text = gen.ask(
            _crit_messages(c, draft, settings, criteria),
            max_tokens=CRITIQUE_MAX_TOKENS,
            grammar=prompts.critique_grammar(criteria),
            check=True,
        )
    except ChatFailed as exc:
        return replace(c, dropped_by=["errors"], reason=f"critique failed: {exc.error}")
    crit = parse_critique(text, criteria)
    if isinstance(crit, str):
        return replace(c, dropped_by=["malformed"], reason=f"{crit}: {text[:200]!r}")
    c = replace(c, critique=crit)
    failed = failed_filters(c.qtype, crit, settings.min_score)
    if failed:
        why = "; ".join(f"{f} {crit.scores[f]}: {crit.reasons[f]}" for f in failed)
        return replace(c, dropped_by=failed, reason=why)
    return c


def read_style_examples(path: str | Path, limit: int = 8) -> list[str]:
    """Up to `limit` real questions from `path`, in any questions file format
    (`harness.corpus.load_questions`: JSONL, a JSON array, CSV/TSV, or one a line),
    white space runs made one space. Bad input is one ConfigError line naming
    `generate.style_examples`' file."""
    from harness.corpus import load_questions

    questions = load_questions(path, field="generate.style_examples")
    return [" ".join(q.text.split()) for q in questions[:limit]]


def overlap_limit(examples: Sequence[str], passages: Sequence[str], default: float) -> float:
    """The overlap limit: `default`, or lower when real questions are given: the 90th
    percentile of their overlap with their best-matching passage, plus 0.1. The best
    match stands in for the relevant passage, which is unknown, so this errs high."""
    if not examples or not passages:
        return default
    best = sorted(max(word_overlap(e, p) for p in passages) for e in examples)
    p90 = best[min(len(best) - 1, math.ceil(0.9 * len(best)) - 1)]
    return min(default, round(p90 + 0.1, 3))


def _context(
    config: ExperimentConfig,
    settings: GenerateConfig,
    candidates: Sequence[Candidate],
    docs: Sequence[Document],
) -> Context:
    """The shared filter context: examples, the overlap limit (from the sampled
    passages), and BM25 over the whole corpus (`corpus_bm25`) for the unanswerable
    check."""
    examples: list[str] = []
    if settings.style_examples:
        examples = read_style_examples(config.resolve_path(settings.style_examples))
    pool = list({p.span: p for c in candidates for p in c.passages}.values())
    limit = overlap_limit(examples, [p.text for p in pool], settings.max_overlap)
    nearest = corpus_bm25(docs, settings.passage_chars) if docs else None
    return Context(examples=tuple(examples), max_overlap=limit, nearest=nearest)


def corpus_bm25(docs: Sequence[Document], passage_chars: int) -> Callable[[str], list[str]]:
    """question -> the texts of the NEAREST windows of the whole corpus by BM25
    (`corpus_windows`, `bm25_search`), built at the first question (a run without
    unanswerable questions never builds it). Before, only the sampled passages were
    searched, and an unanswerable question whose answer lay elsewhere in the corpus was
    kept: 8 of 8 kept on the handbook asked what it tells ("holiday closure dates")."""
    import threading

    from harness.retrieval.retrieve import bm25_search

    lock = threading.Lock()
    texts: dict[str, str] = {}
    search: list[Callable[[str], list[str]]] = []

    def nearest(question: str) -> list[str]:
        with lock:  # one build; LangChain's retriever is not documented thread-safe
            if not search:
                windows = corpus_windows(docs, passage_chars)
                texts.update((w.chunk_id, w.text) for w in windows)
                search.append(bm25_search(windows, NEAREST))
            ids = search[0](question)
        return [texts[i] for i in ids]

    return nearest


def _default_embed(config: ExperimentConfig, cache_dir: Path) -> Embed:
    """The experiment's embedder behind the embedding cache, as query vectors."""
    from harness.retrieval.embedders import CachedEmbedder, embedder_spec, make_embeddings
    from harness.stores import EmbeddingCache
    from harness.stores.embeddings import FILE

    embedder = CachedEmbedder(
        lambda: make_embeddings(config.embedder),
        embedder_spec(config.embedder),
        EmbeddingCache(cache_dir / FILE),
    )
    return embedder.embed_queries


def _exam(
    kept: Sequence[Candidate], candidates: Sequence[Candidate], embed: Embed
) -> list[ExamItem]:
    """Two exam items per kept question with one source passage: its source, and the
    least similar sampled passage of another document; where none was sampled (a
    corpus of one document: a manual as one PDF), of the same document, away from the
    source (`_far`)."""
    single = [c for c in kept if c.qtype != "unanswerable" and len(c.passages) == 1]
    if not single:
        return []
    pool = list({p.span: p for c in candidates for p in c.passages}.values())
    import numpy as np

    pvec = np.asarray(embed([p.text for p in pool]), dtype=np.float32)
    qvec = np.asarray(embed([c.draft.question for c in single if c.draft]), dtype=np.float32)
    items = []
    for qi, c in enumerate(single):
        assert c.draft is not None
        src = c.passages[0]
        others = [i for i, p in enumerate(pool) if p.span.doc_id != src.span.doc_id]
        if not others:  # no other document sampled
            others = [i for i, p in enumerate(pool) if _far(p.span, src.span)]
        items.append(
            ExamItem(
                item_id=f"{c.question_id}-source",
                question_id=c.question_id,
                question=c.draft.question,
                passage=src.text,
                span=src.span,
                kind="source",
            )
        )
        if others:
            sims = pvec[others] @ qvec[qi]
            far = pool[others[int(np.argmin(sims))]]
            items.append(
                ExamItem(
                    item_id=f"{c.question_id}-unrelated",
                    question_id=c.question_id,
                    question=c.draft.question,
                    passage=far.text,
                    span=far.span,
                    kind="unrelated",
                )
            )
    return items


def _far(span: SourceSpan, source: SourceSpan) -> bool:
    """Whether `span` lies in `source`'s document at least a passage's length away from
    it: the exam's unrelated passage where the corpus has no other document (neighbours
    often carry on the source's topic)."""
    gap = source.end - source.start
    return span.doc_id == source.doc_id and (
        span.end + gap <= source.start or span.start >= source.end + gap
    )


def generate_questions(
    config: ExperimentConfig,
    *,
    out: str | Path,
    n: int | None = None,
    types: Sequence[str] | None = None,
    seed: int | None = None,
    cache_dir: str | Path | None = None,
    generator: Generator | None = None,
    embed: Embed | None = None,
) -> GenerationReport:
    """Generate, filter and write questions for the experiment's corpus (see the module).

    `n`, `types` and `seed` override `[generate]`. `generator` replaces the configured
    model (tests pass one over a fake endpoint); `embed` replaces the experiment's
    embedder for the near-duplicate filter and the exam's unrelated passages."""
    from harness.pipeline.prepare import (
        default_cache_dir,
        language_warning,
        load_corpus,
        warn_once,
    )

    settings = _settings(config, n, types, seed)
    n_keep = settings.n
    paths = output_paths(out)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    docs = load_corpus(config)
    foreign = language_warning(config.embedder, docs)
    if foreign:  # said now, before the minutes it warns of
        warn_once(foreign)
    candidates = plan(docs, settings, n_keep)
    t0 = time.perf_counter()
    embed_fn = embed or _default_embed(config, cache)
    config = replace(config, generate=settings)
    ctx = _context(config, settings, candidates, docs)
    try:
        if generator is not None:
            done = _rounds(candidates, generator, settings, n_keep, embed_fn, config, ctx)
            stats = generator.stats
        else:
            # the local server's log goes to the cache, not beside the questions (a folder
            # of inputs a team commits)
            logs = cache / "logs"
            logs.mkdir(exist_ok=True)
            with open_generator(config, cache_dir=cache, log_dir=logs) as gen:
                done = _rounds(candidates, gen, settings, n_keep, embed_fn, config, ctx)
                stats = gen.stats
    except JudgeUnavailable as exc:
        # a dead endpoint leaves the set as it was: no partial file replaces a full one
        raise JudgeUnavailable(
            f"{exc}; nothing written ({paths['questions']} left as it was; a rerun reads "
            "the answers so far from the cache)"
        ) from None
    survivors = [c for c in done if c.passed]
    kept, surplus = balance_types(survivors, n_keep)
    dropped = [c for c in done if not c.passed]
    counts = {"generated": len(done), "kept": len(kept), "dropped": len(dropped)}
    for f in FILTERS:
        counts[f] = sum(1 for c in dropped if f in c.dropped_by)
    counts["surplus"] = len(surplus)
    exam = _exam(kept, candidates, embed_fn)
    elapsed = time.perf_counter() - t0
    by_type = kept_by_type(kept, settings.types)
    warnings = tuple(
        w
        for w in (
            missing_types_warning(by_type, n_keep),
            short_share_warning(by_type, n_keep),
            foreign,
        )
        if w
    )
    report = GenerationReport(
        counts=counts,
        stats={**stats.to_dict(), "minutes": round(elapsed / 60, 2)},
        paths={
            k: str(v) for k, v in paths.items() if k != "paraphrases" or settings.phrasings == 2
        },
        kept=tuple(_kept_line(c) for c in kept),
        dropped=tuple(c.to_dict() for c in dropped),
        exam={
            "items": len(exam),
            "source": sum(1 for i in exam if i.expected),
            "unrelated": sum(1 for i in exam if not i.expected),
        },
        settings={
            **_plain_settings(settings),
            "oversample_candidates": len(candidates),
            "overlap_limit": ctx.max_overlap,
            "style_examples_used": len(ctx.examples),
        },
        kept_by_type=by_type,
        warnings=warnings,
    )
    paraphrases = [_paraphrase_line(c) for c in kept if c.draft is not None and c.draft.paraphrase]
    write_outputs(paths, report, exam, paraphrases if settings.phrasings == 2 else None)
    if not kept:
        logger.warning("no generated question passed the filters; see {}", paths["report"])
    else:
        for w in warnings:
            if w != foreign:  # said at the start
                logger.warning(w)
    return report


def kept_by_type(kept: Sequence[Candidate], types: Sequence[str]) -> dict[str, int]:
    """Kept questions of each requested type, in the order of `types` (0 when none)."""
    counts = collections.Counter(c.qtype for c in kept)
    return {t: counts[t] for t in dict.fromkeys(types)}


def missing_types_warning(by_type: dict[str, int], n: int) -> str | None:
    """A warning naming every requested type with no kept question, and the likely
    reason: fewer questions asked for than types, or the filters dropped them all; None
    when every type is kept."""
    missing = [t for t, k in by_type.items() if k == 0]
    if not missing:
        return None
    why = (
        f"--n {n} is below the {len(by_type)} types asked for; raise it or ask fewer types"
        if n < len(by_type)
        else "all their candidates were dropped (see the report's dropped questions)"
    )
    return f"no kept question of type {', '.join(missing)}: {why}"


def short_share_warning(by_type: dict[str, int], n: int) -> str | None:
    """A warning naming every type kept, but below its share (n // types), or None.
    Rounds go on for such a type until its planned candidates, and the spare ones of the
    types at their share (`short_types_round`), are spent, so all were tried: only more
    of them (generate.oversample) can raise it."""
    share = n // len(by_type) if by_type else 0
    short = [f"{t} {k}" for t, k in by_type.items() if 0 < k < share]
    if not short:
        return None
    return (
        f"kept below their share of {share} (--n {n} over {len(by_type)} types): "
        f"{', '.join(short)}; every planned candidate they could take was tried: raise "
        "generate.oversample to plan more"
    )


def _settings(
    config: ExperimentConfig, n: int | None, types: Sequence[str] | None, seed: int | None
) -> GenerateConfig:
    """[generate] with the command's overrides, checked like the file's values."""
    from harness.config import validate

    g = config.generate
    g = replace(
        g,
        n=n if n is not None else g.n,
        types=tuple(types) if types else g.types,
        seed=seed if seed is not None else g.seed,
    )
    validate(replace(config, generate=g))
    return g


def _plain_settings(g: GenerateConfig) -> dict[str, Any]:
    import dataclasses

    d = dataclasses.asdict(g)
    d["types"] = list(g.types)
    return d


def _rounds(
    candidates: list[Candidate],
    gen: Generator,
    settings: GenerateConfig,
    n_keep: int,
    embed: Embed,
    config: ExperimentConfig,
    ctx: Context | None = None,
) -> list[Candidate]:
    """Process candidates in rounds until n_keep survive deduplication and every type
    asked for has its share (n_keep // types) of survivors, or no candidate is left;
    returns every processed candidate, duplicates marked. Once n_keep survive, a round
    takes only the next candidates of the types below their share (`short_types_round`;
    `balance_types` then keeps the shares)."""
    done: list[Candidate] = []
    pending = list(candidates)
    workers = max(1, config.judge.concurrency)
    share = n_keep // len(settings.types)
    while pending:
        alive = sum(1 for c in done if c.passed)
        missing = n_keep - alive
        if missing > 0:
            size = missing if not done else max(workers, round_size(missing, alive, len(done)))
            batch = pending[:size]
        else:
            batch = short_types_round(done, pending, share, workers, settings.types)
            if not batch:
                break
        taken = {c.index for c in batch}  # a spare candidate comes back with a new type
        pending = [c for c in pending if c.index not in taken]
        logger.info(
            "generating {} questions ({} of {} planned; {} kept so far)",
            len(batch),
            len(candidates) - len(pending),
            len(candidates),
            alive,
        )
        with ThreadPoolExecutor(max_workers=workers) as pool:
            done.extend(pool.map(lambda c: process(c, gen, settings, ctx), batch))
        done = _mark_duplicates(done, embed, settings.dedup_threshold)
    return done


def short_types_round(
    done: Sequence[Candidate],
    pending: Sequence[Candidate],
    share: int,
    workers: int,
    types: Sequence[str] = (),
) -> list[Candidate]:
    """Once n are kept, the next round: for each type with fewer than `share` survivors in
    `done`, its next pending candidates, as many as its own share kept so far says it
    needs (`round_size`; all it lacks when none of it was tried), and the round filled
    up to `workers` with more of those types. A short type whose own candidates run out
    takes spare ones: the pending candidates of types already at their share, dealt
    to the short types in turn, each up to what it still lacks, and retyped
    (`as_spare`); `types`, the types asked for, also finds a short type with none of its
    own left. A multi-passage type takes none: its candidates need a second passage
    planned with them. Empty when every type has its share or no candidate is left (the
    planned candidates, n x oversample, bound what the shares can cost)."""
    by_type: dict[str, list[Candidate]] = {t: [] for t in types}
    for c in pending:
        by_type.setdefault(c.qtype, []).append(c)
    kept = collections.Counter(c.qtype for c in done if c.passed)
    tried = collections.Counter(c.qtype for c in done)
    short = [t for t in by_type if kept[t] < share]
    rest: list[Candidate] = []
    batch: list[Candidate] = []
    lacking: dict[str, int] = {}
    for qtype in short:
        queue = by_type[qtype]
        need = share - kept[qtype]
        size = round_size(need, kept[qtype], tried[qtype]) if tried[qtype] else need
        own = queue[:size]
        batch += own
        rest += queue[size:]
        if len(own) < size and qtype != "multi-passage":
            lacking[qtype] = size - len(own)
    spare = collections.deque(c for c in pending if c.qtype not in short)
    while spare and lacking:  # one spare to each short type in turn
        for qtype in list(lacking):
            if not spare:
                break
            batch.append(as_spare(spare.popleft(), qtype))
            lacking[qtype] -= 1
            if not lacking[qtype]:
                del lacking[qtype]
    return batch + rest[: max(0, workers - len(batch))]


def as_spare(c: Candidate, qtype: str) -> Candidate:
    """A spare candidate (planned for a type already at its share) as one of type
    `qtype`: its first passage, the rest as planned, so a rerun with the same seed asks
    the same prompts; `planned_type` keeps what it was planned as (the report and the
    questions file show it). Its language is its first passage's (a multi-passage
    candidate's second may have come from a document in another)."""
    first = c.passages[:1]
    language = passage_language([p.text for p in first], c.language)
    return replace(c, qtype=qtype, passages=first, planned_type=c.qtype, language=language)


def balance_types(survivors: list[Candidate], n: int) -> tuple[list[Candidate], list[Candidate]]:
    """(n kept, the surplus) of `survivors`: taken type by type in turn, each type's in
    candidate order, so every type that survived is kept and the requested shares hold
    as far as the survivors allow (a cut by candidate order alone can drop a type's only
    survivor, found late by a round for the types still missing); both lists stay in
    the order they were processed."""
    if len(survivors) <= n:
        return survivors, []
    queues: dict[str, collections.deque[int]] = {}
    for i, c in enumerate(survivors):
        queues.setdefault(c.qtype, collections.deque()).append(i)
    chosen: set[int] = set()
    while len(chosen) < n:
        for q in queues.values():
            if q and len(chosen) < n:
                chosen.add(q.popleft())
    kept = [c for i, c in enumerate(survivors) if i in chosen]
    return kept, [c for i, c in enumerate(survivors) if i not in chosen]


def round_size(missing: int, kept: int, tried: int) -> int:
    """Candidates for the next round: enough to keep `missing` more at the share kept so
    far (`kept` of `tried`, at least one counted kept), and a tenth more for the
    variation. The planned candidates (n x oversample) bound it."""
    return math.ceil(missing * 1.1 * tried / max(kept, 1))


def _mark_duplicates(done: list[Candidate], embed: Embed, threshold: float) -> list[Candidate]:
    """`done` with every survivor that near-duplicates an earlier survivor dropped."""
    alive = [c for c in done if c.passed or c.dropped_by == ["duplicates"]]
    alive = [replace(c, dropped_by=[], duplicate_of=None, reason="") for c in alive]
    texts = [c.draft.question for c in alive if c.draft is not None]
    twins = near_duplicates(texts, embed, threshold)
    marked = {}
    for c, twin in zip(alive, twins, strict=True):
        if twin is not None:
            first = alive[twin]
            c = replace(
                c,
                dropped_by=["duplicates"],
                duplicate_of=first.index,
                reason=f"near-duplicate of {first.question_id}: {first.draft.question!r}"
                if first.draft
                else "near-duplicate",
            )
        marked[c.index] = c
    return [marked.get(c.index, c) for c in done]


def _kept_line(c: Candidate) -> dict[str, Any]:
    """A kept question's line in the questions file."""
    assert c.draft is not None and c.critique is not None
    return {
        "id": c.question_id,
        "text": c.draft.question,
        "answer": c.draft.answer,
        "type": c.qtype,
        "topic": c.topic,
        "source": c.source(),
        "scores": dict(c.critique.scores),
        **({"overlap": round(c.overlap, 3)} if c.overlap is not None else {}),
        **({"planned_type": c.planned_type} if c.planned_type else {}),
    }


def _paraphrase_line(c: Candidate) -> dict[str, Any]:
    """A kept question's second phrasing, for the paraphrase set."""
    line = _kept_line(c)
    assert c.draft is not None
    return {
        **line,
        "id": f"{c.question_id}-p2",
        "text": c.draft.paraphrase,
        "paraphrase_of": c.question_id,
    }


def _checks(c: Candidate, settings: GenerateConfig, spare: bool = False) -> tuple[int, int, int]:
    """(calls, prompt tokens, completion tokens at most) of a candidate's checks besides
    its writing and critique: an unanswerable question's corpus check and quote
    (NEAREST windows of about a passage each), else the closed-book question when
    `closed_book` is on. `spare`: the candidate may become an unanswerable one (a spare
    candidate of a type at its share, `short_types_round`): the costlier checks."""
    question = "?" * 60
    if c.qtype == "unanswerable" or spare:
        near = ["x" * (settings.passage_chars + 2 * WIDEN_CHARS)] * NEAREST  # widest windows
        p_tok = prompt_tokens(prompts.answered_messages(question, near))
        p_tok += prompt_tokens(prompts.quote_messages(question, near))
        return 2, p_tok, prompts.ANSWERED_MAX_TOKENS + extract_max_tokens(near)
    if settings.closed_book:
        p_tok = prompt_tokens(prompts.closed_book_messages(question))
        return 1, p_tok, prompts.CLOSED_BOOK_MAX_TOKENS
    return 0, 0, 0


def estimate_generation(
    config: ExperimentConfig,
    *,
    n: int | None = None,
    types: Sequence[str] | None = None,
    seed: int | None = None,
    cache_dir: str | Path | None = None,
    generator: Generator | None = None,
) -> dict[str, Any]:
    """What generating would cost, paying nothing: calls and tokens for the first round
    (n candidates: the least a run pays) and for every planned candidate (the most), with
    the answers already in the cache taken off. Completion tokens are the caps asked for
    (an upper bound); prompt tokens are the client's 4-characters-a-token estimate. An
    overlap rewrite (one more call for a question that copies its passage) is not
    counted: how many need one is known only after asking. Nor is a cached candidate
    that a run may ask as a spare of another type (`short_types_round`): it is taken as
    cached whole, like every cached candidate. So, in the query style, is a candidate
    whose summary is cached though its checks are not: a cache written before the checks
    were asked at temperature 0 (`Generator.ask`'s `check`) holds the writing calls
    only, and a run pays the checks again (its critique, answer from the source and
    closed-book or corpus checks: 241 calls for the quick-start's 120 candidates)."""
    from harness.judge import judge_cost
    from harness.pipeline.prepare import (
        default_cache_dir,
        language_warning,
        load_corpus,
        warn_once,
    )

    settings = _settings(config, n, types, seed)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    gen = generator or dry_generator(replace(config, generate=settings), cache)
    docs = load_corpus(config)
    foreign = language_warning(config.embedder, docs)
    if foreign:  # the dry run is where a user learns what a run would meet
        warn_once(foreign)
    candidates = plan(docs, settings, settings.n)

    def cost(cs: Sequence[Candidate], may_spare: bool) -> dict[str, Any]:
        calls = cached = p_tok = c_tok = 0
        for i, c in enumerate(cs):
            # the last checks: closed-book for an answerable question, the corpus check
            # and quote for an unanswerable one; past the first round's n, a candidate
            # may be a spare that becomes unanswerable (`short_types_round`)
            spare = may_spare and i >= settings.n and "unanswerable" in settings.types
            k_calls, k_prompt, k_completion = _checks(c, settings, spare)
            if settings.style == "query":
                msgs = prompts.summary_messages([p.text for p in c.passages], c.language)
                if gen.cached(msgs, prompts.QUERY_SUMMARY_MAX_TOKENS) is not None:
                    cached += 1  # the rest of a cached candidate is taken as cached too
                    continue
                # summary, query, critique, and an answerable question's answer from
                # its source (+ checks)
                answerable = c.qtype != "unanswerable"
                calls += 3 + answerable + k_calls
                p_tok += (3 + answerable) * prompt_tokens(msgs) + k_prompt
                c_tok += (
                    prompts.QUERY_SUMMARY_MAX_TOKENS
                    + prompts.query_max_tokens(settings.phrasings)
                    + CRITIQUE_MAX_TOKENS
                    + prompts.SOURCE_ANSWER_MAX_TOKENS * answerable
                    + k_completion
                )
                continue
            msgs = _gen_messages(c, settings)
            reply = gen.cached(msgs, settings.max_tokens)
            if reply is None:
                calls += 2 + k_calls  # the question, then its critique (+ checks)
                p_tok += prompt_tokens(msgs) + prompt_tokens(msgs) + 150 + k_prompt
                c_tok += settings.max_tokens + CRITIQUE_MAX_TOKENS + k_completion
                continue
            cached += 1
            draft = parse_draft(reply)
            if isinstance(draft, str) or mentions_source(draft.question):
                continue
            crit = _crit_messages(
                c, draft, settings, _crit_criteria(c, critic_criteria(settings, gen))
            )
            if gen.cached(crit, CRITIQUE_MAX_TOKENS, check=True) is None:
                calls += 1
                p_tok += prompt_tokens(crit)
                c_tok += CRITIQUE_MAX_TOKENS
            else:
                cached += 1
        out: dict[str, Any] = {
            "candidates": len(cs),
            "calls": calls,
            "cached_answers": cached,
            "prompt_tokens": p_tok,
            "completion_tokens_max": c_tok,
        }
        usd = judge_cost(config.judge, p_tok, c_tok)
        if usd is not None:
            out["cost_usd_max"] = usd
        return out

    return {
        "n": settings.n,
        "types": list(settings.types),
        "seed": settings.seed,
        "model": gen.identity,
        "least": cost(candidates[: settings.n], may_spare=False),
        "most": cost(candidates, may_spare=True),
    }
