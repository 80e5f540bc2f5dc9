"""AsciiDoc (Asciidoctor, Antora documentation) read as the text its pages show.

An AsciiDoc page is written with markup its reader never sees as text; indexed as written
it lands in chunks and in the judge's prompts (`xref:cli:index.adoc[]`, `[source,ruby]`,
`----`, `:url-repo: https://...`, `{release-version}`). `asciidoc_text` keeps the text and
writes its structure as markdown, as the markdown reader keeps it:

- includes (`include::partial$intro.adoc[]`, with `tag=`/`tags=`, `lines=` and
  `leveloffset=`) are read in where they stand, given a way to read them (`include`);
  `ifdef::`/`ifndef::` read the page's attributes (an `ifeval::` keeps its text);
- the page's attribute entries (`:name: value`) are read, not shown, and `{name}` reads
  as its value (the page's, those given by the site, or a built-in character such as
  `{nbsp}`); a reference to an attribute nobody set stays as written, as Asciidoctor
  shows it;
- the document title (`= Title`) and section titles (`== Title`, markdown's `## Title`)
  become `#` headings, one level each (`leveloffset` applied); the author and revision
  lines under the title, comments, block attribute lines (`[source,ruby]`, `[NOTE]`,
  `[[id]]`), block and inline images, `toc::[]`, page breaks and rules are left out; a
  block title (`.Example`) stays as a line;
- listing and literal blocks (`----`, `....`, an indented literal paragraph, a paragraph
  styled `[source]`) become fenced code in the language their `[source,lang]` names,
  without callout marks (`<1>`); a callout list reads as a numbered list;
- example, sidebar, quote and open blocks read as their text (a quote with its
  attribution), admonitions (`NOTE: ...`, `[TIP]` on a block) without their label,
  passthrough blocks without their HTML tags, tables as rows of cells (`| a | b |`),
  lists as markdown's (`*`/`-`, nested `**`, ordered `.`), description lists as
  `term: text`, a hard line break (` +`) and a list continuation (`+`) without the `+`;
- inline: cross references read as their text, else as the title of the section (or,
  through `xref_title`, the page) they name (`<<install,the install>>` reads "the
  install"); links and mailto links as their text (a bare URL as written); `kbd:[Ctrl+T]`,
  `btn:[Save]`, `menu:File[Save]`, `footnote:[...]` (in parentheses), index terms and
  passthroughs (`+{x}+`, `pass:[...]`) as their text; anchors, inline anchors and icons as
  nothing; `#highlight#` as its text. Emphasis and `monospace` stay as written: markdown
  reads them the same way.

A file without any of these reads byte for byte as written.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Mapping

from harness.corpus.markdown import IncludeRaw, code_fence, squeeze_blank_lines

XrefTitle = Callable[[str], str | None]
"""The title of the page a cross reference names (`cli:index.adoc`), or None."""

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
_DELIMITER = re.compile(r"^(?:-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--|[|,:!]={3,})[ \t]*$")
_SECTION = re.compile(r"^(?P<marks>={1,6}|#{1,6})[ \t]+(?P<text>\S.*)$")
"""A section title; its closing marks (`== Title ==`) are taken off in code."""
_BLOCK_ATTRS = re.compile(r"^\[(?P<attrs>[^\[\]]*|\[[^\[\]]+\])\][ \t]*$")
_BLOCK_TITLE = re.compile(r"^\.(?P<title>[^\s.].*)$")
_COMMENT = re.compile(r"^//(?!//)")
_BLOCK_MACRO = re.compile(r"^(?P<name>[a-z][\w-]*)::(?P<target>\S*?)\[(?P<attrs>.*)\][ \t]*$")
_ADMONITION = re.compile(r"^(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION):[ \t]+")
ADMONITIONS = frozenset(["NOTE", "TIP", "IMPORTANT", "WARNING", "CAUTION"])
_LIST = re.compile(r"^[ \t]*(?P<marks>\*{1,5}|-|\.{1,5}|\d{1,9}\.)[ \t]+(?P<text>\S.*)$")
_CALLOUT_ITEM = re.compile(r"^<(?P<n>\d+|\.)>[ \t]+(?P<text>.*)$")
_CALLOUT = re.compile(
    r"(?<![ \t])[ \t]*(?:(?://|#|--|;;?|%)[ \t]*)?(?:<(?:\d+|\.)>[ \t]*)+$|[ \t]*<!--\d+-->$"
)
"""Callout marks ending a code line (`puts x # <1>`); tried from the start of a run of
white space only, so a line padded with spaces reads in linear time."""
_TERM = re.compile(r"^(?P<term>[^\s].*?)(?:::{1,3}|;;)(?:[ \t]+(?P<text>.*))?$")
_RULE = re.compile(r"^(?:'{3,}|<{3,}|(?:[-*_][ \t]*){3,})$")
_HARD_BREAK = re.compile(r"[ \t]\+$", re.MULTILINE)
_READS_AS_HEADING = re.compile(r"^[ \t]*(?:#{1,6}|={1,6})[ \t]")
_ATTRIBUTE_REF = re.compile(r"(?<!\\)\{(?P<name>\w[\w-]*)\}")

# Inline markup, applied in this order.
_PASS = re.compile(
    r"\+\+\+(?P<a>.+?)\+\+\+|pass:[a-z,]*\[(?P<b>(?:[^\[\]\\]|\\.)*)\]"
    r"|(?<![\w+])\+(?P<c>[^\s+](?:[^+\n]*[^\s+])?)\+(?![\w+])"
)
_XREF = re.compile(r"xref:(?P<target>[^\s\[]+)\[(?P<text>(?:[^\[\]\\]|\\.)*)\]")
_ANGLE_XREF = re.compile(r"<<(?P<target>[^\s,<>][^,<>]*?)(?:,[ \t]*(?P<text>[^<>]*?))?>>")
_LINK = re.compile(
    r"(?:link:(?P<target>[^\s\[]+)|(?<![\w/\\])(?P<url>(?:https?|ftp|irc|file)://[^\s\[\]<>]+|mailto:[^\s\[\]]+|\{\w[\w-]*\}/[^\s\[\]<>]*))"
    r"\[(?P<text>(?:[^\[\]\\]|\\.)*)\]"
)
_ANGLE_URL = re.compile(r"<(?P<url>(?:https?|ftp)://[^\s<>]+)>")
_MACRO = re.compile(
    r"(?<![\w\\])(?P<name>kbd|btn|menu|footnote|anchor|image|icon|indexterm2?|stem|latexmath|asciimath):(?P<target>[^\s\[]*)\[(?P<text>(?:[^\[\]\\]|\\.)*)\]"
)
_INLINE_ANCHOR = re.compile(r"\[\[[^\[\]\n]+\]\]|\[#[\w-]+(?:\.[\w-]+)*\](?=#)")
_INDEX_TERMS = re.compile(r"\(\(\((?P<hidden>[^()]+)\)\)\)|\(\((?P<term>[^()]+)\)\)")
_HIGHLIGHT = re.compile(
    r"(?:\[[.#]?[\w-]+(?:[.#][\w-]+)*\])?(?<![\w#])#(?P<text>[^\s#](?:[^#\n]*[^\s#])?)#(?![\w#])"
)
_CURVED = re.compile(r"""(?P<q>["'])`(?P<text>[^`\n]+?)`(?P=q)""")
_QUOTES = {'"': "\u201c{}\u201d", "'": "\u2018{}\u2019"}
_PLACEHOLDER = re.compile("\x00(\\d+)\x00")
MAX_NESTING = 50
"""Blocks within blocks read as such; deeper, a block's lines are read as text."""


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
        keep.update(range(start, end + 1))
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


def _substitute(text: str, attrs: Mapping[str, str]) -> str:
    """`{name}` as the attribute's value where one is set (a built-in character too);
    `\\{name}` as `{name}`; a reference to an attribute nobody set as written."""

    def value(m: re.Match[str]) -> str:
        name = m.group("name").lower()
        if name in attrs:
            return attrs[name]
        return BUILT_IN.get(name, m.group(0))

    return _ATTRIBUTE_REF.sub(value, text).replace("\\{", "{")


def _expand(lines: list[str], include: IncludeRaw | None, attrs: dict[str, str]) -> list[str]:
    """The page's lines with its includes read in (with their own includes, as their
    `lines=`/`tags=` select them, a `leveloffset=` around them) and its conditionals
    (`ifdef::`, `ifndef::`, `endif::`) applied; attribute entries set `attrs` as met."""
    out: list[str] = []
    active: list[bool] = []  # open conditionals: whether each shows its lines
    offset = 0  # the leveloffset set so far (its entries are kept for the reader)

    def walk(lines: list[str], include: IncludeRaw | None) -> None:
        nonlocal offset
        for line in _joined_entries(lines):
            cond = _CONDITIONAL.match(line)
            if cond:
                _conditional(cond, active, attrs, out)
                continue
            if not all(active):
                continue
            entry = _ENTRY.match(line)
            if entry:
                _set(entry, attrs)
                if entry.group("name") == "leveloffset":
                    offset = _offset(entry.group("value") or "0", offset)
            m = _INCLUDE.match(line)
            if m is None:
                out.append(line)
                continue
            got = include(_substitute(m.group("target").strip(), attrs)) if include else None
            if got is None:
                continue  # left out, as a page without the file shows it
            text, inner = got
            _, named = _attrlist(m.group("attrs"))
            written = text.replace("\r\n", "\n").removesuffix("\n")
            selected = _select(written.split("\n") if written else [], named)
            if "leveloffset" in named:
                before = offset
                out.append(f":leveloffset: {_offset(named['leveloffset'], offset)}")
                offset = _offset(named["leveloffset"], offset)
                walk(selected, inner)
                out.append(f":leveloffset: {before}")
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
        attrs[name] = _substitute((entry.group("value") or "").strip(), attrs)


def _conditional(
    m: re.Match[str], active: list[bool], attrs: Mapping[str, str], out: list[str]
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
        holds = True  # an expression harness does not evaluate: its text is kept
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

    def __call__(self, text: str) -> str:
        kept: list[str] = []

        def hold(value: str) -> str:
            kept.append(value)
            return f"\x00{len(kept) - 1}\x00"

        text = re.sub(
            r"\\(\{\w[\w-]*\}|<<|\[\[|#|\+|(?:xref|link|https?|mailto|kbd|btn|menu|footnote|pass|image):|(?:include|ifn?def|ifeval|endif)::)",
            lambda m: hold(m.group(1)),
            text,
        )
        text = _PASS.sub(lambda m: hold(next(g for g in m.groups() if g is not None)), text)
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

    def _xref(self, target: str, text: str) -> str:
        """A cross reference's text: its own, else the title of the section or page it
        names, else the target as written."""
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
    name, target, text = m.group("name"), m.group("target"), m.group("text").replace("\\]", "]")
    if name in ("kbd", "btn", "stem", "latexmath", "asciimath", "indexterm2"):
        return text
    if name == "menu":
        return " > ".join([target, *(s.strip() for s in text.split(">") if s.strip())])
    if name == "footnote":
        return f" ({inline(text)})" if text.strip() else ""
    if name == "image":
        return _attrlist(text)[0][0] if text.strip() and _attrlist(text)[0] else ""
    return ""  # anchor, icon, indexterm


def _term(line: str) -> str:
    """A description list's line (`term:: text`) as `term: text`; any other as it is."""
    m = _TERM.match(line)
    if m is None or "://" in m.group("term") or _BLOCK_MACRO.match(line):
        return line
    return m.group("term") + (": " + m.group("text") if m.group("text") else ":")


def _verbatim(delim: str) -> bool:
    """Whether the block `delim` opens holds lines not read as blocks (listing,
    literal, comment, passthrough; a table's lines are cells)."""
    return delim != "--" and delim[0] in "-./+|,:!"


def _block_end(lines: list[str], i: int) -> int:
    """The index of the line closing the delimited block opened at `i` (len(lines)
    when it is never closed): the same delimiter; inside a block whose lines are read as
    blocks, after any block nested in it."""
    delim = lines[i].rstrip()
    j = i + 1
    while j < len(lines):
        line = lines[j].rstrip()
        if line == delim:
            return j
        if not _verbatim(delim) and _DELIMITER.match(line):
            j = _block_end(lines, j)
        j += 1
    return len(lines)


def _fenced(lang: str, lines: list[str]) -> list[str]:
    """Code lines, dedented, as a fenced block's lines (`markdown.code_fence`)."""
    code = textwrap.dedent("\n".join(lines)).strip("\n")
    return ["", *code_fence(code, lang.strip()).split("\n"), ""] if code.strip() else []


def _cells(lines: list[str], sep: str, cols: int) -> list[list[str]]:
    """A table's rows of cells: a cell starts at `sep` (after an optional spec such as
    `2+`, `a`, `^.>`); a row holds `cols` cells, else as many as the first line's."""
    cells: list[str] = []
    first = 0
    spec = re.compile(rf"(?:^|(?<=\s))(?:[\d.+*]*[<^>]?(?:\.[<^>])?[adehlmsv]?)?{re.escape(sep)}")
    for line in lines:
        if not line.strip():
            continue
        parts = spec.split(line)
        if parts and parts[0].strip() and cells:
            cells[-1] += " " + parts[0].strip()  # a cell's text running on
        for part in parts[1:]:
            cells.append(part.strip())
        if not first:
            first = len(parts) - 1
    width = cols or first or 1
    return [cells[k : k + width] for k in range(0, len(cells), width)]


class _Reader:
    """One page's lines read in order."""

    def __init__(self, attrs: dict[str, str], inline: _Inline) -> None:
        self.attrs = attrs
        self.inline = inline
        self.title = ""
        self.depth = 0

    def read(self, lines: list[str]) -> list[str]:
        """The lines a reader of the page sees, of `lines` (a page, or a block's)."""
        if self.depth > MAX_NESTING:
            return self.inline("\n".join(lines)).split("\n")
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
                out.append("")
                i += 1
                continue
            if _DELIMITER.match(line):
                end = _block_end(lines, i)
                out.extend(self._delimited(line.rstrip(), lines[i + 1 : end], style))
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
            if _BLOCK_MACRO.match(line):
                style = ([], {})
                i += 1  # an image, a table of contents, a video: no text
                continue
            callout = _CALLOUT_ITEM.match(line)
            if callout:
                number = callout.group("n").replace(".", "1")
                out.append(f"{number}. {self.inline(callout.group('text'))}")
                style = ([], {})
                i += 1
                continue
            item = _LIST.match(line)
            if item:
                out.append(self._item(item))
                style = ([], {})
                i += 1
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
        continuation (`+`), a block delimiter, a block attribute line or a list item."""
        return (
            not line.strip()
            or line.strip() == "+"
            or bool(_DELIMITER.match(line) or _BLOCK_ATTRS.match(line) or _LIST.match(line))
        )

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
        self.title = self.title or text
        return f"{'#' * min(max(level, 1), 6)} {text}"

    def _item(self, m: re.Match[str]) -> str:
        """A list item as markdown's: nested by the count of its marks."""
        marks = m.group("marks")
        text = self.inline(m.group("text"))
        if marks[0] == "*":
            return "  " * (len(marks) - 1) + "- " + text
        if marks == "-":
            return "- " + text
        if marks[0] == ".":
            return "   " * (len(marks) - 1) + "1. " + text
        return f"{marks} {text}"

    def _paragraph(self, para: list[str], style: tuple[list[str], dict[str, str]]) -> list[str]:
        """A paragraph's lines as the page shows them: code when styled `[source]`
        (`[listing]`, `[literal]`), nothing when `[comment]`, else text (a description
        list's term as `term: text`, an admonition without its label)."""
        name = style[0][0] if style[0] else ""
        if name in ("source", "listing", "literal"):
            return self._code(para, style)
        if name == "comment":
            return []
        if name == "pass":
            return [re.sub(r"<[^>]+>", "", x) for x in para if re.sub(r"<[^>]+>", "", x).strip()]
        para = [_ADMONITION.sub("", para[0], count=1), *para[1:]]
        read = self.inline("\n".join(map(_term, para))).split("\n")
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
        code = [_CALLOUT.sub("", x) for x in lines]
        if "attributes" in subs or subs in ("normal", "+attributes"):
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
            text = [re.sub(r"<[^>]+>", "", x).strip() for x in body]
            return ["", *(x for x in text if x), ""]
        if kind in ("-", ".") or name in ("source", "listing", "literal"):
            if kind == "-" and not name:
                style = (["source", *style[0][1:]], style[1])
            return self._code(body, style)
        if kind in ("|", ",", ":", "!"):
            return self._table(kind, body, style)
        self.depth += 1
        try:
            text = self.read(body)
        finally:
            self.depth -= 1
        if name in ("quote", "verse") and len(style[0]) > 1:
            text.append("\u2014 " + ", ".join(self.inline(x) for x in style[0][1:] if x))
        return ["", *text, ""]

    def _table(
        self, kind: str, body: list[str], style: tuple[list[str], dict[str, str]]
    ) -> list[str]:
        """A table as rows of cells, `| a | b |`, its first row the header's when the
        table has one (a header option, or a first line followed by a blank one)."""
        _, named = style
        cols_spec = named.get("cols", "")
        star = re.match(r"^\s*(\d+)\*", cols_spec)
        cols = (
            int(star.group(1))
            if star
            else len([c for c in cols_spec.split(",") if c.strip()])
            if cols_spec
            else 0
        )
        if kind in ",:" and not named.get("separator"):
            rows = [
                [c.strip() for c in x.split(kind if kind == ":" else ",")]
                for x in body
                if x.strip()
            ]
        else:
            rows = _cells(body, named.get("separator", "|" if kind == "|" else "!"), cols)
        if not rows:
            return []
        header = "header" in named.get("options", named.get("opts", "")) or (
            len(body) > 1 and body[0].strip() and not body[1].strip()
        )
        out = [""]
        for n, row in enumerate(rows):
            out.append("| " + " | ".join(self.inline(c) for c in row) + " |")
            if n == 0 and header:
                out.append("|" + " --- |" * len(row))
        return [*out, ""]


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
    attrs = {k.lower(): v for k, v in (attributes or {}).items()}
    expanded = _expand(written, include, dict(attrs))
    sections: dict[str, str] = {}
    anchor = ""
    for line in expanded:
        m = _SECTION.match(line)
        block_anchor = re.match(
            r"^\[\[(?P<id>[\w:.-]+)(?:,[^\]]*)?\]\]$|^\[#(?P<id2>[\w:.-]+)", line
        )
        if block_anchor:
            anchor = block_anchor.group("id") or block_anchor.group("id2")
        elif m:
            title = _substitute(_title_text(m), attrs)
            for key in [*_section_ids(title), anchor]:
                if key:
                    sections.setdefault(key, title)
            anchor = ""
        elif line.strip():
            anchor = ""
    reader = _Reader(attrs, _Inline(attrs, sections, xref_title))
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
