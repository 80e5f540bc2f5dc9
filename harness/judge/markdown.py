"""Markdown (and reStructuredText) markup taken out of a passage before extractive
judging, with the way back.

A small judge asked to copy the answering sentence of a markdown passage answered NONE
for bold and list text (#22): under a grammar it must reproduce `**` and `1.` exactly,
and without one it drops them and its copy no longer matches. So the extractive prompt
shows the passage as plain text, its sentences (and grammar) come from that text, and
`Stripped.original_span` maps a span of the plain text back to the passage, so what the
judge quoted is still located in the passage the run retrieved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Each rule: a pattern and the groups of it that are text (the rest of the match is
# markup). Applied in this order, each on the previous one's output, so a list bullet
# `* ` is gone before the single-star emphasis rule could pair it with a later star.
_RULES: tuple[tuple[re.Pattern[str], tuple[int, ...]], ...] = (
    # reStructuredText: section under- and overlines, hyperlink targets, comments'
    # and directives' markers (`.. note::`; the directive's text stays), `::` ending a
    # paragraph before a literal block ("Example::" -> "Example:")
    (re.compile(r"(?m)^[ \t]*([=\-^*+#:.])\1{2,}[ \t]*(?:\n|$)"), ()),
    (re.compile(r"(?m)^[ \t]*\.\. _[^\n]*(?:\n|$)"), ()),
    (re.compile(r"(?m)^[ \t]*\.\. (?:[\w:-]+::[ \t]*)?"), ()),
    (re.compile(r"(?m)^[ \t]*::[ \t]*(?:\n|$)"), ()),
    (re.compile(r"(?m)(?<=\S)(:):[ \t]*$"), (1,)),
    # reStructuredText roles and links: :ref:`Title <target>`, `text <url>`_ -> the text
    # (not the fences and quotes of code: ``` and ~~~ lines, a docstring's quotes)
    (re.compile(r"(?<![\w:]):[A-Za-z][\w.+-]*:`([^`\n]+?)(?:[ \t]*<[^<>`\n]*>)?`"), (1,)),
    (re.compile(r"(?<!`)`([^`<\n]+?)[ \t]*<[^<>`\n]*>`__?"), (1,)),
    # heading #'s, list bullets and numbering, block quotes at the start of a line
    (re.compile(r"(?m)^[ \t]*(?:#{1,6}[ \t]+|[-*+][ \t]+|\d{1,9}[.)][ \t]+|>[ \t]?)"), ()),
    # closing #'s of a heading line
    (re.compile(r"(?m)[ \t]+#+[ \t]*$"), ()),
    # [text](url) and ![alt](url) -> text, alt
    (re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)"), (1,)),
    # `code` and ``code``
    (re.compile(r"(`+)([^`\n]+?)\1"), (2,)),
    # **bold** and __bold__
    (re.compile(r"(\*\*|__)(?=\S)([^\n]+?)(?<=\S)\1"), (2,)),
    # *italic* and _italic_ (an underscore inside a word, as in snake_case, is text)
    (re.compile(r"(?<![*\w])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![*\w])"), (1,)),
    (re.compile(r"(?<![_\w])_(?=\S)([^_\n]+?)(?<=\S)_(?![_\w])"), (1,)),
)


@dataclass(frozen=True)
class Stripped:
    """A passage without its markdown markup, and where each character came from."""

    text: str
    where: tuple[int, ...]
    """For each character of `text`, its index in the original passage."""

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original passage that `text[start:end]` (non-empty) came from,
        from its first character to its last (markup inside the span included)."""
        return self.where[start], self.where[end - 1] + 1


def _apply(
    text: str, where: list[int], pattern: re.Pattern[str], keep: tuple[int, ...]
) -> tuple[str, list[int]]:
    chars: list[str] = []
    out: list[int] = []
    pos = 0
    for m in pattern.finditer(text):
        chars.append(text[pos : m.start()])
        out.extend(where[pos : m.start()])
        for g in keep:
            a, b = m.span(g)
            chars.append(text[a:b])
            out.extend(where[a:b])
        pos = m.end()
    chars.append(text[pos:])
    out.extend(where[pos:])
    return "".join(chars), out


def strip_markdown(text: str) -> Stripped:
    """`text` without markdown emphasis (`**`, `__`, `*`, `_` pairs), code backticks,
    list bullets and numbering, heading #'s, block-quote marks and link syntax
    (`[text](url)` -> text), nor reStructuredText's section lines, directive and target
    markers, roles and links (`:ref:`Title <target>`` -> Title), each kept character
    mapped to its index in `text`. Plain text comes back unchanged."""
    where = list(range(len(text)))
    for pattern, keep in _RULES:
        text, where = _apply(text, where, pattern, keep)
    return Stripped(text, tuple(where))
