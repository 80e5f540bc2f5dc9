"""reStructuredText (Sphinx documentation) read as the text its pages show.

A Sphinx page is written with markup its reader never sees as text; indexed as written it
lands in chunks and in the judge's prompts (`:class:`~optuna.storages.InMemoryStorage``,
`.. autosummary::` and its entries, `.. _label:` targets). `rst_text` keeps the text and
writes its structure as markdown, as the markdown reader keeps it:

- section titles (a line of text under, and maybe over, a line of one repeated
  punctuation character) become `#` headings, a level for each underline style in the
  order the page first uses it;
- code: `.. code-block:: python` (and `code`, `sourcecode`, `testcode`, `doctest`,
  `ipython`, `jupyter-execute`) and a literal block after a paragraph's `::` become
  fenced code blocks, dedented, without the directive's options; a paragraph's `::`
  reads `:`;
- admonitions (`.. note::`, `.. warning::`, `.. seealso::`, ...) and other directives
  with text (`.. topic::`, `.. list-table::`, `.. only::`, a described function's
  signature): their text, dedented, without the marker and options;
  `.. versionadded:: 3.0` reads "New in version 3.0." as Sphinx writes it;
- left out: file-wide metadata fields at the top (`:orphan:`), directives whose content the build writes or that show no text
  (`toctree`, `autosummary`, `auto*`, `contents`, `module`, `currentmodule`, `image`,
  `raw`, `include`, `index`, `highlight`, `testsetup`, ...), hyperlink targets
  (`.. _label:`), comments and substitution definitions;
- inline: roles read as their text (`:class:`~a.b.C`` as `C`, `:meth:`~a.B.run`` as
  `run()`, `:ref:`Title <label>`` as `Title`), links as their text (`` `PyPI
  <https://pypi.org>`__ `` as `PyPI`), ``` ``literal`` ``` as `` `literal` ``.

A file without any of these reads byte for byte as written.
"""

from __future__ import annotations

import re
import textwrap

from harness.corpus.headings import first_heading

_DIRECTIVE = re.compile(
    r"^(?P<indent>[ \t]*)\.\.[ \t]+(?P<name>[\w:.+-]+)::(?:[ \t]+(?P<arg>.*))?$"
)
_EXPLICIT = re.compile(r"^[ \t]*\.\.(?:[ \t]|$)")
"""Any explicit markup line: a directive, a target, a substitution, a comment."""
_OPTION = re.compile(r"^[ \t]*:[\w-][\w ,.-]*:(?:[ \t].*)?$")
_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$")
_ROLE = re.compile(
    r"(?<![\w`]):(?P<role>[A-Za-z][\w.+-]*(?::[A-Za-z][\w.+-]*)?):`(?P<text>[^`\n]+)`"
)
_LINK = re.compile(r"(?<![\w`])`(?P<text>[^`<\n]+?)[ \t]*(?:<[^<>`\n]*>)?`__?(?![\w])")
_LITERAL = re.compile(r"``(?P<text>[^`\n](?:[^`\n]|`(?!`))*?)``")
MAX_NESTING = 50
"""Directives within directives read as such; deeper, a body is read as text."""
_FUNCTION_ROLES = frozenset({"func", "meth", "py:func", "py:meth"})

CODE = frozenset(
    ["code-block", "code", "sourcecode", "testcode", "doctest", "ipython", "jupyter-execute"]
)
"""Directives whose body is code: written as a fenced block in the directive's language."""
DROPPED = frozenset(
    [
        "toctree",
        "autosummary",
        "contents",
        "automodule",
        "autoclass",
        "autofunction",
        "automethod",
        "autoattribute",
        "autodata",
        "autoexception",
        "autoproperty",
        "autodecorator",
        "autoprogram",
        "autoclasstree",
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
        "testoutput",
        "figure-placeholder",
        "plot",
        "graphviz",
        "inheritance-diagram",
    ]
)
"""Directives left out whole: the build writes their content, or they show no text."""
NO_TITLE = frozenset(["figure", "only", "container", "class", "ifconfig", "tab-set", "grid"])
"""Directives whose argument is no text of the page (an image's path, a condition, a
class name): their body is read, the argument left out."""
_VERSIONED = {
    "versionadded": "New in version {}.",
    "versionchanged": "Changed in version {}.",
    "deprecated": "Deprecated since version {}.",
    "versionremoved": "Removed in version {}.",
}


def _inline(line: str) -> str:
    """A text line with its roles, links and literals read as their text."""

    def role(m: re.Match[str]) -> str:
        text = m.group("text").strip()
        title = re.match(r"^(?P<t>.+?)[ \t]*<[^<>]+>$", text)
        if title:
            return title.group("t")
        text = text.lstrip("!")
        if text.startswith("~"):
            text = text[1:].rsplit(".", 1)[-1]
        if m.group("role") in _FUNCTION_ROLES and not text.endswith(")"):
            text += "()"
        return text

    line = _ROLE.sub(role, line)
    line = _LINK.sub(lambda m: m.group("text"), line)
    return _LITERAL.sub(lambda m: f"`{m.group('text')}`", line)


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


def _after_options(lines: list[str]) -> list[str]:
    """A directive's body without its options (its first lines of `:name: value`)."""
    k = 0
    while k < len(lines) and _OPTION.match(lines[k]):
        k += 1
    return lines[k:]


def _fenced(lang: str, lines: list[str]) -> list[str]:
    """Code lines, dedented, in a fence longer than any backtick run in them."""
    code = textwrap.dedent("\n".join(lines)).strip("\n")
    ticks = max([3, *(len(t) + 1 for t in re.findall(r"`{3,}", code))])
    return ["`" * ticks + lang.strip(), *code.split("\n"), "`" * ticks]


class _Reader:
    """One page's lines read in order; `levels` holds the heading styles seen."""

    def __init__(self) -> None:
        self.levels: list[tuple[str, bool]] = []
        self.depth = 0  # directives within directives being read

    def read(self, lines: list[str]) -> list[str]:
        """The lines a reader of the page sees, of `lines` (a page, or a directive's
        body); below MAX_NESTING directives deep, a body's lines are read as text."""
        if self.depth > MAX_NESTING:
            return [_inline(line) for line in lines]
        out: list[str] = []
        i = 0
        while i < len(lines):
            line = lines[i]
            heading = self._heading(lines, i)
            if heading is not None:
                text, used = heading
                out.append(text)
                i += used
                continue
            m = _DIRECTIVE.match(line)
            if m:
                end = _block(lines, i + 1, _indent(line))
                out.extend(self._directive(m, lines[i + 1 : end]))
                i = end
                continue
            if _EXPLICIT.match(line):  # a target, a substitution, a comment: left out
                i = _block(lines, i + 1, _indent(line))
                continue
            if line.rstrip().endswith("::") and line.strip():
                end = self._literal(lines, i, out)
                if end is not None:
                    i = end
                    continue
            out.append(_inline(line))
            i += 1
        return out

    def _heading(self, lines: list[str], i: int) -> tuple[str, int] | None:
        """A section title at `i` (`#`'s and its text, lines used), or None."""

        def rule(k: int) -> str | None:
            m = _ADORNMENT.match(lines[k]) if 0 <= k < len(lines) else None
            return m.group(1) if m else None

        over = rule(i)
        start = i + 1 if over else i
        if start + 1 >= len(lines):
            return None
        text = lines[start].strip()
        under = rule(start + 1)
        if not text or _ADORNMENT.match(lines[start]) or under is None:
            return None
        if over is not None and over != under:
            return None
        if len(lines[start + 1].rstrip()) < len(text):
            return None
        style = (under, over is not None)
        if style not in self.levels:
            self.levels.append(style)
        level = min(self.levels.index(style) + 1, 6)
        return f"{'#' * level} {_inline(text)}", (start + 2) - i

    def _directive(self, m: re.Match[str], body: list[str]) -> list[str]:
        """What a directive shows (see the module docstring)."""
        name = m.group("name").lower()
        arg = (m.group("arg") or "").strip()
        rest = _after_options(textwrap.dedent("\n".join(body)).split("\n") if body else [])
        if name in DROPPED or name.startswith("auto"):
            return []
        if name in CODE:
            return ["", *_fenced(arg, rest), ""] if any(s.strip() for s in rest) else []
        if name in _VERSIONED:
            head = _VERSIONED[name].format(arg)
        else:
            head = "" if name in NO_TITLE else _inline(arg)
        self.depth += 1
        try:
            text = self.read(rest)
        finally:
            self.depth -= 1
        return ["", *([head] if head else []), *text, ""]

    def _literal(self, lines: list[str], i: int, out: list[str]) -> int | None:
        """A paragraph ending in `::` and its literal block: the paragraph with `:` (or
        nothing, for a lone `::`), the block fenced; the index after it, or None when no
        indented block follows."""
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j >= len(lines) or _indent(lines[j]) <= _indent(lines[i]):
            return None
        end = _block(lines, j, _indent(lines[i]))
        text = lines[i].rstrip()[:-2]
        if text.strip():  # "Example::" reads "Example:", "Example ::" reads "Example"
            out.append(_inline(text.rstrip() if text[-1] in " \t" else text + ":"))
        out.extend(["", *_fenced("", lines[j:end]), ""])
        return end


def rst_text(raw: str) -> tuple[str, str]:
    """(the text a reader of the built page sees, its title) of a reStructuredText file:
    see the module docstring. The title is the first section title's."""
    written = raw.split("\n")
    top = 0  # file-wide metadata fields (`:orphan:`, `:tocdepth: 2`) before any text
    while top < len(written) and (not written[top].strip() or _OPTION.match(written[top])):
        top += 1
    lines = _Reader().read(
        written[top:] if any(_OPTION.match(x) for x in written[:top]) else written
    )
    if lines == written:
        return raw, first_heading(raw)  # nothing read differently: the file as written
    squeezed: list[str] = []
    fence = ""  # the open code fence: its blank lines are the code's
    for line in lines:
        if fence:
            fence = "" if line == fence else fence
        elif re.fullmatch(r"`{3,}\S*", line):
            fence = "`" * (len(line) - len(line.lstrip("`")))
        elif not line.strip() and (not squeezed or not squeezed[-1].strip()):
            continue  # one blank line in a row where markup was left out
        squeezed.append(line)
    text = "\n".join(squeezed).strip("\n")
    return text, first_heading(text)
