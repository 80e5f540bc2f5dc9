"""reStructuredText (Sphinx documentation) read as the text its pages show.

A Sphinx page is written with markup its reader never sees as text; indexed as written it
lands in chunks and in the judge's prompts (`:class:`~optuna.storages.InMemoryStorage``,
`.. autosummary::` and its entries, `.. _label:` targets). `rst_text` keeps the text and
writes its structure as markdown, as the markdown reader keeps it:

- section titles (a line after a blank one, under (and maybe over) a rule of one repeated
  punctuation character as long as it, or of four or more) become `#` headings, a level
  for each rule style in the order the page first uses it;
- code: `.. code-block:: python` (and `code`, `sourcecode`, `parsed-literal`, `prompt`,
  `testcode`, `doctest`, `testoutput`, `ipython`, `jupyter-execute`) and a literal
  block after a paragraph's `::` become fenced code blocks, dedented, with a code
  block's `:caption:` above it; a paragraph's `::` reads `:` ("Example ::" reads
  "Example");
- admonitions (`.. note::`, `.. warning::`, `.. seealso::`, ...) and other directives
  with text (`.. topic::`, `.. csv-table::` with its `:header:`, `.. only:: html`, a
  described function's signature): their text, dedented, without the marker and
  options; `.. versionadded:: 3.0` reads "New in version 3.0." (with its explanation
  after a colon); footnotes and citations keep their text after their label;
- `.. include:: part.rst` reads the file in where it stands, given a way to read it
  (`include`), as reStructuredText with its own includes and its substitutions and
  targets (as code with `:literal:` or `:code:`, as markdown for a `.md` file or a MyST
  `:parser:`), and `.. literalinclude:: example.py` as a fenced block in its
  `:language:` (else its suffix's); both with the lines their options select
  (docutils' and Sphinx's, `_selected`), nothing when a marker they name is not in the
  file; without a way to read them, they are left out;
- left out: file-wide metadata fields at the top (`:orphan:`), directives whose content
  the build writes or that an HTML page does not show (`toctree`, `autosummary`,
  `auto*`, `contents`, `module`, `image`, `raw`, `todo`, `only:: latex`, ...),
  hyperlink targets (anonymous ones too), comments, substitution definitions, simple
  tables' rules;
- inline, also where it runs over a paragraph's lines: roles read as their text
  (`:class:`~a.b.C`` as `C`, `:meth:`~a.B.run`` as `run()`, `:ref:`Title <label>`` as
  `Title`, `:pep:`8`` as `PEP 8`), links as their text (`` `PyPI <https://pypi.org>`__
  `` as `PyPI`), ``` ``literal`` ``` as `` `literal` ``, a substitution as its
  `replace::` text (an image's as nothing), a reference to one of the page's own
  targets (`Python_`) as its name. A text line that markdown would read as a heading
  (`# not a title`) is escaped (`\\# not a title`).

A file without any of these reads byte for byte as written (Windows line endings and a
byte-order mark are read as any other).
"""

from __future__ import annotations

import contextlib
import re
import textwrap

from harness.corpus.markdown import (
    MARKDOWN_SUFFIXES,
    IncludeRaw,
    NestedReader,
    fenced_lines,
    markdown_text,
    squeeze_blank_lines,
)

_DIRECTIVE = re.compile(
    r"^(?P<indent>[ \t]*)\.\.[ \t]+(?P<name>[\w:.+-]+)::(?:[ \t]+(?P<arg>.*))?$"
)
_EXPLICIT = re.compile(r"^[ \t]*\.\.(?:[ \t]|$)")
"""Any explicit markup line: a directive, a target, a substitution, a comment."""
_FOOTNOTE = re.compile(r"^[ \t]*\.\.[ \t]+\[(?P<label>[^\]\s]+)\](?:[ \t]+(?P<text>.*))?$")
_TARGET = re.compile(r"^[ \t]*(?:\.\.[ \t]+_[^\n]*:|\.\.[ \t]*$|__[ \t])")
"""A hyperlink target (`.. _label: url`, an anonymous `__ url`) or an empty comment:
their own lines only, up to a blank line."""
_ANONYMOUS = re.compile(r"^[ \t]*__[ \t]+\S")
_SUBSTITUTION = re.compile(
    r"^[ \t]*\.\.[ \t]+\|(?P<name>[^|\n]+)\|[ \t]+(?P<kind>[\w-]+)::(?:[ \t]+(?P<text>.*))?$",
    re.MULTILINE,
)
_NAMED_TARGET = re.compile(r"^[ \t]*\.\.[ \t]+_(?P<name>[^:`\n]+):", re.MULTILINE)
_OPTION = re.compile(r"^[ \t]*:[\w-][\w ,.-]*:(?:[ \t].*)?$")
_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$")
_TABLE_RULE = re.compile(r"^[ \t]*(?:=+(?:[ \t]+=+)+|-+(?:[ \t]+-+)+)[ \t]*$")
"""A simple table's border or column-span rule: layout, not text."""
_READS_AS_HEADING = re.compile(r"^[ \t]*(?:#{1,6}|={1,6})[ \t]")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+\u2022]|#\.|\d+[.)]|\(?[A-Za-z0-9][.)])[ \t]+")
_ROLE = re.compile(r"(?<![\w`]):(?P<role>[A-Za-z][\w.+-]*(?::[A-Za-z][\w.+-]*)?):`(?P<text>[^`]+)`")
_LINK = re.compile(r"(?<![\w`])`(?P<text>[^`<]+?)(?:<[^<>`]*>)?`__?(?![\w])")
_LITERAL = re.compile(r"``(?P<text>[^`\n](?:[^`]|`(?!`))*?)``")
_FUNCTION_ROLES = frozenset({"func", "meth", "py:func", "py:meth"})
_NUMBERED_ROLES = {"pep": "PEP {}", "rfc": "RFC {}"}

CODE = {
    "code-block": "",
    "code": "",
    "sourcecode": "",
    "parsed-literal": "-",
    "prompt": "-",
    "testcode": "python",
    "doctest": "python",
    "testoutput": "-",
    "ipython": "python",
    "jupyter-execute": "python",
}
"""Directives whose body is code, written as a fenced block: in the language the
directive names ("") or the one given here ("-": none, the argument is no language)."""
DROPPED = frozenset(
    [
        "toctree",
        "autosummary",
        "contents",
        "module",
        "currentmodule",
        "py:module",
        "py:currentmodule",
        "image",
        "raw",
        "include",
        "literalinclude",
        "index",
        "highlight",
        "meta",
        "sectnum",
        "tabularcolumns",
        "default-role",
        "role",
        "testsetup",
        "testcleanup",
        "plot",
        "graphviz",
        "inheritance-diagram",
        "todo",
        "default-domain",
        "program",
        "sectionauthor",
        "codeauthor",
        "moduleauthor",
    ]
)
"""Directives left out whole: the build writes their content, or they show no text (an
HTML build hides a todo). Every `auto*` directive is left out too."""
OTHER_BUILDS = frozenset(["latex", "man", "texinfo", "text", "epub"])
"""`.. only::` conditions that name one build other than HTML: their body is left out."""
NO_TITLE = frozenset(["figure", "container", "rst-class", "ifconfig", "tab-set", "grid"])
"""Directives whose argument is no text of the page (an image's path, a class name):
their body is read, the argument left out."""
INCLUDES = frozenset(["include", "literalinclude"])
"""Directives that read a file into the page, given a way to read it."""
_VERSIONED = {
    "versionadded": "New in version",
    "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version",
    "versionremoved": "Removed in version",
}


class _Inline:
    """A page's inline markup read as text: roles, links, literals, its substitutions
    (`|name|` as its `replace::` text; an image's, nothing) and references to its own
    targets (`Python_`)."""

    def __init__(self, raw: str) -> None:
        self.subs: dict[str, str] = {}
        self.names: set[str] = set()
        self.refs: re.Pattern[str] | None = None
        self.add(raw)

    def add(self, raw: str) -> None:
        """Learn the substitutions and targets `raw` defines (a page, or a file it
        includes)."""
        self.subs.update(
            (
                m.group("name").strip(),
                _markup((m.group("text") or "").strip()) if m.group("kind") == "replace" else "",
            )
            for m in _SUBSTITUTION.finditer(raw)
        )
        self.names |= {m.group("name").strip() for m in _NAMED_TARGET.finditer(raw)}
        words = [
            n for n in sorted(self.names, key=len, reverse=True) if re.fullmatch(r"[\w.-]+", n)
        ]
        self.refs = (
            re.compile(rf"(?<![\w`])({'|'.join(map(re.escape, words))})_(?![\w])", re.IGNORECASE)
            if words
            else None
        )

    def __call__(self, text: str) -> str:
        text = _markup(text)
        if self.subs:
            text = re.sub(
                r"\|([^|\n]+)\|(?:__?)?",
                lambda m: self.subs.get(m.group(1).strip(), m.group(0)),
                text,
            )
        if self.refs is not None:
            text = self.refs.sub(lambda m: m.group(1), text)
        return text


def _markup(text: str) -> str:
    """Roles, links and literals read as their text."""
    text = _ROLE.sub(_role, text)
    text = _LINK.sub(lambda m: m.group("text").strip(), text)
    return _LITERAL.sub(lambda m: f"`{m.group('text')}`", text)


def _role(m: re.Match[str]) -> str:
    """A role's text as the page shows it."""
    text = " ".join(m.group("text").split())
    title = re.match(r"^(?P<t>.+?)[ \t]*<[^<>]+>$", text)
    if title:
        return title.group("t")
    role = m.group("role")
    if role in _NUMBERED_ROLES:
        return _NUMBERED_ROLES[role].format(text)
    text = text.lstrip("!")
    if text.startswith("~"):
        text = text[1:].rsplit(".", 1)[-1]
    if role in _FUNCTION_ROLES and not text.endswith(")"):
        text += "()"
    return text


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _block(lines: list[str], i: int, indent: int) -> int:
    """The index after the indented block starting at `i`: blank lines and lines indented
    more than `indent`, up to the first other line (trailing blank lines left out)."""
    end = i
    while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
        i += 1
        if lines[i - 1].strip():
            end = i
    return end


def _own_lines(lines: list[str], i: int, indent: int) -> int:
    """The index after the lines indented more than `indent` right below `i - 1`, up to
    a blank line: what a target or an empty comment holds."""
    while i < len(lines) and lines[i].strip() and _indent(lines[i]) > indent:
        i += 1
    return i


def _after_options(lines: list[str]) -> tuple[dict[str, str], list[str]]:
    """({option: value}, the rest) of a directive's dedented body: its first lines of
    `:name: value`, a value running on over more-indented lines."""
    options: dict[str, str] = {}
    k = 0
    while k < len(lines) and _OPTION.match(lines[k]) and not _indent(lines[k]):
        name, _, value = lines[k].strip()[1:].partition(":")
        k += 1
        while k < len(lines) and lines[k].strip() and _indent(lines[k]):
            value += " " + lines[k].strip()
            k += 1
        options[name.strip()] = value.strip()
    return options, lines[k:]


class _Reader(NestedReader):
    """One page's lines read in order; `levels` holds the heading styles seen."""

    inline: _Inline

    def __init__(self, inline: _Inline, include: IncludeRaw | None = None) -> None:
        self.inline = inline
        self.include = include
        self.levels: list[tuple[str, bool]] = []
        self.title = ""  # the page's first section title

    def _blocks(self, lines: list[str]) -> list[str]:
        """The lines a reader of the page sees, of `lines` (a page, or a directive's
        body)."""
        out: list[str] = []
        para: list[str] = []  # a paragraph's lines: inline markup may run over them

        def flush() -> None:
            if para:
                out.extend(self._text_line(t) for t in self.inline("\n".join(para)).split("\n"))
                para.clear()

        i = 0
        explicit_end = 0  # where the last explicit markup block ended: another may start
        while i < len(lines):
            line = lines[i]
            starts_block = (
                i in (0, explicit_end)
                or not lines[i - 1].strip()
                or _indent(lines[i - 1]) > _indent(line)
            )
            heading = self._heading(lines, i)
            if heading is not None:
                flush()
                out.append(heading[0])
                i += heading[1]
                continue
            if starts_block and (_EXPLICIT.match(line) or _ANONYMOUS.match(line)):
                flush()
                i = explicit_end = self._explicit(lines, i, out)
                continue
            if not line.strip() or _TABLE_RULE.match(line):
                flush()
                if not line.strip():
                    out.append(line)
                i += 1
                continue
            if line.rstrip().endswith("::"):
                end = self._literal(lines, i, para)
                if end is not None:
                    flush()
                    out.extend(["", *fenced_lines(lines[self._code_start(lines, i) : end]), ""])
                    i = end
                    continue
            para.append(line)
            i += 1
        flush()
        return out

    def _text_line(self, line: str) -> str:
        """A line of text, escaped where markdown would read it as a heading."""
        return "\\" + line.lstrip() if _READS_AS_HEADING.match(line) else line

    def _explicit(self, lines: list[str], i: int, out: list[str]) -> int:
        """An explicit markup block at `i` read into `out`; the index after it."""
        line = lines[i]
        m = _DIRECTIVE.match(line)
        if m:
            end = _block(lines, i + 1, _indent(line))
            out.extend(self._directive(m, lines[i + 1 : end]))
            return end
        note = _FOOTNOTE.match(line)
        if note:  # a footnote or citation: its text, marked with its label
            end = _block(lines, i + 1, _indent(line))
            body = textwrap.dedent("\n".join(lines[i + 1 : end])).split("\n")
            first = f"[{note.group('label')}] {note.group('text') or ''}".rstrip()
            out.extend(["", *self._nested([first, *body]), ""])
            return end
        if _TARGET.match(line):  # a target, an empty comment: its own lines only
            return _own_lines(lines, i + 1, _indent(line))
        return _block(lines, i + 1, _indent(line))  # a comment, a substitution definition

    def _heading(self, lines: list[str], i: int) -> tuple[str, int] | None:
        """A section title at `i` (`#`'s and its text, lines used), or None: a line
        after a blank one (or an overline), under a rule as long as it, or shorter but
        of four characters or more (docutils reads that as a title, with a warning)."""

        def rule(k: int) -> str | None:
            m = _ADORNMENT.match(lines[k]) if 0 <= k < len(lines) else None
            return m.group(1) if m else None

        over = rule(i)
        start = i + 1 if over else i
        if start + 1 >= len(lines) or (over is None and i > 0 and lines[i - 1].strip()):
            return None
        text = lines[start].strip()
        under = rule(start + 1)
        if not text or _ADORNMENT.match(lines[start]) or under is None:
            return None
        if over is not None and over != under:
            return None
        rule_len = len(lines[start + 1].strip())
        if rule_len < len(text) and rule_len < 4:  # docutils: a short rule under 4 is text
            return None
        style = (under, over is not None)
        if style not in self.levels:
            self.levels.append(style)
        level = min(self.levels.index(style) + 1, 6)
        title = self.inline(text)
        self.title = self.title or title
        return f"{'#' * level} {title}", (start + 2) - i

    def _directive(self, m: re.Match[str], body: list[str]) -> list[str]:
        """What a directive shows (see the module docstring)."""
        name = m.group("name").lower()
        arg = (m.group("arg") or "").strip()
        options, rest = _after_options(textwrap.dedent("\n".join(body)).split("\n"))
        if name in INCLUDES and self.include is not None:
            return self._included(name, arg, options)
        if name in DROPPED or name.startswith("auto"):
            return []
        if name == "only" and arg.strip() in OTHER_BUILDS:
            return []  # shown in another build only (a PDF, man pages)
        if name in CODE:
            if not any(s.strip() for s in rest):
                return []
            lang = "" if CODE[name] == "-" else CODE[name] or arg.split(" ")[0]
            caption = self.inline(options.get("caption", ""))
            return ["", *([caption, ""] if caption else []), *fenced_lines(rest, lang), ""]
        head = "" if name in NO_TITLE or name == "only" else self.inline(arg)
        if name in _VERSIONED:
            version, _, why = arg.partition(" ")
            body_text = any(s.strip() for s in rest)
            head = f"{_VERSIONED[name]} {version}" + (
                f": {self.inline(why.strip())}" if why.strip() else ":" if body_text else "."
            )
        if "header" in options:
            head = "\n".join(x for x in (head, options["header"].replace('"', "")) if x)
        text = self._nested(rest)
        return ["", *(head.split("\n") if head else []), *text, ""]

    def _included(self, name: str, arg: str, options: dict[str, str]) -> list[str]:
        """The part of an included file the directive's options select: reStructuredText
        read where it stands, with its own includes; code (`literalinclude`, an include
        `:literal:` or `:code:`) as a fenced block under its caption. A standard
        definitions file (`<isonum.txt>`) shows nothing."""
        if arg.startswith("<") or self.include is None:
            return []
        got = self.include(arg)
        if got is None:
            return []
        text, inner = got
        code = name == "literalinclude" or "literal" in options or "code" in options
        lines = _selected(text.replace("\r\n", "\n"), options, name == "literalinclude")
        if lines is None:
            return []
        if code:
            suffix = arg.rpartition(".")[2] if "." in arg.rpartition("/")[2] else ""
            lang = options.get("language") or options.get("code") or suffix
            caption = self.inline(options.get("caption", ""))
            body = [options.get("prepend", ""), *lines, options.get("append", "")]
            return ["", *([caption, ""] if caption else []), *fenced_lines(body, lang), ""]
        if arg.lower().endswith(MARKDOWN_SUFFIXES) or "myst" in options.get("parser", ""):
            return ["", *markdown_text("\n".join(lines))[0].split("\n"), ""]
        self.inline.add("\n".join(lines))  # its substitutions and targets
        outer = self.include
        self.include = inner
        try:
            return self._nested(lines)
        finally:
            self.include = outer

    def _code_start(self, lines: list[str], i: int) -> int:
        """The first line of the literal block after the `::` line `i`."""
        j = i + 1
        while not lines[j].strip():
            j += 1
        return j

    def _literal(self, lines: list[str], i: int, para: list[str]) -> int | None:
        """A `::` line at `i` with an indented block after it (more than the text of
        its line, a list item's text included): its text goes to `para` with `:` (or
        nothing, for a lone `::`; "Example ::" reads "Example"); the index after the
        block, or None when no indented block follows."""
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        item = _LIST_ITEM.match(lines[i])
        column = len(item.group(0)) if item else _indent(lines[i])
        if j >= len(lines) or j == i + 1 or _indent(lines[j]) <= column:
            return None
        text = lines[i].rstrip()[:-2]
        if text.strip():
            para.append(text.rstrip() if text[-1] in " \t" else text + ":")
        return _block(lines, j, column)


def _selected(text: str, options: dict[str, str], literal: bool) -> list[str] | None:
    """The lines of an included file its directive's options select, or None when a
    marker or object they name is not in it (the build shows nothing then):
    `:start-line:`/`:end-line:` (0-based, end excluded); then, for a `literalinclude`
    (Sphinx, whole lines), `:pyobject:` (a function or class, `Class.method`), the lines
    from `:start-at:` or after `:start-after:`'s, up to `:end-at:`'s or before
    `:end-before:`'s, and `:lines:` (`1,3,5-10,20-`, 1-based); for an `include`
    (docutils, characters), the text after `:start-after:` and before `:end-before:`."""
    lines = text.removesuffix("\n").split("\n")
    with contextlib.suppress(ValueError):
        start = int(options.get("start-line", 0) or 0)
        end = int(options["end-line"]) if options.get("end-line") else len(lines)
        lines = lines[start:end]
    if not literal:
        text = "\n".join(lines)
        after, before = options.get("start-after"), options.get("end-before")
        if (after and after not in text) or (before and before not in text):
            return None
        if after:  # the rest of the marker's line, unless it is blank
            text = text.split(after, 1)[1]
            rest_of_line, _, below = text.partition("\n")
            text = below if not rest_of_line.strip() else text
        if before:  # the start of the marker's line, unless it is blank
            text = text.split(before, 1)[0]
            above, _, line_start = text.rpartition("\n")
            text = above if not line_start.strip() else text
        return text.split("\n")
    if options.get("pyobject"):
        found = _python_object(lines, options["pyobject"])
        if found is None:
            return None
        lines = found
    for option, keep_marker in (("start-at", True), ("start-after", False)):
        if options.get(option):
            at = next((n for n, x in enumerate(lines) if options[option] in x), None)
            if at is None:
                return None
            lines = lines[at if keep_marker else at + 1 :]
    for option, keep_marker in (("end-at", True), ("end-before", False)):
        if options.get(option):
            at = next((n for n, x in enumerate(lines) if options[option] in x), None)
            if at is None:
                return None
            lines = lines[: at + 1 if keep_marker else at]
    if options.get("lines"):
        keep: list[int] = []
        for part in options["lines"].split(","):
            a, dash, b = part.strip().partition("-")
            with contextlib.suppress(ValueError):
                first = int(a) if a else 1
                last = (int(b) if b else len(lines)) if dash else first
                keep.extend(range(max(first, 1), min(last, len(lines)) + 1))
        lines = [lines[n - 1] for n in keep]
    return lines


def _python_object(lines: list[str], name: str) -> list[str] | None:
    """The lines of the Python function or class `name` (`Class.method`) in `lines`,
    decorators included; None when the code does not parse or holds no such object."""
    import ast

    try:
        tree: ast.AST = ast.parse("\n".join(lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # deep or odd code
        return None
    node: ast.AST | None = tree
    for part in name.split("."):
        found = [
            n
            for n in getattr(node, "body", [])
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and n.name == part
        ]
        node = found[0] if found else None
        if node is None:
            return None
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return lines[start - 1 : node.end_lineno]


def rst_text(raw: str, include: IncludeRaw | None = None) -> tuple[str, str]:
    """(the text a reader of the built page sees, its title) of a reStructuredText file:
    see the module docstring. `include` reads the files `.. include::` and
    `.. literalinclude::` name; without it they are left out. The title is the first
    section title's."""
    raw = raw.removeprefix("\ufeff")
    written = raw.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    top = 0  # file-wide metadata fields (`:orphan:`, `:tocdepth: 2`) before any text
    while top < len(written) and (not written[top].strip() or _OPTION.match(written[top])):
        top += 1
    fields = any(_OPTION.match(x) for x in written[:top])
    reader = _Reader(_Inline(raw), include)
    lines = reader.read(written[top:] if fields else written)
    if lines == written:
        return raw, reader.title  # nothing read differently: the file as written
    return squeeze_blank_lines(lines), reader.title
