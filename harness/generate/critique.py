"""Reading the model's answers, and the critique filters that decide what is kept.

Filters, in the order a candidate meets them (the first that fails names the drop):

- `malformed`: the generation was not the JSON asked for, had an empty question, an
  answer of 300 characters or more (the issue's "short specific answer"), or a question
  or paraphrase over 1,000 characters;
- `standalone`: the question mentions the passage/text/context/document it came from
  ("according to the passage"): dropped without asking, whatever a critic would say;
- `standalone` also: a definite reference without an antecedent ("the menu", "this
  company", "the author", "the above"; `dangling_reference`), a query that names the
  search box (`names_the_search`), the passage or summary it was written from when its
  source never uses the word (`names_its_source`; a leading "passage about" or trailing
  "document" is left off first, `without_source_noun`), or repeats four words in a row
  of its instructions (`echoes_prompt`): dropped without asking;
- `critique`: the critique call failed or could not be read;
- `groundedness`, `usefulness`, `standalone`: a score below `min_score` (1-5).
  Unanswerable questions bypass groundedness: a question that is not answered has
  nothing to be grounded in, and the critic's low groundedness used to drop them all.
  They are checked instead for being on-topic but not answered by the corpus (the
  pipeline's `answered` filter).
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.generate.prompts import CRITERIA
from harness.metrics.overlap import STOPWORDS, content_words
from harness.words import words

MAX_ANSWER_CHARS = 300

_SOURCE_NOUNS = "passage|text|context|document|excerpt|paragraph|snippet|article|section|summary"
"""What the generator was shown (or, in the query style, wrote): named after a lead-in
or a word that points at it, the question leans on a text the reader never saw."""
_POINTING = "given|provided|above|following|attached|preceding|accompanying"
"""Words that, before one of _SOURCE_NOUNS, point at the text the question came from."""
_MENTIONS_SOURCE = re.compile(
    # a lead-in: "according to the passage", "per the text", "in the given document",
    # "covered by the document"
    r"\b(?:according to|as per|per|in|from|based on|within|by)\s+"
    rf"(?:the|this|that|these|those|{_POINTING})\s+(?:(?:{_POINTING})\s+)?"
    rf"(?:{_SOURCE_NOUNS})s?\b"
    # a pointing word: "the given text", "the provided document", "the above section"
    rf"|\b(?:the|this|that|these|those)\s+(?:{_POINTING})\s+(?:{_SOURCE_NOUNS})s?\b"
    # the passage(s) themselves, counted or ordered: "the two passages", "the second
    # passage", "both excerpts", "the context"
    r"|\b(?:the|this|that|these|those|both)\s+"
    r"(?:(?:two|three|first|second|third|other|last|previous|next|same)\s+)?"
    r"(?:passage|excerpt|snippet|context)s?\b"
    # numbered: "passage 1", "In Passage 2"
    r"|\b(?:passage|excerpt|snippet)s?\s+(?:\d+|one|two|three)\b"
    # the text as the subject: "the text says", "the summary say", "what is the text
    # about", "what is the table about"
    rf"|\b(?:the|this|that|these|those)\s+(?:(?:{_POINTING}|two|first|second)\s+)?"
    r"(?:text|document|article|summary|section|paragraph|table|list)s?\s+"
    r"(?:says?|said|states?|mentions?|describes?|discuss(?:es)?|covers?|"
    r"about\s*[?.!]*\s*$)",
    re.IGNORECASE,
)


def mentions_source(question: str) -> bool:
    """True when the question refers to the text it was written from ("in the passage",
    "according to the context", "this excerpt", "per the text", "the given document",
    "passage 1", "the two passages", "what does the summary say", "what is the text
    about"): it cannot stand alone. "What types of leave are covered by the document?"
    and "What is the table about?" were kept in a handbook run before "by" and the
    table were added."""
    return bool(_MENTIONS_SOURCE.search(question))


_POINTS_AT_SOURCE = re.compile(
    # "the text provides ...", "described in the passage", "this document"
    r"\b(?:the|this|that)\s+(?:text|passage|document|article|excerpt)s?\b"
    # "Passage 1": the passage named instead of what it says
    r"|\bpassages?\s+(?:\d+|one|two)\b"
    # "document outlines ...", "text provides ...", "document about ..."
    r"|\b(?:text|passage|document|article|excerpt)s?\s+(?:outlines?|provides?|contains?|"
    r"includes?|describes?|discuss(?:es)?|explains?|covers?|lists?|mentions?|gives?|says?|"
    r"states?|about)\b",
    re.IGNORECASE,
)


def points_at_source(answer: str) -> bool:
    """True when an answer points at the text instead of giving a fact ("document
    outlines procedures for ...", "the text provides statistical weather data", "follow
    the procedure described in the text"): the model found nothing to say. Written from
    a summary, the local model's answers did so for 13 of 35 kept handbook questions;
    answering from the source, for 2 of 25 kept TREC DL ones, and once "Passage 1"
    ("What documents provide information on public holidays?")."""
    return bool(_POINTS_AT_SOURCE.search(answer))


def repeats_question(question: str, answer: str) -> bool:
    """True when every content word of the answer is in the question ("what is the data
    handling guide?" answered "Data handling guide"; a query answered by itself): the
    model found no fact to give, so the question's label would be a passage that does not
    answer it. Of 165 answers the local model wrote in this project's runs (the handbook,
    the documentation pages), it caught 7, 6 of them the query itself; the seventh
    ("... class that implements the rerank method?" answered "the Rerank class") says
    no more than its query either.
    Edge case: an answer without content words is not caught here (`says_none`)."""
    said = set(content_words(answer))
    return bool(said) and said <= set(content_words(question))


_CODE_NOUN_TEXT = "function|method|snippet|example|parameter"
"""Code a technical page shows ("what does the function do?", seen on a documentation
site): a word after one names it ("the parameter timeout", "the method invoke"), unless
it is the question's verb."""
_CODE_NOUNS = frozenset(_CODE_NOUN_TEXT.split("|"))
_DOCUMENT_NOUNS = (
    "menu|author|writer|speaker|narrator|article|book|report|study|paper|survey|recipe|"
    "story|table|figure|chart|list|item|product|website|page|movie|film|song|show|summary|"
    "video|podcast|episode|photo|picture|image|guideline|rule|instruction|requirement|"
    "procedure|" + _CODE_NOUN_TEXT
)
"""Nouns that, unqualified after "the", point at a document the reader never saw."""
_DOCUMENT_NOUN_SET = frozenset(_DOCUMENT_NOUNS.split("|"))
_PLACE_NOUNS = (
    "company|firm|business|organization|organisation|store|shop|restaurant|hotel|school|"
    "team|manager|manufacturer|policy|plan|program|programme|project|contract|agreement|"
    "handbook|manual|guide|documentation"
)
"""Nouns that "the" may name in a corpus about one of them ("leave at the company", in
a company's handbook), but "this"/"these" never: "When was this company founded?"."""
_QUALIFIER_TEXT = (
    "of at for to in on from by called named titled that which who whose behind near about "
    "with between under"
)
_QUALIFIERS = frozenset(_QUALIFIER_TEXT.split())
"""Words that, right after a noun, say which one it is ("the menu at Luigi's")."""
_NOT_QUALIFIED = (
    r"(?:s|es)?(?:'s)?\b"
    # a qualifier that qualifies something: "the menu at Luigi's", not "this guide on?"
    rf"(?!\s+(?:{_QUALIFIER_TEXT.replace(' ', '|')})\s+[^\s?.!,;:])"
    # a name, a number or a quoted title follows: "the book Dune", "the paper 'Attention'",
    # or code's name: "the function `exec`", "the method generate()", "the parameter max_tokens"
    r"(?!\s+(?-i:[A-Z0-9\"'`\u201c\u2018]|[\w.]+\(|\w*_\w|\w+\.\w))"
)
_DANGLING = re.compile(
    rf"\b(?:the|this|that|these|those)\s+(?:{_DOCUMENT_NOUNS}){_NOT_QUALIFIED}"
    rf"|\b(?:this|these|those)\s+(?:{_PLACE_NOUNS}){_NOT_QUALIFIED}"
    r"|\b(?:this|these)\s+(?:one|ones|thing|things|person|people|place)\b"
    r"|\bthe\s+(?:above|following|aforementioned|latter|former)\b"
    r"|\b(?:mentioned|described|listed|shown)\s+(?:above|below|here)\b",
    re.IGNORECASE,
)


_HEAD_TEXT = (
    "number numbers name names price prices cost costs date dates time times title titles "
    "rating ratings review reviews size length page pages version release cast plot year "
    "code type id link address owner budget score fee fees limit deadline"
)
_HEADS = frozenset(_HEAD_TEXT.split())
"""Nouns that, after one of _DOCUMENT_NOUNS, make a compound with it ("the item number",
"the menu prices"): the compound is then what a qualifier after it qualifies."""
_VERB_TEXT = (
    "say says said mean means think thinks write writes wrote recommend recommends suggest "
    "suggests offer offers sell sells serve serves include includes cover covers use uses "
    "need needs require requires describe describes mention mentions explain explains "
    "show shows claim claims argue argues "
    # a participle after "was the <noun>": "when was the video released"
    "taken released posted uploaded filmed made published recorded shot produced created "
    "painted built"
)
_VERBS = frozenset(_VERB_TEXT.split())
"""Verbs a document noun is the subject of ("what the author says"): not a name."""
_AUXILIARY = re.compile(r"\b(?:do|does|did|can|could|will|would|should|shall|may|might|must)\b")
"""Before "the <noun>", the word after the noun is the question's verb ("how much does
the product cost in euros"), neither a compound's head nor a name."""


def _code_named(question: str, m: re.Match[str]) -> bool:
    """Whether "the <code noun>" `m` is named by the words after it: any word but a
    function word ("the function do"), and, right after an auxiliary ("what does the
    function return"), only when a verb follows the name ("what does the parameter
    timeout control")."""
    after = re.findall(r"[\w-]+", question[m.end() :])
    if not after or after[0].lower() in _FUNCTION_WORDS:
        return False
    right_after_auxiliary = re.search(rf"{_AUXILIARY.pattern}\s+$", question[: m.start()].lower())
    return not (right_after_auxiliary and len(after) == 1)


def _qualified_later(question: str, m: re.Match[str]) -> bool:
    """True when the reference `m` ("the <noun>") is qualified one word on: a compound
    with a qualifier after it ("the item number on a W-2 form", "the menu prices at
    Luigi's"), or, in a question typed all in lower case (as the query style asks), a
    name after it ("who wrote the book dune", "cast of the show friends"). Never after
    "this"/"these", nor after an auxiliary ("does", "can", ...) before it."""
    words = m.group(0).lower().split()
    noun = words[-1].removesuffix("'s")
    if words[0] != "the" or not {noun, noun[:-1], noun[:-2]} & _DOCUMENT_NOUN_SET:
        return False  # "the above", "this product": never qualified later
    if {noun, noun[:-1]} & _CODE_NOUNS:
        return _code_named(question, m)
    if _AUXILIARY.search(question.lower(), 0, m.start()):
        return False
    nxt = re.match(r"\s+([\w-]+)(?:\s+([\w-]+))?", question[m.end() :])
    if nxt is None:
        return False
    first, second = nxt.group(1).lower(), (nxt.group(2) or "").lower()
    if first in _HEADS and second in _QUALIFIERS:
        return True
    if any(ch.isupper() for ch in question):
        return False  # with capitals, a name would have one (the regex checks that)
    not_names = _FUNCTION_WORDS | _QUALIFIERS | _HEADS | _VERBS | _DOCUMENT_NOUN_SET
    return first not in not_names


_ASKING = "(?:What|Who|Whom|Whose|When|Where|Why|How|Which|Is|Are|Was|Were|Does|Do|Did|Can|The)"
"""Capitalised words that open a question, not a name ("Which menu" qualifies nothing)."""


_PRONOUN = re.compile(
    r"\b(?:it"
    # the dummy "it" of "is it safe to ...", "it seems that ...", "is it worth buying ..."
    r"(?!(?:\s+\w+){0,2}\s+(?:to|that|if|whether|worth\s+\w+ing)\b)"
    # and of time taken: "how long does it (usually) take (for) an egg to hatch"
    r"(?!\s+(?:\w+ly\s+)?(?:take|takes|took)\s+(?:for\b|(?:[\w'-]+\s+){1,4}to\s+\w))"
    # and of the weather: "does it rain", "is it snowing", "does it ever freeze"
    r"(?!\s+(?:\w+ly\s+|ever\s+|often\s+|still\s+)?"
    r"(?:rain|snow|hail|sleet|drizzl|pour|storm|freez|thunder)\w*\b)"
    r"|its|he|him|his|she|her)\b",
    re.IGNORECASE,
)
"""Pronouns that need something named before them to point at. Not "they", which users
use for anyone ("how do they test for diabetes"), nor the dummy "it" that points at
nothing: "is it safe to ...", "it seems that ...", "is it worth buying ..." (followed by
to, that, if, whether or worth ...ing within three words; "does it take (for) an egg
to hatch"), and the weather's ("does it rain in Seattle")."""
_FUNCTION_WORD_TEXT = (
    "what who whom whose when where why how which is are was were be been do does did "
    "can could should would will shall may might must has have had get gets got i you we "
    "me my your our us a an the and or but if of to in on at for by with from as so "
    # a question's measure words name nothing either: "How much does it cost?"
    "much many long big old far often tall large high year"
)
_FUNCTION_WORDS = frozenset(_FUNCTION_WORD_TEXT.split())
"""Words that name nothing: a pronoun after only these has no antecedent."""
_UNSEEN_TEXT = re.compile(
    # not the existential "there" of "how many planets are there?"
    r"\b(?:this|that|these|those|(?<!\bis\s)(?<!\bare\s)(?<!\bwas\s)(?<!\bwere\s)there)"
    r"(?:\s+(?:about|for|from|of|mean|means|say|says|cover|covers|do|does))?\s*[?.!]*\s*$"
    r"|\b(?:mentioned|described|listed|shown|discussed|given|above|below)\s*[?.!]*\s*$"
    r"|\b(?:the|this)\s+search\s+(?:engine|system|tool)\b(?!\s+(?-i:[A-Z0-9\"]))",
    re.IGNORECASE,
)
"""A demonstrative or "there" that ends the question ("Who wrote this?", "How many
people work there?", "what is this about?"; not "how many are there?"), a word that ends
it pointing at a text ("the deadline mentioned?", "the section above"), and "the search
engine" the generator was told it writes for."""


def _unnamed_pronoun(question: str) -> str | None:
    """The first pronoun of `question` with no named thing before it ("What does it
    cost?", "When was he born?"), or None ("How do I reset my password if it expired?"
    names the password first)."""
    m = _PRONOUN.search(question)
    if m is None:
        return None
    before = re.findall(r"[A-Za-z][\w'-]*", question[: m.start()])
    if any(w.lower() not in _FUNCTION_WORDS for w in before):
        return None
    return m.group(0)


def dangling_reference(question: str) -> str | None:
    """The reference without an antecedent in `question` ("the menu", "this company",
    "the author", "the above", "What does it cost?", "Who wrote this?", "the deadline
    mentioned?"), or None. A reference qualified right after it ("the menu at Luigi's",
    "the author of Dune", "the company Acme", "the paper 'Attention Is All You Need'"),
    one word on (`_qualified_later`: "the item number on a W-2 form", "who wrote the
    book dune" in a lower-case query) or a name the question gives is not dangling.
    Conservative: only nouns that, unqualified, point at a document the reader never
    saw (_DOCUMENT_NOUNS; _PLACE_NOUNS after "this" only), so "the capital of France",
    "the heart" and "leave at the company" pass; a pronoun only when nothing but
    function words (and a question's measure words) come before it.

    The small local model cannot judge this itself: asked "does this query make sense
    on its own?", it answered yes to all of ten questions such as "What does it cost?"
    and "Who wrote this?", and its 1-5 stand-alone score dropped 17 of 19 good questions
    of a handbook run (`generate.standalone_critic`)."""
    unseen = _UNSEEN_TEXT.search(question)
    if unseen is not None:
        return unseen.group(0).strip(" ?.!")
    pronoun = _unnamed_pronoun(question)
    if pronoun is not None:
        return pronoun
    for m in _DANGLING.finditer(question):
        noun = m.group(0).split()[-1].lower().removesuffix("'s")
        stem = noun.rstrip("s")
        # the noun named with a qualifier elsewhere ("Acme's menu ... the menu") is resolved
        rest = question[: m.start()] + question[m.end() :]
        if re.search(rf"\b(?!{_ASKING}\b)[A-Z][\w&.-]*(?:'s)?\s+{stem}", rest):
            continue
        if _qualified_later(question, m):
            continue
        return m.group(0)
    return None


MAX_QUESTION_CHARS = 1000
"""A longer generated question (or paraphrase) is malformed: no real question is that
long, and a hostile or looping model must not fill the questions file."""

MAX_NESTING = 32
"""Objects nested deeper than this (counting [ and {) are never parsed: a draft or a
critique is a flat object, and this bound keeps reading a reply linear in its length."""


_BRACKETS = re.compile(r"[{}\[\]]")


def _object_spans(text: str) -> list[tuple[int, int]]:
    """Every balanced {...} span of `text` whose inner nesting is at most MAX_NESTING, in
    order of its opening brace. One pass: each brace is pushed and popped once, and the
    deepest bracket level seen inside a span is carried up to the span around it."""
    spans: list[tuple[int, int]] = []
    stack: list[list[int]] = []  # [start, nesting level at start, deepest level inside]
    level = 0
    for m in _BRACKETS.finditer(text):
        ch, i = m.group(), m.start()
        if ch in "{[":
            level += 1
            if ch == "{":
                stack.append([i, level, level])
            elif stack and level > stack[-1][2]:
                stack[-1][2] = level
            continue
        if ch == "}" and stack:
            start, at, deepest = stack.pop()
            if deepest - at < MAX_NESTING:
                spans.append((start, i))
            if stack and deepest > stack[-1][2]:
                stack[-1][2] = deepest
        level = max(0, level - 1)
    spans.sort()
    return spans


def _json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text` (models wrap JSON in prose or code fences): the
    balanced {...} spans are tried by their opening brace. Spans nested deeper than
    MAX_NESTING are skipped, so each character is parsed a bounded number of times."""
    for start, end in _object_spans(text):
        try:
            obj = json.loads(text[start : end + 1])
        except (json.JSONDecodeError, RecursionError):
            continue
        return obj if isinstance(obj, dict) else None
    return None


@dataclass(frozen=True)
class Draft:
    """A generated question before critique: its text, answer and optional paraphrase."""

    question: str
    answer: str
    paraphrase: str | None = None


CUT_OFF = "the reply stopped at its token limit before its JSON closed"
"""Why a reply that opens a JSON object and never closes it is unusable: the model ran
out of max_tokens (a grammar fixes a reply's shape, not its length)."""


def cut_off(text: str) -> bool:
    """True when `text` opens a JSON object whose brackets never all close again (from
    its first brace, [ and { are counted up and ] and } down, and the count never comes
    back to zero): a reply truncated at max_tokens. One pass over the brackets."""
    first = text.find("{")
    if first < 0:
        return False
    level = 0
    for m in _BRACKETS.finditer(text, first):
        level += 1 if m.group() in "{[" else -1
        if level <= 0:
            return False
    return True


NEAR_BOUND = 16
"""Characters short of a grammar's string bound within which a string may still have
been cut: the next word's token did not fit, so the grammar let only the closing quote
through ("... backup and peripherals requirements for", 99 characters of 100)."""


_ENDS = ("?", ".", "!", ")", '"', "`", "\uff1f", "\u3002", "\uff01")
"""What ends a finished question (full-width ？ 。 ！ too)."""
NEAR_WORD = 8
"""Characters short of a grammar's string bound within which a string that does not end
a sentence ("?", ".", "!") was cut: its next token did not fit, often mid-word ("...
waiting on shared res", 99 characters of 100; "... library-scie")."""


def _cut_at_bound(value: str, bound: int) -> bool:
    """True when `value` filled its grammar's `bound`, ends within NEAR_WORD characters of
    it without ending a sentence, or ends on a function word ("for", "and", "the") within
    NEAR_BOUND characters of it: cut there, not finished."""
    text = value.rstrip()
    if len(value) >= bound:
        return True
    if len(text) >= bound - NEAR_WORD and not text.endswith(_ENDS):
        return True
    words = text.split()
    return (
        len(text) >= bound - NEAR_BOUND
        and bool(words)
        and words[-1].lower().strip(",;:") in _FUNCTION_WORDS
    )


_SEARCH_COMMAND = re.compile(
    # "search for", "search", "find", "look up", "look for" ...
    # (not the nouns "search results", "search engine" ..., nor "find out")
    r"^\s*(?:please\s+)?(?:search(?:\s+for)?|find(?:\s+me)?|look\s+(?:up|for)|lookup)\s*:?\s+"
    r"(?!(?:results?|engines?|history|bar|box|index|quer(?:y|ies)|function|feature|tool|"
    r"terms?|out)\b)"
    # ... "a", "the", "any" ...
    r"(?:(?:a|an|the|any|some)\s+)?"
    # ... "(search engine) document(s) about", "information on", "pages for"
    r"(?:(?:search\s+engine\s+)?(?:documents?|docs?|information|info|pages?)\s+"
    r"(?:about|on|for|regarding|of)\s+)?",
    re.IGNORECASE,
)
"""A query written as a command to the search box rather than its terms."""


_NOT_A_QUERY = frozenset(
    "now here there something anything everything nothing yourself myself more".split()  # noqa: SIM905
)
"""Words that, alone after "search" or "find", are no query ("find something")."""


def search_terms(query: str) -> str:
    """The query without a command to the search box before its terms ("search for
    password manager instructions" -> "password manager instructions", "find document
    about working from home" -> "working from home"): what a user types is the terms.
    Asked for the query a user would type, the local model began 7 of 40 kept handbook
    queries with "search" or "find". Unchanged when less than two words would be left
    ("find it"), unless that one word is a query: three letters or more (any length in
    another script), neither a function word nor one of _NOT_A_QUERY ("search
    Legionellosis" -> "Legionellosis", kept as it was on TREC DL at `--n 100`; "search
    covid-19" -> "covid-19"; "find something" stays)."""
    m = _SEARCH_COMMAND.match(query)
    if m is None:
        return query
    rest = query[m.end() :].strip()
    one = rest.split()
    if len(one) >= 2:
        return rest
    word = one[0].strip("?.!,;:").lower() if one else ""
    if (len(word) >= 3 or not word.isascii()) and word not in _NOT_A_QUERY | STOPWORDS:
        return rest
    return query


_NAMES_THE_SEARCH = re.compile(r"\bsearch\s+(?:engines?|quer(?:y|ies)|box(?:es)?)\b", re.IGNORECASE)


def names_the_search(question: str, passages: Sequence[str]) -> str | None:
    """The words of a query that name the search it is typed into ("search engine",
    "search query", "search box") when its source passages never mention one, else None:
    the writing model echoes its prompt. While the system message said "test questions
    for a search engine" (`prompts.SYSTEM` no longer does), it did so in 4 of 40 kept
    handbook queries ("how do i submit a claim to a search engine?", "what is the search
    query for release planning documents"); the query prompts still say "search query".
    No user types that into the box, and it names nothing the documents are about."""
    m = _NAMES_THE_SEARCH.search(question)
    if m is None or any(_NAMES_THE_SEARCH.search(p) for p in passages):
        return None
    return m.group(0)


_SHOWN_TEXT = "passages?|excerpts?|snippets?|paragraphs?|summary|summaries"
"""What the writing model read (a passage) or, in the query style, wrote first (the
one-line summary the query is written from)."""
_SHOWN = re.compile(
    # not a kind of summary users search for: "plot summary of hamlet"
    r"(?<!plot )(?<!executive )(?<!chapter )(?<!book )(?<!episode )"
    rf"\b(?:{_SHOWN_TEXT})\b",
    re.IGNORECASE,
)
_DOC_TEXT = "documents?|texts?|articles?"
"""Other names of the text a query came from, which users also search for."""
_EDGE_NOUNS = f"{_SHOWN_TEXT}|{_DOC_TEXT}"
_LEADING_SOURCE = re.compile(
    # "summary of ...", "passage for ...", but "text of the gettysburg address" and
    # "documents for passport renewal" ask for the text or the documents
    rf"^\s*(?:(?P<shown>{_SHOWN_TEXT})\s+(?:about|on|of|regarding|for)"
    rf"|(?P<doc>{_DOC_TEXT})\s+(?:about|on|regarding))\s+",
    re.IGNORECASE,
)
_TRAILING_SOURCE = re.compile(rf"\s+(?P<noun>{_EDGE_NOUNS})\s*(?P<end>[?.!]*)\s*$", re.IGNORECASE)


def _source_uses(noun: str, passages: Sequence[str]) -> bool:
    """Whether any of `passages` has a word starting as `noun` does, its plural or final
    "y" left out ("summary" in "summaries", "documents" in "documentation")."""
    word = noun.lower()
    stem = word[:-3] if word.endswith("ies") else word.removesuffix("s").removesuffix("y")
    return any(re.search(rf"\b{re.escape(stem)}", p, re.IGNORECASE) for p in passages)


def without_source_noun(query: str, passages: Sequence[str]) -> str:
    """`query` without a leading "passage about", "summary of", "document on" ... or a
    trailing "document", "passage" ... that none of its source `passages` uses: the
    writing model named the text it was shown (or, in the query style, the summary it
    wrote; the query prompt opens "About a document:") before or after the terms a user
    would type. "passage about the sinking of the lusitania by a german submarine"
    becomes "the sinking of the lusitania by a german submarine", "forensic anthropology
    document" becomes "forensic anthropology" (3 of 200 kept TREC DL queries, `--n 100`,
    seeds 0 and 1). A noun its source uses stays ("tax documents" from a page on tax
    documents), and so does a query that would keep fewer than two words. A trailing
    noun goes only from a query of keywords, with no function word ("what is a legal
    document?", "how to cite a journal article" keep theirs), and a leading "text of" or
    "documents for" stays ("text of the gettysburg address" asks for the text)."""
    out = query
    lead = _LEADING_SOURCE.match(out)
    if lead and not _source_uses(lead.group("shown") or lead.group("doc"), passages):
        rest = out[lead.end() :]
        if len(rest.split()) >= 2:
            out = rest
    tail = _TRAILING_SOURCE.search(out)
    if tail and not _source_uses(tail.group("noun"), passages):
        before = re.findall(r"[\w'-]+", out[: tail.start()])
        if len(before) >= 2 and not any(w.lower() in _FUNCTION_WORDS for w in before):
            out = out[: tail.start()] + tail.group("end")
    return out


def names_its_source(question: str, passages: Sequence[str]) -> str | None:
    """The first word of `question` that names what its writer was shown or wrote
    (passage, excerpt, snippet, paragraph, summary) when none of its source `passages`
    uses it, else None: the question leans on a text the user never saw. "what is Nelson
    Mandela's summary about imprisonment?" and "summary of yeast characteristics" were
    kept on TREC DL before this; "the passage", "this excerpt" and the like are
    `mentions_source`'s, whatever the source says. Edge case: a source that uses the
    word ("a summary of benefits" in a handbook) keeps questions that use it too."""
    for m in _SHOWN.finditer(question):
        if not _source_uses(m.group(0), passages):
            return m.group(0)
    return None


ECHO_WORDS = 4
"""Words in a row a question must share with its instructions (and not with its source)
to be an echo of them: three would catch "how to write" in a guide on writing."""


def _word_runs(text: str) -> set[tuple[str, ...]]:
    """Every ECHO_WORDS words in a row of `text`, lower case."""
    tokens = words(text)
    return {tuple(tokens[i : i + ECHO_WORDS]) for i in range(len(tokens) - ECHO_WORDS + 1)}


@functools.lru_cache(maxsize=8)
def _instruction_runs(instructions: tuple[str, ...]) -> frozenset[tuple[str, ...]]:
    return frozenset().union(*(_word_runs(t) for t in instructions))


TASK_WORDS = frozenset(
    """reader readers look document documents missing fact facts summary query queries
    passage passages answer answers paraphrase question questions text context excerpt
    snippet name detail topic""".split()  # noqa: SIM905
)
"""The writing prompts' words for the task itself, not for anything a corpus is about:
a query made of nothing else, none of them its source's, echoes its instructions."""


def echoes_prompt(
    question: str, passages: Sequence[str], instructions: Sequence[str]
) -> str | None:
    """What `question` copied from its writing prompts' fixed `instructions`
    (`prompts.writing_instructions`), else None: the first ECHO_WORDS words in a row it
    shares with them and none of its source `passages` has, joined by spaces, or, when
    its content words are all TASK_WORDS and none its source's, those words.
    "what is a fact a reader would look for in a document about Jamaica" (the summary
    prompt asks for "the one fact a reader would look for"), "what does a reader look
    for in a document" and "missing" (the unanswerable prompt's field) were kept on TREC
    DL before this. Edge case: a question without content words is not an echo."""
    instructions = tuple(instructions)
    shared = _word_runs(question) & _instruction_runs(instructions)
    if shared:
        own = set().union(*(_word_runs(p) for p in passages))
        tokens = words(question)
        for i in range(len(tokens) - ECHO_WORDS + 1):
            run = tuple(tokens[i : i + ECHO_WORDS])
            if run in shared and run not in own:
                return " ".join(run)
    asked = list(dict.fromkeys(content_words(question)))
    if asked and set(asked) <= TASK_WORDS:
        given = set(content_words(" ".join(passages)))
        if not given & set(asked):
            return " ".join(asked)
    return None


def _script(ch: str) -> str:
    """A letter's script as the first word of its Unicode name (LATIN, CJK, CYRILLIC)."""
    return unicodedata.name(ch, "?").split()[0]


def clip_script_drift(answer: str, sources: Sequence[str]) -> str:
    """`answer` up to its first letter of a script that none of `sources` uses, without
    the punctuation left before it. The local model (Qwen2.5-Coder) sometimes ends an
    English answer in Chinese: "... specialized to transport水分," (4 of 181 answers in
    ten generated files on TREC DL and the handbook)."""
    known = {_script(ch) for text in sources for ch in text if ch.isalpha()}
    for i, ch in enumerate(answer):
        if ch.isalpha() and _script(ch) not in known:
            return answer[:i].rstrip(" ,;:-")
    return answer


def parse_draft(text: str, bound: int | None = None, answer: str | None = None) -> Draft | str:
    """The draft in a generation reply, or why it cannot be used (a one-line reason).

    `bound`: the longest string the reply's grammar allowed (prompts.field_chars), when
    a grammar held it. A question or paraphrase that fills it was cut there by the
    grammar, mid-word as likely as not, and is not kept; so is one that ends on a
    function word just short of it (`_cut_at_bound`). `answer`: the draft's answer when
    the reply was not asked for one (an unanswerable question's). A command to the search
    box before a question's terms is dropped (`search_terms`)."""
    obj = _json_object(text)
    if obj is None:
        return CUT_OFF if cut_off(text) else "the reply is not a JSON object"
    q, p = obj.get("question"), obj.get("paraphrase")
    a = answer if answer is not None else obj.get("answer")
    if not isinstance(q, str) or not q.strip():
        return "no question in the reply"
    for name, value in (("question", q), ("paraphrase", p)):
        if bound is not None and isinstance(value, str) and _cut_at_bound(value, bound):
            return f"the {name} filled its {bound}-character bound: {CUT_OFF}"
    if not isinstance(a, str) or not a.strip():
        return "no answer in the reply"
    if len(a.strip()) >= MAX_ANSWER_CHARS:
        return f"the answer has {len(a.strip())} characters (limit {MAX_ANSWER_CHARS})"
    para = p.strip() if isinstance(p, str) and p.strip() else None
    for name, value in (("question", q.strip()), ("paraphrase", para or "")):
        if len(value) > MAX_QUESTION_CHARS:
            return f"the {name} has {len(value)} characters (limit {MAX_QUESTION_CHARS})"
    return Draft(
        question=search_terms(" ".join(q.split())),
        answer=a.strip(),
        paraphrase=search_terms(para) if para is not None else None,
    )


@dataclass(frozen=True)
class Critique:
    """Scores 1-5 per criterion with the critic's reason for each."""

    scores: dict[str, int]
    reasons: dict[str, str]


def parse_critique(text: str, criteria: tuple[str, ...] = CRITERIA) -> Critique | str:
    """The critique of `criteria` in a reply, or why it cannot be read. Each criterion
    needs an integer score 1-5 (a number in a string counts); a missing reason is an
    empty one."""
    obj = _json_object(text)
    if obj is None:
        return "the critique is not a JSON object"
    scores: dict[str, int] = {}
    reasons: dict[str, str] = {}
    for c in criteria:
        value = obj.get(c)
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
            return f"no score 1-5 for {c} in the critique"
        scores[c] = value
        why = obj.get(f"{c}_why", "")
        reasons[c] = str(why) if why is not None else ""
    return Critique(scores=scores, reasons=reasons)


def failed_filters(qtype: str, critique: Critique, min_score: int) -> list[str]:
    """The criteria this critique fails, in CRITERIA order (empty: keep the question).

    Every score it has must be >= min_score, except groundedness for unanswerable
    questions, which is not asked of them (the pipeline checks they are not answered
    instead)."""
    failed = []
    for c in CRITERIA:
        if c not in critique.scores or (c == "groundedness" and qtype == "unanswerable"):
            continue
        if critique.scores[c] < min_score:
            failed.append(c)
    return failed
