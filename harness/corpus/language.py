"""The language a text is written in: generated questions are asked in their passage's
(`harness.generate`), and a run warns when most documents are in one its embedder was
not trained on (`harness.pipeline.prepare.language_warning`).

The generator's prompts are English, and a small model answers English prompts in
English: on a German handbook it wrote "how many vacation days do employees get?", never
"Wie viele Urlaubstage bekomme ich?". A team whose users ask in German would then choose
settings on English queries against German passages, a cross-lingual search its users
never run. `passage_language` tells the language from the words and letters themselves
(no model, no network), and the prompts of a passage not in English say which language to
write in (`write_in`); an English passage's prompts are left exactly as they were, so
English corpora generate and cache as before.

A Latin-script passage is the language whose most common words make up the largest share
of its words, among English, German, French, Spanish, Italian, Portuguese and Dutch, when
that share is at least MIN_SHARE and twice English's, from at least MIN_DISTINCT of those
words. In passages of 700 characters, English words make up a median of 20-33% of the
words of the handbook, the TREC DL development half and CISI, and 0-3% of a German
handbook's. A passage mostly in another script is named by it where one language writes
it (Korean, Japanese, Chinese, Greek, Thai); any other (Cyrillic, Arabic, Devanagari,
...) is OTHER: "the passage's language". A passage whose most common words are English,
or none of these: English; one of fewer than MIN_WORDS words: the language of most of the
corpus's documents (`corpus_language`).
"""

from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
from collections.abc import Sequence

from harness.words import words

ENGLISH = ""
"""The language of a passage in English, or one too short to tell: the prompts as they are."""
OTHER = "other"
"""A language `passage_language` does not name: the prompts say "the passage's language"."""


def _words(listed: str) -> frozenset[str]:
    return frozenset(listed.split())


COMMON_WORDS: dict[str, frozenset[str]] = {
    "English": _words(
        "the of and to is that for it as with was on are be by this or from at not which "
        "but have has can you your will if their they been were more"
    ),
    "German": _words(
        "der die das und ist nicht ein eine einen mit auf für von zu den dem des sich auch "
        "werden wird sind bei oder nach wie aus im wenn kann über zum zur"
    ),
    "French": _words(
        "le la les et est des une du pour que qui dans sur pas par avec sont cette au aux "
        "elle ou leur plus être nous vous"
    ),
    "Spanish": _words(
        "el la los las es que en una por para con del se su al lo como más pero sus este "
        "esta ser está también"
    ),
    "Italian": _words(
        "il di che non della sono gli nel una con alla delle anche del si è più questo "
        "questa essere dei"
    ),
    "Portuguese": _words(
        "da em um uma para com não dos das ao mais pelo pela que se é são como este esta"
    ),
    "Dutch": _words(
        "het een en van dat op zijn niet met voor ook wordt bij aan deze naar worden kan"
    ),
}
"""The most common words of each language named by its words: articles, conjunctions,
prepositions, pronouns and auxiliaries, as its text runs them. Left out: words of one
letter (`e`, `o`, `y`: a program's variables) and words English text or code uses too (`de` in
"Charles de Gaulle", `do`, `no`, `per`, `son`, `os`)."""

SCRIPTS = (
    ("HANGUL", "Korean"),
    ("HIRAGANA", "Japanese"),
    ("KATAKANA", "Japanese"),
    ("CJK", "Chinese"),
    ("GREEK", "Greek"),
    ("THAI", "Thai"),
)
"""A letter's Unicode name prefix and the language its script is taken for; Japanese is
written in kana and kanji, so any kana makes a passage of Chinese characters Japanese."""

MIN_WORDS = 12
"""Fewer words than this and a passage is too short to tell: it is taken to be in the
corpus's language (`passage_language`'s default), and a document that short has no say
in what that is (`corpus_language`)."""
MIN_DISTINCT = 4
"""The fewest different words of a language's COMMON_WORDS a passage must hold to be that
language: one word repeated (a name, a term) is no language."""
MIN_SHARE = 0.08
"""The least share of a passage's words that a language's COMMON_WORDS must make up for
the passage to be that language rather than English (and twice English's share)."""


WIDE = ("Chinese", "Japanese", "Korean")
"""Languages whose one character (an ideograph, a kana, a Hangul syllable) carries what
several Latin letters do: each counts as WIDE_WEIGHT letters when `_script` weighs them
against the Latin letters around them (a Chinese page naming Kubernetes and PostgreSQL
is still Chinese)."""
WIDE_WEIGHT = 3


_ASCII_LETTER = re.compile(r"[A-Za-z]")
_NOT_ASCII = re.compile(r"[^\x00-\x7f]")


def _script(text: str) -> str | None:
    """The language named by the script most of `text`'s letters are in, OTHER for a
    script no one language writes, or None for a text mostly in Latin letters (WIDE
    scripts' characters weighed as WIDE_WEIGHT letters)."""
    counts: dict[str, int] = {}
    latin = len(_ASCII_LETTER.findall(text))  # the bulk of most texts, counted in C
    for ch in _NOT_ASCII.findall(text):
        if not ch.isalpha():
            continue
        name = unicodedata.name(ch, "")
        if name.startswith("LATIN"):
            latin += 1
            continue
        lang = next((lang for prefix, lang in SCRIPTS if name.startswith(prefix)), OTHER)
        counts[lang] = counts.get(lang, 0) + (WIDE_WEIGHT if lang in WIDE else 1)
    if latin >= sum(counts.values()):
        return None
    if counts.get("Japanese") and counts.get("Chinese"):
        counts["Japanese"] += counts.pop("Chinese")
    return max(counts, key=lambda lang: counts[lang])


def passage_language(texts: Sequence[str], default: str = ENGLISH) -> str:
    """The language `texts` (a candidate's passages, read together) are written in:
    ENGLISH (""), a language's English name ("German"), or OTHER; `default` (the
    corpus's, `corpus_language`) when they are too short to tell. See the module
    docstring for how it is told."""
    told = _tell("\n".join(texts))
    return default if told is None else told


def _tell(text: str) -> str | None:
    """`passage_language` of one text, None when it is too short to tell (MIN_WORDS)."""
    script = _script(text)
    if script is not None:
        return script
    ws = words(text)
    if len(ws) < MIN_WORDS:
        return None
    shares = {lang: sum(w in common for w in ws) / len(ws) for lang, common in COMMON_WORDS.items()}
    best = max(shares, key=lambda lang: shares[lang])
    if best == "English" or shares[best] < max(MIN_SHARE, 2 * shares["English"]):
        return ENGLISH
    if len(COMMON_WORDS[best].intersection(ws)) < MIN_DISTINCT:
        return ENGLISH
    return best


DOCUMENT_CHARS = 2000
"""What `corpus_language` reads of each document: its opening, enough to tell."""


_counted: dict[bytes, dict[str, int]] = {}
_counted_lock = threading.Lock()


def language_counts(texts: Sequence[str]) -> dict[str, int]:
    """How many of the documents `texts` are written in each language (each told from its
    first DOCUMENT_CHARS by `passage_language`; one too short to tell is not counted).
    Remembered by what it reads (a digest of those openings): a sweep loads its inputs
    for every trial, and generate asks for the corpus's language and its warning, where
    reading TREC DL's 5,358 documents takes about 0.8 s."""
    heads = [text[:DOCUMENT_CHARS] for text in texts]
    digest = hashlib.sha256()
    for head in heads:
        digest.update(head.encode("utf-8", "surrogatepass") + b"\0")
    key = digest.digest()
    with _counted_lock:
        if key in _counted:
            return dict(_counted[key])
    counts: dict[str, int] = {}
    for head in heads:
        lang = _tell(head)
        if lang is not None:
            counts[lang] = counts.get(lang, 0) + 1
    with _counted_lock:
        if len(_counted) >= 16:
            _counted.clear()
        _counted[key] = counts
    return dict(counts)


def corpus_language(texts: Sequence[str]) -> str:
    """The language most of the documents `texts` are written in (`language_counts`),
    ENGLISH on a tie or when none can tell: what a passage too short to tell is taken to
    be written in."""
    counts = language_counts(texts)
    if not counts:
        return ENGLISH
    top = max(counts.values())
    leaders = [lang for lang, n in counts.items() if n == top]
    return leaders[0] if len(leaders) == 1 else ENGLISH


def write_in(language: str, what: str, source: str = "the passage") -> str:
    """The sentence a prompt ends its instructions with for a passage not in English
    (" Write every field in German."; OTHER: "in the language of `source`"), or "" for
    ENGLISH."""
    if language == ENGLISH:
        return ""
    named = f"the language of {source}" if language == OTHER else language
    return f" Write {what} in {named}."
