"""Section headings of a text document, for its title and its passages' topics.

Recognised, outside code fences (``` or ~~~, so a `# comment` in a code block is code):
markdown's `# Heading` (1-6 #'s, closing #'s dropped), AsciiDoc's `= Heading`, and an
underlined line (reStructuredText's titles, markdown's setext headings): a line with
text, then a line of one repeated `= - ~ ^ * + #` at least as long as it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

_LINE = re.compile(
    r"^(?:(?:#{1,6}|={1,6})[ \t]+(?P<atx>[^\n]+)"
    r"|(?P<fence>`{3,}|~{3,})(?P<info>.*)"
    r"|(?P<text>[ \t]*\S[^\n]*)\n(?P<rule>(?P<ch>[=\-~^*+#])(?P=ch){2,})[ \t]*)$",
    re.MULTILINE,
)
"""Greedy to the line's end (a lazy pattern before trailing white space took seconds on
a line padded with spaces); the closing #'s and white space are taken off in code."""


def _atx_text(text: str) -> str:
    """An ATX heading's text without its closing #'s (`## Payroll ##` -> `Payroll`)."""
    text = text.rstrip()
    bare = text.rstrip("#")
    if bare != text and (not bare or bare[-1] in " \t"):
        text = bare
    return text.strip()


def closes_fence(marker: str, info: str, fence: str) -> bool:
    """Whether a fence line (`marker` then `info`) closes the code block `fence` opened:
    the same character, at least as many of it, and nothing after (CommonMark)."""
    return not info.strip() and marker[0] == fence[0] and len(marker) >= len(fence)


class Heading(NamedTuple):
    """A heading's text and where its line starts in the document."""

    start: int
    text: str


def first_heading(text: str) -> str:
    """The text of the first heading of `text` (a document's title), or ""."""
    first = next(headings(text), None)
    return first.text if first else ""


def headings(text: str) -> Iterator[Heading]:
    """The headings of `text` in order (see the module docstring), found as they are
    read: a caller that wants the first, or those above a point, reads no further."""
    fence = ""  # the open code fence's marker, "" outside one
    for m in _LINE.finditer(text):
        if m.group("fence"):
            marker, info = m.group("fence"), m.group("info")
            if not fence:
                fence = marker
            elif closes_fence(marker, info, fence):
                fence = ""
        elif fence:
            continue
        elif m.group("atx"):
            text = _atx_text(m.group("atx"))
            if text:
                yield Heading(m.start(), text)
        elif len(m.group("rule")) >= len(m.group("text").rstrip()):
            yield Heading(m.start(), m.group("text").strip())
