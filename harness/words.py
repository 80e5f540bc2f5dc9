"""Words as harness matches them: BM25's terms (the bm25 and hybrid rerankers, the exam's
near misses), a question's overlap with its passage, and a passage's word shingles.

A word is a run of letters, digits or underscores, lower-cased: "Mileage-rate, CARS!"
reads `mileage`, `rate`, `cars`. Chinese and Japanese write no spaces between words, so a
run of their characters (Han ideographs, hiragana, katakana) would be one "word" as long
as the sentence and would never match a question's; such a run is read instead as its
overlapping pairs of characters (`年假申请` reads `年假`, `假申`, `申请`), the bigrams
Lucene's CJK analyzer indexes, and a lone character as itself. Korean writes spaces
between words and is read as any other script.
"""

from __future__ import annotations

import re

CJK = r"\u3005\u3041-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
"""The ideographic iteration mark, hiragana, katakana (not the middle dot ・ nor ゠, which
are punctuation), the CJK ideographs (extension A, unified, compatibility) and half-width
katakana, as a regex character range (`export-config` writes the same range into its
code)."""
RUN = rf"[{CJK}]+|[^\W{CJK}]+"
"""A word, or a run of Chinese or Japanese characters (a regex)."""
_RUN = re.compile(RUN)
_CJK_RUN = re.compile(rf"[{CJK}]")
_WIDE = re.compile(rf"[{CJK}\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")


def wide_chars(text: str) -> int:
    """How many of `text`'s characters are Chinese, Japanese or Korean (CJK and Hangul):
    a model's tokenizer spends about a token on each, where English runs at about four
    characters a token, so a budget in tokens counts them apart."""
    return len(_WIDE.findall(text))


def words(text: str) -> list[str]:
    """The lower-cased words of `text` in order, repeats kept (see the module docstring):
    `\\w+` runs, with a run of Chinese or Japanese characters read as its character
    bigrams."""
    out: list[str] = []
    for m in _RUN.finditer(text.lower()):
        run = m.group()
        if _CJK_RUN.match(run) and len(run) > 1:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
        else:
            out.append(run)
    return out
