"""AsciiDoc (Asciidoctor, Antora documentation) read as the text its pages show.

An AsciiDoc page is written with markup its reader never sees as text; indexed as written
it lands in chunks and in the judge's prompts (`xref:cli:index.adoc[]`, `[source,ruby]`,
`----`, `:url-repo: https://...`, `{release-version}`). `asciidoc_text` keeps the text and
writes its structure as markdown, as the markdown reader keeps it:

- includes (`include::partial$intro.adoc[]`, with `tag=`/`tags=`, `lines=` and
  `leveloffset=`) are read in where they stand, given a way to read them (`include`);
  `ifdef::`/`ifndef::` read the page's attributes and those an HTML build sets
  (`backend-html5`; an Antora site's `env-site`), an `ifeval::` compares two values
  (one harness cannot read keeps its text), an escaped directive (`\\include::...`)
  reads as written, and no directive is read within a comment block (`////`); an
  optional include (`opts=optional`) of no file is left out without a word;
- the page's attribute entries (`:name: value`) are read, not shown, and `{name}` reads
  as its value (the page's, those given by the site, or a built-in character such as
  `{nbsp}`), `{counter:n}` as the counter's next value; a reference to an attribute
  nobody set stays as written, as Asciidoctor shows it, and so do references past
  MAX_ATTRIBUTE_CHARS of text they would add (entries that double one another);
- the document title (`= Title`) and section titles (`== Title`, markdown's `## Title`)
  become `#` headings, one level each (`leveloffset` applied); the author and revision
  lines under the title, comments, block attribute lines (`[source,ruby]`, `[NOTE]`,
  `[[id]]`), block and inline images, `toc::[]`, page breaks and rules are left out; a
  block title (`.Example`) stays as a line;
- listing and literal blocks (`----`, `....`, markdown's ```` ``` ````, an indented
  literal paragraph, a paragraph styled `[source]`) become fenced code in the language their `[source,lang]` names,
  without callout marks (`<1>`); a callout list reads as a numbered list;
- example, sidebar, quote and open blocks read as their text (a quote with its
  attribution), admonitions (`NOTE: ...`, `[TIP]` on a block) without their label,
  passthrough blocks without their HTML tags; a block ends at the first line that is
  its delimiter, as Asciidoctor reads it (a block nested in one of its kind takes a
  longer delimiter);
- tables as rows of cells (`| a | b |`, the header's rule under the first when there
  is one), CSV, TSV and DSV data split as such, an AsciiDoc cell (`a|`) read as a page
  on one line;
- lists as markdown's (`*`/`-`, nested `**`, ordered `.`), an item's text running on
  over its next lines, description lists as `term: text`, a hard line break (` +`) and
  a list continuation (`+`) without the `+`; as in Asciidoctor, a list line within a
  paragraph is its text;
- inline: cross references read as their text, else as the title of the section (or,
  through `xref_title`, the page) they name (`<<install,the install>>` reads "the
  install"); links and mailto links as their text (a bare URL as written); `kbd:[Ctrl+T]`,
  `btn:[Save]`, `menu:File[Save]`, `footnote:[...]` (in parentheses), index terms and
  passthroughs (`+{x}+`, `pass:[...]`) as their text; anchors, inline anchors and icons as
  nothing; `#highlight#` and role-styled text (`[.path]_a.yml_`) as their text;
  `{doctitle}` as the page's title. Emphasis and `monospace` stay as written: markdown
  reads them the same way.

A file without any of these reads byte for byte as written.
"""

from __future__ import annotations

import csv
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

from harness.corpus.markdown import IncludeRaw, NestedReader, fenced_lines, squeeze_blank_lines

XrefTitle = Callable[[str], str | None]
"""The title of the page a cross reference names (`cli:index.adoc`), or None."""

HTML_BUILD = {
    "backend": "html5",
    "backend-html5": "",
    "basebackend": "html",
    "basebackend-html": "",
    "doctype": "article",
    "doctype-article": "",
    "filetype": "html",
    "filetype-html": "",
    "outfilesuffix": ".html",
}
"""Attributes Asciidoctor sets when it builds an HTML page: `ifdef::backend-html5[]`
shows its text, `ifdef::backend-pdf[]` does not."""
BUILT_IN = {
    "empty": "",
    "blank": "",
    "sp": " ",
    "nbsp": "\u00a0",
    "zwsp": "\u200b",
    "wj": "\u2060",
    "apos": "'",
    "quot": '"',
    "lsquo": "\u2018",
    "rsquo": "\u2019",
    "ldquo": "\u201c",
    "rdquo": "\u201d",
    "deg": "\u00b0",
    "plus": "+",
    "brvbar": "\u00a6",
    "vbar": "|",
    "amp": "&",
    "lt": "<",
    "gt": ">",
    "startsb": "[",
    "endsb": "]",
    "caret": "^",
    "asterisk": "*",
    "tilde": "~",
    "backslash": "\\",
    "backtick": "`",
    "two-colons": "::",
    "two-semicolons": ";;",
    "cpp": "C++",
    "pp": "++",
}
"""Asciidoctor's character attributes: `{nbsp}` and the like read as what they stand for."""

_ENTRY = re.compile(r"^:(?P<pre>!)?(?P<name>\w[\w-]*)(?P<post>!)?:(?:[ \t]+(?P<value>.*))?$")
"""An attribute entry; its value keeps trailing white space (taken off in code: a lazy
match before it is quadratic on a line padded with spaces)."""
_INCLUDE = re.compile(r"^include::(?P<target>[^\[\s][^\[]*)\[(?P<attrs>[^\]]*)\][ \t]*$")
_CONDITIONAL = re.compile(
    r"^(?P<kind>ifn?def|ifeval|endif)::(?P<names>[^\[\s]*)\[(?P<text>.*)\][ \t]*$"
)
_TAG_MARK = re.compile(r"\b(?:tag|end)::(?:[\w-]+|\*\*?)\[\]")
_FENCE = re.compile(r"^(?P<fence>`{3,})[ \t]*(?P<lang>[\w+#.-]*)[ \t]*$")
"""A markdown-style code fence, which Asciidoctor reads as a listing."""
_DELIMITER = re.compile(r"^(?:-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--|[|,:!]={3,})[ \t]*$")
_SECTION = re.compile(r"^(?P<marks>={1,6}|#{1,6})[ \t]+(?P<text>\S.*)$")
"""A section title; its closing marks (`== Title ==`) are taken off in code."""
_BLOCK_ATTRS = re.compile(r"^\[(?P<attrs>[^\[\]]*|\[[^\[\]]+\])\][ \t]*$")
_BLOCK_TITLE = re.compile(r"^\.(?P<title>[^\s.].*)$")
_COMMENT = re.compile(r"^//(?!//)")
_BLOCK_MACRO = re.compile(r"^(?P<name>[a-z][\w-]*)::(?P<target>\S*?)\[(?P<attrs>.*)\][ \t]*$")
_ADMONITION = re.compile(r"^(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION):[ \t]+")
_LIST = re.compile(r"^[ \t]*(?P<marks>\*{1,5}|-|\.{1,5}|\d{1,9}\.)[ \t]+(?P<text>\S.*)$")
_CALLOUT_ITEM = re.compile(r"^<(?P<n>\d+|\.)>[ \t]+(?P<text>.*)$")
_CALLOUT_REVERSED = re.compile(
    r"^[ \t]*(?:(?:>--\d+--!<|>(?:\d+|\.)<)[ \t]*)+(?://|#|--|;;?|%)?[ \t]*"
)
"""Callout marks ending a code line (`puts x # <1>`, `<!--1-->`), written backwards:
matched at the start of the reversed line, so any line reads in linear time."""
_TERM = re.compile(r"^(?P<term>[^\s].*?)(?:::{1,3}|;;)(?:[ \t]+(?P<text>.*))?$")
_RULE = re.compile(r"^(?:'{3,}|<{3,}|(?:[-*_][ \t]*){3,})$")
_HARD_BREAK = re.compile(r"[ \t]\+$", re.MULTILINE)
_READS_AS_HEADING = re.compile(r"^[ \t]*(?:#{1,6}|={1,6})[ \t]")
_ATTRIBUTE_REF = re.compile(
    r"(?<!\\)\{(?:(?P<counter>counter2?):)?(?P<name>\w[\w-]*)(?(counter)(?::(?P<start>\w+))?)\}"
)
_ESCAPED_REF = re.compile(r"\\(\{\w[\w-]*\})")
_DIRECTIVE_LINE = re.compile(r"^(?:include|ifn?def|ifeval|endif)::")
_BLOCK_ANCHOR = re.compile(
    r"^\[\[(?P<id>[\w:.-]+)(?:,(?P<reftext>[^\]]*))?\]\][ \t]*$|^\[#(?P<id2>[\w:-]+)"
)

# Inline markup, applied in this order.
_PASS = re.compile(
    r"\+\+\+(?P<a>.+?)\+\+\+|pass:(?P<subs>[a-z,]*)\[(?P<b>(?:[^\[\]\\]|\\.|\[[^\[\]\n]*\])*)\]"
    r"|\+\+(?P<d>[^+\n](?:[^+\n]|\+(?!\+))*?)\+\+"
    r"|(?<![\w+])\+(?P<c>[^\s+](?:[^+\n]*[^\s+])?)\+(?![\w+])"
)
_XREF = re.compile(r"(?<![\w\\:/.@-])xref:(?P<target>[^\s\[]+)\[(?P<text>(?:[^\[\]\\]|\\.)*)\]")
_ANGLE_XREF = re.compile(r"<<(?P<target>[^\s,<>][^,<>]*?)(?:,[ \t]*(?P<text>[^<>]*?))?>>")
_LINK = re.compile(
    r"(?:(?<![\w\\:/.@-])link:(?P<target>[^\s\[]+)|(?<![\w/\\:.@-])(?P<url>"
    r"(?:https?|ftp|irc|file)://[^\s\[\]<>]+|mailto:[^\s\[\]]+|\{\w[\w-]*\}/[^\s\[\]<>]*))"
    r"\[(?P<text>(?:[^\[\]\\]|\\.)*)\]"
)
"""A link with its text; its target starts a word (`mailto:mailto:...` reads in linear
time). A target that opens with an attribute nobody set (`{url-org}/x[text]`) is a link
too: the site sets it."""
_ANGLE_URL = re.compile(r"<(?P<url>(?:https?|ftp)://[^\s<>]+)>")
_MACRO = re.compile(
    r"(?<![\w\\])(?P<name>kbd|btn|footnote|indexterm2?|stem|latexmath|asciimath):"
    r"\[(?P<text>(?:[^\[\]\\]|\\.)*)\]"
    r"|(?<![\w\\:/.@-])(?P<named>menu|anchor|image|icon):(?P<path>[^\s\[]*)"
    r"\[(?P<words>(?:[^\[\]\\]|\\.)*)\]"
)
"""Inline macros: those without a target (`kbd:[Ctrl+C]`, `footnote:[...]`, standing
even against a word's end, as in `sentence.footnote:[...]`), and those with one
(`image:logo.png[Logo]`), which start a word: a line of `image:image:...` reads in
linear time."""
_INLINE_ANCHOR = re.compile(r"\[\[[^\[\]\n]+\]\]|\[[.#]?[\w-]+(?:[.#][\w-]+)*\](?=[#_*`])")
"""An inline anchor (`[[id]]`), or the role or id given to quoted text (`[.path]_a.yml_`)."""
_INDEX_TERMS = re.compile(r"\(\(\((?P<hidden>[^()]+)\)\)\)|\(\((?P<term>[^()]+)\)\)")
_HIGHLIGHT = re.compile(
    r"(?:\[[.#]?[\w-]+(?:[.#][\w-]+)*\])?(?<![\w#])#(?P<text>[^\s#](?:[^#\n]*[^\s#])?)#(?![\w#])"
)
_CURVED = re.compile(r"""(?P<q>["'])`(?P<text>[^`\n]+?)`(?P=q)""")
_QUOTES = {'"': "\u201c{}\u201d", "'": "\u2018{}\u2019"}
_ESCAPED = re.compile(
    r"\\(\{\w[\w-]*\}|<<|\[\[|#|\+|(?:xref|link|https?|mailto|kbd|btn|menu|footnote|pass|image):)"
)
"""Markup escaped with a backslash, read as written without it."""
_TAGS = re.compile(r"<[^<>]+>")
_CELL_SPEC = re.compile(
    r"(?:^|(?<=\s))(?P<spec>(?:(?P<copies>\d+)\*)?(?:(?P<span>\d+)?(?:\.\d+)?\+)?"
    r"[<^>]?(?:\.[<^>])?(?P<style>[adehlmsv])?)$"
)
"""A table cell's spec, against the `|` that opens the cell: `3*` (copies), `2+` (columns
spanned), `.2+` (rows), alignment, and the cell's style letter (`a`: AsciiDoc)."""
DIRECTIVES = frozenset(["include", "ifdef", "ifndef", "ifeval", "endif"])
"""Preprocessor directives: a line naming one that is left after reading them was
escaped (`\\include::a.adoc[]`) and reads as text."""
_PLACEHOLDER = re.compile("\x00(\\d+)\x00")
MAX_ATTRIBUTE_CHARS = 100_000
"""An attribute whose value would grow past this through the references in it (entries
doubling one another) keeps its value as written."""
_VERBATIM_DELIMITER = re.compile(r"^(?:/{4,}|-{4,}|\.{4,}|\+{4,}|(?P<fence>`{3,})[\w+#.-]*)[ \t]*$")


def _attrlist(text: str) -> tuple[list[str], dict[str, str]]:
    """(positional values, named values) of an attribute list (`source,ruby,subs=+`),
    quotes honoured; a positional value loses its `#id`, `.role` and `%option`."""
    positional: list[str] = []
    named: dict[str, str] = {}
    for m in re.finditer(
        r'\s*(?:(?P<k>[\w-]+)\s*=\s*)?(?:"(?P<q>[^"]*)"|(?P<v>[^,]*))\s*(?:,|$)', text
    ):
        if m.end() == m.start():
            break
        value = m.group("q") if m.group("q") is not None else (m.group("v") or "").strip()
        if m.group("k"):
            named[m.group("k")] = value
        else:
            positional.append(value)
    if positional:
        options = re.findall(r"%([\w-]+)", positional[0])
        if options:
            named["options"] = ",".join([*options, named.get("options", "")])
        positional[0] = re.split(r"[#.%]", positional[0], maxsplit=1)[0]
    return positional, named


def _line_ranges(spec: str, count: int) -> set[int]:
    """The 1-based line numbers an include's `lines=` names (`1..5;8;10..-1`)."""
    keep: set[int] = set()
    for part in re.split(r"[;,]", spec.strip('"')):
        a, dots, b = part.strip().partition("..")
        try:
            start = int(a)
            end = (count if int(b) < 0 else int(b)) if dots and b.strip() else start
            if dots and not b.strip():
                end = count
        except ValueError:
            continue
        keep.update(range(max(start, 1), min(end, count) + 1))
    return keep


def _select(lines: list[str], named: dict[str, str]) -> list[str]:
    """An included file's lines an include's `lines=` and `tag=`/`tags=` select, without
    tag marker lines (`// tag::name[]`)."""
    if "lines" in named:
        keep = _line_ranges(named["lines"], len(lines))
        lines = [x for n, x in enumerate(lines, 1) if n in keep]
    tags = [t for t in re.split(r"[;,]", named.get("tags", named.get("tag", ""))) if t.strip()]
    if not tags or tags == ["**"]:
        return [x for x in lines if not _TAG_MARK.search(x)]
    wanted = {t.strip() for t in tags if not t.startswith("!")}
    unwanted = {t.strip()[1:] for t in tags if t.startswith("!")}
    everything = bool(wanted & {"*", "**"}) or not wanted
    out: list[str] = []
    open_tags: list[str] = []
    for line in lines:
        mark = re.search(r"\b(?P<kind>tag|end)::(?P<name>[\w-]+)\[\]", line)
        if mark:
            if mark.group("kind") == "tag":
                open_tags.append(mark.group("name"))
            elif mark.group("name") in open_tags:
                open_tags.remove(mark.group("name"))
            continue
        if unwanted & set(open_tags):
            continue
        if (everything and (open_tags or "**" in wanted or not wanted)) or wanted & set(open_tags):
            out.append(line)
    return out


def _substitute(text: str, attrs: dict[str, str]) -> str:
    """`{name}` as the attribute's value where one is set (a built-in character too);
    `{counter:name}` as the counter's next value (`{counter2:name}` as nothing);
    `\\{name}` as `{name}`; a reference to an attribute nobody set as written. Past
    MAX_ATTRIBUTE_CHARS of added text the references are left as written."""
    grown = [0]

    def value(m: re.Match[str]) -> str:
        if m.group("counter"):
            return _count(m, attrs)
        name = m.group("name").lower()
        found = attrs[name] if name in attrs else BUILT_IN.get(name)
        if found is None or grown[0] + len(found) > MAX_ATTRIBUTE_CHARS:
            return m.group(0)
        grown[0] += len(found)
        return found

    return _ESCAPED_REF.sub(r"\1", _ATTRIBUTE_REF.sub(value, text))


def _count(m: re.Match[str], attrs: dict[str, str]) -> str:
    """A counter's next value, kept in `attrs`: 1 (or the start given, a number or a
    letter) the first time, then the next; `counter2` shows nothing."""
    name = m.group("name").lower()
    now = attrs.get(name)
    if now is None:
        start = m.group("start") or "1"
        now = start
    elif now.isdigit():
        now = str(int(now) + 1)
    elif len(now) == 1 and now.isalpha():
        now = chr(ord(now) + 1)
    else:
        now = "1"
    attrs[name] = now
    return "" if m.group("counter") == "counter2" else now


def _expand(lines: list[str], include: IncludeRaw | None, attrs: dict[str, str]) -> list[str]:
    """The page's lines with its includes read in (with their own includes, as their
    `lines=`/`tags=` select them, a `leveloffset=` around them) and its conditionals
    (`ifdef::`, `ifndef::`, `endif::`) applied; attribute entries set `attrs` as met."""
    out: list[str] = []
    active: list[bool] = []  # open conditionals: whether each shows its lines
    offset = 0  # the leveloffset set so far (its entries are kept for the reader)
    block = ""  # the comment or verbatim block open: ////, ----, ...., ++++, ```

    def walk(lines: list[str], include: IncludeRaw | None) -> None:
        nonlocal offset, block
        for line in _joined_entries(lines):
            if block.startswith("/"):  # a comment block: no directive is read in it
                block = "" if line.rstrip() == block else block
                out.append(line)
                continue
            opens = _VERBATIM_DELIMITER.match(line)
            if opens and all(active):
                delim = opens.group("fence") or line.rstrip()
                block = "" if delim == block else block or delim
                if block.startswith("/"):
                    out.append(line)
                    continue
            cond = _CONDITIONAL.match(line)
            if cond:
                _conditional(cond, active, attrs, out)
                continue
            if not all(active):
                continue
            if line.startswith("\\") and _DIRECTIVE_LINE.match(line[1:]):
                out.append(line[1:])  # escaped: the directive as written
                continue
            entry = _ENTRY.match(line) if not block else None  # a listing's line is code
            if entry:
                _set(entry, attrs)
                if entry.group("name") == "leveloffset":
                    offset = _offset(entry.group("value") or "0", offset)
            m = _INCLUDE.match(line)
            if m is None:
                out.append(line)
                continue
            _, named = _attrlist(m.group("attrs"))
            optional = "optional" in f"{named.get('opts', '')},{named.get('options', '')}"
            target = _substitute(m.group("target").strip(), attrs)
            got = include(target, optional) if include else None
            if got is None:
                continue  # left out, as a page without the file shows it
            text, inner = got
            written = text.replace("\r\n", "\n").removesuffix("\n")
            selected = _select(written.split("\n") if written else [], named)
            if "leveloffset" in named:
                before = offset
                offset = _offset(named["leveloffset"], offset)
                out.extend(["", f":leveloffset: {offset}", ""])  # blank: no paragraph's
                walk(selected, inner)
                out.extend(["", f":leveloffset: {before}", ""])
                offset = before
            else:
                walk(selected, inner)

    walk(lines, include)
    return out


def _joined_entries(lines: list[str]) -> list[str]:
    """`lines` with an attribute entry whose value runs over lines (each but the last
    ending in ` \\`) joined into one, its parts separated by a space."""
    out: list[str] = []
    for line in lines:
        if out and out[-1].endswith(" \\") and _ENTRY.match(out[-1]):
            out[-1] = out[-1][:-1] + line.strip()
        else:
            out.append(line)
    return out


def _offset(value: str, current: int) -> int:
    """A leveloffset value (`+1`, `-1`, `2`) applied to the current one."""
    value = value.strip()
    try:
        return current + int(value) if value[:1] in "+-" else int(value)
    except ValueError:
        return current


def _set(entry: re.Match[str], attrs: dict[str, str]) -> None:
    """An attribute entry applied: `:name: value` sets, `:name!:` and `:!name:` unset."""
    name = entry.group("name").lower()
    if entry.group("pre") or entry.group("post"):
        attrs.pop(name, None)
    else:
        value = (entry.group("value") or "").strip()
        read = _substitute(value, attrs)
        attrs[name] = read if len(read) <= MAX_ATTRIBUTE_CHARS else value


def _conditional(
    m: re.Match[str], active: list[bool], attrs: dict[str, str], out: list[str]
) -> None:
    """An `ifdef::`/`ifndef::`/`ifeval::`/`endif::` line applied to the open ones;
    a one-line `ifdef::name[text]` adds its text to `out` when it holds."""
    kind = m.group("kind")
    if kind == "endif":
        if active:
            active.pop()
        return
    names = m.group("names")
    if kind == "ifeval":
        holds = _evaluated(_substitute(m.group("text"), attrs))
    elif "+" in names:
        holds = all(n.lower() in attrs for n in names.split("+"))
    else:
        holds = any(n.lower() in attrs for n in names.split(","))
    if kind == "ifndef":
        holds = not holds
    if kind != "ifeval" and m.group("text"):
        if all(active) and holds:
            out.append(m.group("text"))
        return
    active.append(holds)


_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _evaluated(expression: str) -> bool:
    """An `ifeval::[...]` expression, its attributes replaced: two values (quoted
    strings or numbers) compared with ==, !=, <, <=, > or >=. One harness cannot read
    holds: its text is kept."""
    m = re.fullmatch(
        r"\s*(?P<a>\"[^\"]*\"|'[^']*'|-?[\d.]+)\s*(?P<op>==|!=|<=|>=|<|>)\s*"
        r"(?P<b>\"[^\"]*\"|'[^']*'|-?[\d.]+)\s*",
        expression,
    )
    if m is None:
        return True

    def value(text: str) -> str | float:
        if text[0] in "\"'":
            return text[1:-1]
        try:
            return float(text)
        except ValueError:
            return text

    a, b = value(m.group("a")), value(m.group("b"))
    if type(a) is not type(b):
        a, b = str(a), str(b)
    return bool(_COMPARISONS[m.group("op")](a, b))


def _title_text(m: re.Match[str]) -> str:
    """A section title's text without its closing marks (`== Title ==`)."""
    text = m.group("text").rstrip()
    closing = " " + m.group("marks")
    return text[: -len(closing)].rstrip() if text.endswith(closing) else text


def _section_ids(title: str) -> list[str]:
    """The ids Asciidoctor (`_install_it`) and Antora (`install-it`) give a section."""
    words = re.sub(r"<[^>]+>|&\w+;|[^\w \t.-]+", "", title.lower()).split()
    joined = " ".join(words)
    return ["_" + re.sub(r"[ .-]+", "_", joined), re.sub(r"[ .-]+", "-", joined)]


class _Inline:
    """A page's inline markup read as text (see the module docstring)."""

    def __init__(self, attrs: dict[str, str], sections: dict[str, str], xref: XrefTitle | None):
        self.attrs = attrs
        self.sections = sections
        self.xref = xref
        self._kept: list[str] | None = None  # text held from further reading, while reading

    def __call__(self, text: str) -> str:
        """`text` read as the page shows it; a footnote's or a cross reference's own text
        is read with the text it stands in."""
        outer = self._kept is not None
        if not outer:
            self._kept = []
        try:
            return self._read(text, self._kept)  # type: ignore[arg-type]
        finally:
            if not outer:
                self._kept = None

    def _read(self, text: str, kept: list[str]) -> str:
        def hold(value: str) -> str:
            kept.append(value)
            return f"\x00{len(kept) - 1}\x00"

        text = _ESCAPED.sub(lambda m: hold(m.group(1)), text)
        text = _PASS.sub(lambda m: hold(self._passed(m)), text)
        text = _substitute(text, self.attrs)
        text = _INDEX_TERMS.sub(lambda m: m.group("term") or "", text)
        text = _XREF.sub(lambda m: hold(self._xref(m.group("target"), m.group("text"))), text)
        text = _ANGLE_XREF.sub(
            lambda m: hold(self._xref(m.group("target"), m.group("text") or "")), text
        )
        text = _LINK.sub(lambda m: hold(_link_text(m)), text)
        text = _ANGLE_URL.sub(lambda m: m.group("url"), text)
        text = _MACRO.sub(lambda m: _macro(m, self), text)
        text = _INLINE_ANCHOR.sub("", text)
        text = _HIGHLIGHT.sub(lambda m: m.group("text"), text)
        text = _CURVED.sub(lambda m: _QUOTES[m.group("q")].format(m.group("text")), text)
        text = _HARD_BREAK.sub("", text)
        while _PLACEHOLDER.search(text):
            text = _PLACEHOLDER.sub(lambda m: kept[int(m.group(1))], text)
        return text

    def _passed(self, m: re.Match[str]) -> str:
        """A passthrough's text: as written, or read when its substitutions include
        macros or quotes (`pass:q,macros[xref:a.adoc[Intro]]` reads "Intro")."""
        text = next(g for g in m.group("a", "b", "d", "c") if g is not None)
        subs = set((m.group("subs") or "").split(","))
        return self(text) if subs & {"q", "quotes", "m", "macros", "n", "normal"} else text

    def _xref(self, target: str, text: str) -> str:
        """A cross reference's text: its own, else the title (or reftext) of the section
        or page it names, else the target as written (`[id]` for an id, as Asciidoctor
        shows one it cannot find)."""
        text = _positional_text(text)
        if text:
            return self(text)
        page, hash_, fragment = target.partition("#")
        if page and (hash_ or page.endswith(".adoc")):  # another page
            found = self.xref(page) if self.xref is not None else None
            return found or fragment or re.sub(r"^.*[:$/]|\.adoc$", "", page)
        key = page or fragment
        return self.sections.get(key, f"[{key}]")


def _link_text(m: re.Match[str]) -> str:
    """A link's text (`https://x.org[the site^]` reads "the site"), else its URL."""
    url = m.group("target") or m.group("url")
    raw = m.group("text")
    if not raw.strip():
        return url.removeprefix("mailto:")
    return (_positional_text(raw) or url).removesuffix("^")


def _positional_text(raw: str) -> str:
    """A macro's text (`the site^`, `"Text, quoted",window=_blank`): its first value
    when it reads as an attribute list, else all of it; `\\]` read as `]`."""
    if "=" in raw or raw.lstrip().startswith('"'):
        positional, _ = _attrlist(raw)
        raw = positional[0] if positional else ""
    return raw.replace("\\]", "]").strip()


def _macro(m: re.Match[str], inline: _Inline) -> str:
    """An inline macro's text: keys, buttons, menus and math as written, a footnote in
    parentheses, an index term (`indexterm2:`) as the term; anchors, images, icons and
    hidden index terms as nothing."""
    name = m.group("name") or m.group("named")
    target = m.group("path") or ""
    text = (m.group("text") if m.group("name") else m.group("words")).replace("\\]", "]")
    if name in ("kbd", "btn", "stem", "latexmath", "asciimath", "indexterm2"):
        return text
    if name == "menu":
        return " > ".join([target, *(s.strip() for s in text.split(">") if s.strip())])
    if name == "footnote":
        if not text.strip():
            return ""
        spaced = m.start() == 0 or m.string[m.start() - 1].isspace()
        return f"{'' if spaced else ' '}({inline(text)})"
    if name == "image":
        return _attrlist(text)[0][0] if text.strip() and _attrlist(text)[0] else ""
    return ""  # anchor, icon, indexterm


def _term(line: str) -> re.Match[str] | None:
    """A description list item's line (`term:: text`, `term;; text`), or None."""
    m = _TERM.match(line)
    if m is None or "://" in m.group("term") or _BLOCK_MACRO.match(line):
        return None
    return m


def _block_end(lines: list[str], i: int, delim: str) -> int:
    """The index of the line closing the delimited block opened at `i` by `delim`
    (len(lines) when it is never closed): the first line that is the same delimiter, as
    Asciidoctor reads it (a block of the same kind nested in it takes a longer one)."""
    return next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == delim), len(lines))


def _fenced(lang: str, lines: list[str]) -> list[str]:
    """Code lines as a fenced block between blank lines; no lines for no code."""
    return ["", *fenced_lines(lines, lang), ""] if any(x.strip() for x in lines) else []


def _without_callouts(line: str) -> str:
    """A code line without the callout marks that end it (and a comment sign before
    them): `puts x # <1>` reads `puts x`."""
    m = _CALLOUT_REVERSED.match(line[::-1])
    return line[: len(line) - m.end()] if m else line


def _columns(spec: str) -> list[str]:
    """The style letter (`a`, `l`, `m`, ... or "") of each column a `cols` value
    declares (`1,2`, `3*`, `2*,1a`, `<1,^2m`, or a count: `3`)."""
    spec = spec.strip().strip('"')
    if re.fullmatch(r"\d+", spec):
        return [""] * int(spec)
    columns: list[str] = []
    for part in re.split(r"[,;]", spec):
        m = re.match(r"^\s*(?:(?P<n>\d+)\*)?(?P<rest>.*?)\s*$", part)
        if m is None or not part.strip():
            continue
        style = re.search(r"([adehlmsv])$", m.group("rest"))
        columns.extend([style.group(1) if style else ""] * int(m.group("n") or 1))
    return columns


def _cells(lines: list[str], sep: str) -> tuple[list[tuple[str, int, list[str]]], int]:
    """A table's cells in order, each (its style letter, the columns it spans, its
    lines), and how many cells its first line holds. A cell starts at `sep` (`\\|` is
    text), after its spec (`2+`, `a`, `^.>`, `3*`) when one stands against it after
    white space."""
    cells: list[tuple[str, int, list[str]]] = []
    first = 0
    split = re.compile(rf"(?<!\\){re.escape(sep)}")
    for line in lines:
        if not line.strip():
            if cells:
                cells[-1][2].append("")  # a paragraph break within a cell
            continue
        parts = split.split(line)
        specs = []
        for k in range(len(parts) - 1):
            m = _CELL_SPEC.search(parts[k])
            # after the first `|`, a spec stands after white space: `|a|b` is two cells
            if m is None or not m.group("spec") or (k and not m.start("spec")):
                specs.append("")
                continue
            specs.append(m.group("spec"))
            parts[k] = parts[k][: m.start("spec")]
        if parts[0].strip() and cells:
            cells[-1][2].append(parts[0].strip())  # a cell's text running on
        for spec, part in zip(specs, parts[1:], strict=True):
            m = _CELL_SPEC.fullmatch(spec)
            span = int(m.group("span")) if m and m.group("span") else 1
            copies = int(m.group("copies")) if m and m.group("copies") else 1
            style = m.group("style") or "" if m else ""
            cells.extend(
                (style, span, [part.strip()] if part.strip() else []) for _ in range(copies)
            )
        first = first or len(parts) - 1
    return cells, first


class _Reader(NestedReader):
    """One page's lines read in order."""

    def __init__(self, attrs: dict[str, str], inline: _Inline) -> None:
        self.attrs = attrs
        self.inline = inline
        self.title = ""

    def _blocks(self, lines: list[str]) -> list[str]:
        """The lines a reader of the page sees, of `lines` (a page, or a block's)."""
        out: list[str] = []
        para: list[str] = []
        style: tuple[list[str], dict[str, str]] = ([], {})
        i = 0

        def flush() -> None:
            nonlocal style
            if para:
                out.extend(self._paragraph(para, style))
                para.clear()
                style = ([], {})

        while i < len(lines):
            line = lines[i]
            if para and not self._interrupts(line):
                if not _COMMENT.match(line):
                    para.append(line)
                i += 1
                continue
            flush()
            if not line.strip():
                out.append(line)
                i += 1
                continue
            fence = _FENCE.match(line)
            if _DELIMITER.match(line) or fence:
                delim = fence.group("fence") if fence else line.rstrip()
                end = _block_end(lines, i, delim)
                if fence:
                    lang = fence.group("lang")
                    style = (["source", lang], {}) if lang else (["listing"], {})
                out.extend(self._delimited(delim, lines[i + 1 : end], style))
                style = ([], {})
                i = end + 1
                continue
            entry = _ENTRY.match(line)
            if entry:
                _set(entry, self.attrs)
                i += 1
                continue
            if _COMMENT.match(line) or _RULE.match(line.strip()) or line.strip() == "+":
                i += 1
                continue
            attrs = _BLOCK_ATTRS.match(line)
            if attrs:
                if not attrs.group("attrs").startswith("["):
                    style = _attrlist(attrs.group("attrs"))
                i += 1
                continue
            section = _SECTION.match(line)
            if section:
                first = not self.title and not self.depth
                out.append(self._section(section))
                style = ([], {})
                i += 1
                if first and section.group("marks") == "=":
                    i = self._header(lines, i)
                continue
            title = _BLOCK_TITLE.match(line)
            if title:
                out.extend(["", self.inline(title.group("title"))])
                i += 1
                continue
            macro = _BLOCK_MACRO.match(line)
            if macro and macro.group("name") not in DIRECTIVES:
                style = ([], {})
                i += 1  # an image, a table of contents, a video: no text
                continue
            item = _LIST.match(line) or _CALLOUT_ITEM.match(line) or _term(line)
            if item:
                end = self._item_end(lines, i + 1)
                out.append(
                    self._item(item, [x for x in lines[i + 1 : end] if not _COMMENT.match(x)])
                )
                style = ([], {})
                i = end
                continue
            if line[0] in " \t" and not style[0]:
                end = i
                while end < len(lines) and lines[end].strip():
                    end += 1
                out.extend(_fenced("", lines[i:end]))
                i = end
                continue
            para.append(line)
            i += 1
        flush()
        return out

    def _interrupts(self, line: str) -> bool:
        """Whether `line` ends the paragraph before it: a blank line, a list
        continuation (`+`), a block delimiter or a block attribute line (as in
        Asciidoctor, a list item's line does not: it reads as text)."""
        return (
            not line.strip()
            or line.strip() == "+"
            or bool(_DELIMITER.match(line) or _FENCE.match(line) or _BLOCK_ATTRS.match(line))
        )

    def _item_end(self, lines: list[str], j: int) -> int:
        """The index after a list item's lines that run on from its first (indented or
        not), up to a blank line, a continuation, a block or the next item."""
        while j < len(lines) and not self._interrupts(lines[j]):
            if _LIST.match(lines[j]) or _CALLOUT_ITEM.match(lines[j]) or _term(lines[j]):
                break
            j += 1
        return j

    def _header(self, lines: list[str], i: int) -> int:
        """The index after the document header's author and revision lines (the lines
        right under the title that are not attribute entries or comments)."""
        taken = 0
        while i < len(lines) and lines[i].strip() and taken < 2:
            if _ENTRY.match(lines[i]) or _COMMENT.match(lines[i]):
                return i
            taken += 1
            i += 1
        return i

    def _section(self, m: re.Match[str]) -> str:
        """A section title as a markdown heading: `=` (the document's) is `#`, `==` `##`,
        moved by the leveloffset in force."""
        level = len(m.group("marks")) + _offset(self.attrs.get("leveloffset", "0"), 0)
        text = self.inline(_title_text(m))
        if not self.title and not self.depth:
            self.attrs.setdefault("doctitle", text)
        self.title = self.title or text
        return f"{'#' * min(max(level, 1), 6)} {text}"

    def _item(self, m: re.Match[str], more: list[str]) -> str:
        """A list item as markdown's (nested by the count of its marks), a callout list's
        as a numbered one, a description list's as `term: text`; with the lines its text
        runs on over."""
        text = self.inline(
            " ".join([(m.group("text") or "").strip(), *(x.strip() for x in more)]).strip()
        )
        if "term" in m.groupdict():
            return f"{self.inline(m.group('term'))}:" + (f" {text}" if text else "")
        if "n" in m.groupdict():
            return f"{m.group('n').replace('.', '1')}. {text}"
        marks = m.group("marks")
        if marks[0] == "*":
            return "  " * (len(marks) - 1) + "- " + text
        if marks == "-":
            return "- " + text
        if marks[0] == ".":
            return "   " * (len(marks) - 1) + "1. " + text
        return f"{marks} {text}"

    def _paragraph(self, para: list[str], style: tuple[list[str], dict[str, str]]) -> list[str]:
        """A paragraph's lines as the page shows them: code when styled `[source]`
        (`[listing]`, `[literal]`), nothing when `[comment]`, else text (an admonition
        without its label, a quote with its attribution)."""
        name = style[0][0] if style[0] else ""
        if name in ("source", "listing", "literal"):
            return self._code(para, style)
        if name == "comment":
            return []
        if name == "pass":
            return [x for x in (_TAGS.sub("", x) for x in para) if x.strip()]
        para = [_ADMONITION.sub("", para[0], count=1), *para[1:]]
        read = self.inline("\n".join(para)).split("\n")
        out = [read[0], *("\\" + x.lstrip() if _READS_AS_HEADING.match(x) else x for x in read[1:])]
        if name in ("quote", "verse") and len(style[0]) > 1:
            out.append("\u2014 " + ", ".join(self.inline(x) for x in style[0][1:] if x))
        return out

    def _code(self, lines: list[str], style: tuple[list[str], dict[str, str]]) -> list[str]:
        """A listing's lines as fenced code: in its `[source,lang]` language (the page's
        `source-language` for a bare `[source]`), without callout marks; attributes
        replaced when its `subs` ask for them."""
        positional, named = style
        lang = positional[1] if len(positional) > 1 else named.get("language", "")
        if not lang and positional and positional[0] == "source":
            lang = self.attrs.get("source-language", "")
        subs = named.get("subs", "")
        code = [_without_callouts(x) for x in lines]
        if "attributes" in subs or subs == "normal":
            code = [_substitute(x, self.attrs) for x in code]
        return _fenced(lang, code)

    def _delimited(
        self, delim: str, body: list[str], style: tuple[list[str], dict[str, str]]
    ) -> list[str]:
        """What a delimited block shows (see the module docstring)."""
        name = style[0][0] if style[0] else ""
        kind = "open" if delim == "--" else delim[0]
        if kind == "/" or name == "comment":
            return []
        if kind == "+" or name in ("pass", "stem", "latexmath", "asciimath"):
            text = [_TAGS.sub("", x).strip() for x in body]
            return ["", *(x for x in text if x), ""]
        if kind in ("-", ".", "`") or name in ("source", "listing", "literal"):
            if kind == "-" and not name:
                style = (["source", *style[0][1:]], style[1])
            return self._code(body, style)
        if kind in ("|", ",", ":", "!"):
            return self._table(kind, body, style)
        text = self._nested(body)
        if name in ("quote", "verse") and len(style[0]) > 1:
            text.append("\u2014 " + ", ".join(self.inline(x) for x in style[0][1:] if x))
        return ["", *text, ""]

    def _table(
        self, kind: str, body: list[str], style: tuple[list[str], dict[str, str]]
    ) -> list[str]:
        """A table as rows of cells, `| a | b |`, its first row the header's when the
        table has one (a header option, or a first line followed by a blank one, unless
        `noheader`); CSV, TSV and DSV data (`,===`, `:===`, `format=csv`) split as such;
        an AsciiDoc cell (`a|`, `cols="1a"`) read as a page, on one line."""
        _, named = style
        columns = _columns(named.get("cols", ""))
        fmt = named.get("format", {",": "csv", ":": "dsv"}.get(kind, "psv"))
        sep = named.get("separator", "")
        options = {
            o.strip() for o in f"{named.get('options', '')},{named.get('opts', '')}".split(",")
        }
        content = [x for x in body if x.strip()]
        if fmt in ("csv", "tsv"):
            delimiter = sep or ("\t" if fmt == "tsv" else ",")
            rows = [
                [self.inline(c.strip()) for c in r]
                for r in csv.reader(content, delimiter=delimiter[0])
            ]
        elif fmt == "dsv":
            rows = [[self.inline(c.strip()) for c in x.split(sep or ":")] for x in content]
        else:
            cells, first = _cells(body, sep or ("!" if kind == "!" else "|"))
            width = len(columns) or first or 1
            rows, row, used = [], [], 0
            for n, (letter, span, lines) in enumerate(cells):
                column = columns[used % len(columns)] if columns else ""
                row.append(self._cell(letter or column, lines))
                used += span
                if used >= width or n == len(cells) - 1:
                    rows.append(row)
                    row, used = [], 0
        if not rows:
            return []
        implicit = len(body) > 1 and body[0].strip() != "" and not body[1].strip()
        header = "header" in options or (implicit and "noheader" not in options)
        out = [""]
        for n, cells_text in enumerate(rows):
            out.append("| " + " | ".join(cells_text) + " |")
            if n == 0 and header:
                out.append("|" + " --- |" * len(cells_text))
        return [*out, ""]

    def _cell(self, letter: str, lines: list[str]) -> str:
        """A table cell's text on one line: an AsciiDoc cell read as a page (its code
        fences left out), a literal or monospace one as written, others as text."""
        if letter == "a":
            read = self._nested(lines)
            return " ".join(x.strip() for x in read if x.strip() and not x.startswith("```"))
        if letter in ("l", "m"):
            return " ".join(x.strip() for x in lines if x.strip())
        return " ".join(x.strip() for x in self.inline("\n".join(lines)).split("\n") if x.strip())


def _sections(lines: list[str], attrs: dict[str, str]) -> dict[str, str]:
    """What a cross reference to each of the page's sections reads: by its generated ids
    (Asciidoctor's and Antora's), its own id (`[[id]]`, `[#id]`), or its title, the
    section's title, or the reftext its anchor gives (`[[id,Label]]`)."""
    sections: dict[str, str] = {}
    anchor, reftext = "", ""
    for line in lines:
        block_anchor = _BLOCK_ANCHOR.match(line)
        m = _SECTION.match(line)
        if block_anchor:
            anchor = block_anchor.group("id") or block_anchor.group("id2")
            reftext = (block_anchor.group("reftext") or "").strip()
        elif m:
            title = _substitute(_title_text(m), attrs)
            for key in [*_section_ids(title), title, anchor]:
                if key:
                    sections.setdefault(key, reftext or title)
            anchor, reftext = "", ""
        elif line.strip():
            anchor, reftext = "", ""
    return sections


def asciidoc_text(
    raw: str,
    *,
    attributes: Mapping[str, str] | None = None,
    include: IncludeRaw | None = None,
    xref_title: XrefTitle | None = None,
) -> tuple[str, str]:
    """(the text a reader of the built page sees, its title) of an AsciiDoc file: see
    the module docstring. `attributes`: those the site sets for every page (Antora's
    `antora.yml`); `include` reads included files; `xref_title` gives another page's
    title for a cross reference without text. The title is the document's (`= Title`),
    else its first section's."""
    raw = raw.removeprefix("\ufeff")
    written = raw.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    attrs = {**HTML_BUILD, **{k.lower(): v for k, v in (attributes or {}).items()}}
    expanded = _expand(written, include, dict(attrs))
    reader = _Reader(attrs, _Inline(attrs, _sections(expanded, dict(attrs)), xref_title))
    lines = reader.read(expanded)
    if lines == written:
        return raw, reader.title
    return squeeze_blank_lines(lines), reader.title


def asciidoc_title(raw: str, attributes: Mapping[str, str] | None = None) -> str | None:
    """The document title (`= Title`) an AsciiDoc file opens with, after blank lines,
    comments, attribute entries and block attribute lines, its attributes replaced; None
    when it opens with anything else."""
    attrs = {k.lower(): v for k, v in (attributes or {}).items()}
    for line in raw.removeprefix("\ufeff").splitlines():
        entry = _ENTRY.match(line)
        if entry:
            _set(entry, attrs)
            continue
        if not line.strip() or _COMMENT.match(line) or _BLOCK_ATTRS.match(line):
            continue
        m = _SECTION.match(line)
        if m is None or m.group("marks") not in ("=", "#"):
            return None
        return _substitute(_title_text(m), attrs)
    return None
