"""Markdown as documentation sites write it, read as the text their pages show.

Static-site generators (Docusaurus, Hugo, Jekyll, MkDocs, Quarto) add to markdown what a
reader never sees as text; indexed as written it lands in chunks and in the judge's
prompts. `markdown_text` keeps the text and its markdown (headings, lists, code) and
leaves out, outside code blocks:

- front matter: a YAML block between `---` lines at the very top (a `+++` block of TOML
  for Hugo). Its `title` becomes the document's title and, when the page itself does not
  open with a `# heading`, its first line (`# title`), as the site shows it; a
  `subtitle` follows it. A block that does not read as a mapping stays text.
- heading attributes: `## Cache policy {#cache-policy}` reads `## Cache policy`.
- the markers of admonitions and fenced divs (`:::note`, `::: {.callout-tip}`, `:::`,
  MkDocs' `!!! note`): their text stays; a title they give (`:::info[Prerequisites]`,
  `!!! tip "Speed"`, `title="..."`) is kept as a line.
- shortcodes on a line of their own (`{{< video ... >}}`), HTML comments, `<style>`
  and `<script>` blocks, raw-format blocks (```` ```{=html} ````), and lines made only of
  HTML tags (`<div align="center">`, `<br/>`) or of Pandoc's anchors (`[]{#sec-x}`).
- in MDX, `import` and `export` lines and lines made only of components' tags
  (`<Tabs>`, `<TabItem value="py">`).

Quarto's `{{< include _part.md >}}`, given a way to read the file (`include`), is
replaced by the included file's text, as the rendered page shows it; without one, or
when the file cannot be read, the line is left out like any other shortcode.

A line of text wrapped in layout tags only (`<summary>Details</summary>`) reads as its
text (`<h2>` as `## `). Code blocks, fenced or indented by four spaces after a blank
line (not below a list item, an admonition or an HTML block, whose own lines those
are), keep every line as written.

A plain markdown file without any of these reads byte for byte as written.
"""

from __future__ import annotations

import re
import textwrap
import tomllib
from collections.abc import Callable
from typing import Any, Protocol

import yaml

from harness.corpus.headings import closes_fence, first_heading

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx", ".qmd", ".rmd")
"""Files read as markdown: plain, MDX (Docusaurus), Quarto and R Markdown."""

_KEY = re.compile(r"^[A-Za-z_][\w-]*[ \t]*[:=]")
"""A front matter line that starts a key (`title:`, Hugo's `title =`)."""
_FENCE = re.compile(r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_HEADING_ATTRS = re.compile(r"^(?P<head>#{1,6}[ \t]+.*?)[ \t]*\{[#.][^{}]*\}[ \t]*$")
_DIV = re.compile(r"^[ \t]*:{3,}(?P<rest>.*)$")
_ADMONITION = re.compile(r"^[ \t]*(?:!!!|\?\?\?\+?)(?P<rest>[ \t].*)$")
_ATTR_TITLE = re.compile(r"""\btitle=["'](?P<t>[^"']*)["']""")
_MARKER = re.compile(
    r"""^[\w-]*[ \t]*(?:\[(?P<b>[^\]]*)\]|["'](?P<q>[^"']*)["']|(?P<w>[^{"'].*))?"""
)
_SHORTCODE = re.compile(r"^[ \t]*\{\{[<%].*[>%]\}\}[ \t]*$")
_INCLUDE = re.compile(
    r"""^[ \t]*\{\{<[ \t]*include[ \t]+(?:"(?P<dq>[^"]+)"|'(?P<sq>[^']+)'|(?P<target>\S+))"""
    r"[ \t]*>\}\}[ \t]*$"
)

Include = Callable[[str], str | None]
"""Reads an included file: its target as the page writes it, to the file's text as a
reader sees it (already read as markdown), or None when there is no such file."""


class IncludeRaw(Protocol):
    """Reads an included file: its target as the page writes it (attributes replaced),
    to (its text as written, the reader of the includes inside it), or None when it
    cannot be read (the reader says why)."""

    def __call__(self, target: str, optional: bool = False) -> tuple[str, IncludeRaw] | None:
        """The included file's text and its includes' reader, or None (said in a
        warning, but for a missing file when the include is `optional`)."""


_TAG = r"</?(?P<name>[A-Za-z][\w.:-]*)(?:\s[^<>]*)?/?>"
_TAGS_ONLY = re.compile(rf"^[ \t]*(?:{_TAG}[ \t]*)+$")
_WRAPPED = re.compile(
    r"^[ \t]*(?:<[A-Za-z][^<>]*>[ \t]*)+(?P<text>[^<>]+)(?:</[A-Za-z][^<>]*>[ \t]*)+$"
)
_INDENTED = re.compile(r"^(?: {4}|[ ]{0,3}\t)")
_CONTAINER = re.compile(r"^[ \t]{0,3}(?:(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)|!!!|\?\?\?|===|<)")
"""A line whose indented lines below belong to it, not to a code block: a list item, an
admonition or content tab (MkDocs), an HTML block."""
_TAG_NAMES = re.compile(_TAG)
_ANCHORS_ONLY = re.compile(r"^[ \t]*(?:\[\]\{[^{}]*\}[ \t]*)+$")
_STYLE_OR_SCRIPT = re.compile(r"<(style|script)(?=[\s>/]|$)")
_MDX_COMMENT = re.compile(r"^[ \t]*\{/\*.*\*/\}[ \t]*$")
_MDX_STATEMENT = re.compile(r"^(?:import|export)\s")
_HTML_WORDS = (
    "a abbr address article aside b blockquote br center code dd del details dfn div dl dt "
    "em figcaption figure font footer h1 h2 h3 h4 h5 h6 header hr i iframe img ins kbd li "
    "main mark nav ol p picture pre q s section small source span strong sub summary sup "
    "table tbody td tfoot th thead tr u ul video audio"
)
HTML_NAMES = frozenset(_HTML_WORDS.split())
"""Elements whose tags, alone on a line, are layout rather than text."""


def front_matter(raw: str) -> tuple[dict[str, Any], str]:
    """(its front matter, the rest) of a markdown file; ({}, raw) without one.

    Front matter is a YAML mapping between a first line `---` and the next line `---` or
    `...`, or a TOML table between `+++` lines (Hugo), its first line a key and every key
    a name (`title`, `sidebar_position`); an empty block is empty front matter. A block
    that does not parse as such a mapping is not front matter: a page may open with a
    horizontal rule and a paragraph ("Note: this guide assumes Python 3.").
    """
    first, _, rest = raw.partition("\n")
    closers = {"---": ("---", "..."), "+++": ("+++",)}.get(first.rstrip())
    if closers is None:
        return {}, raw
    lines = rest.split("\n")
    end = next((i for i, line in enumerate(lines) if line.rstrip() in closers), None)
    if end is None:
        return {}, raw
    body = "\n".join(lines[end + 1 :])
    block = "\n".join(lines[:end])
    if not block.strip():
        return {}, body  # Jekyll's empty front matter
    if not _KEY.match(lines[0]):
        return {}, raw  # a rule, a blank line, then a paragraph: text
    try:
        # every value as text: a date or a "yes" stays as written, and a bad one is no error
        meta = tomllib.loads(block) if first.startswith("+") else yaml.load(block, yaml.BaseLoader)
    except (yaml.YAMLError, tomllib.TOMLDecodeError, ValueError, TypeError, RecursionError):
        return {}, raw
    if not isinstance(meta, dict) or not all(_KEY.match(f"{k}:") for k in meta):
        return {}, raw
    return meta, body


def _marker_title(rest: str) -> str:
    """The title an admonition or div marker gives, or "": what follows its kind
    (`:::info[Title]`, `:::tip Title`, `!!! note "Title"`) or, in an attribute block
    (`::: {.callout-note title="Title"}`), its `title`."""
    rest = rest.strip().rstrip(":").strip()  # Pandoc's `::: Warning ::::::`
    if rest.startswith("{"):
        m = _ATTR_TITLE.search(rest)
        return m.group("t").strip() if m else ""
    m = _MARKER.match(rest)
    return (m.group("b") or m.group("q") or m.group("w") or "").strip() if m else ""


def _layout_only(line: str, mdx: bool) -> bool:
    """Whether `line` is only HTML layout tags (or, in MDX, components' tags), or only
    Pandoc's empty anchors (`[]{#sec-models}`)."""
    if _ANCHORS_ONLY.match(line):
        return True
    if not _TAGS_ONLY.match(line):
        return False
    names = [m.group("name") for m in _TAG_NAMES.finditer(line)]
    return all(n.lower() in HTML_NAMES or (mdx and n[0].isupper()) for n in names)


def code_fence(code: str, language: str = "") -> str:
    """`code` as a fenced block: a fence longer than any run of backticks in it, which
    it cannot close, with `language` after the opening one."""
    fence = "`" * max(3, max(map(len, re.findall("`+", code)), default=0) + 1)
    return f"{fence}{language}\n{code}\n{fence}"


def fenced_lines(lines: list[str], language: str = "") -> list[str]:
    """Code lines, dedented and without the blank lines around them, as the lines of a
    fenced block (`code_fence`)."""
    code = textwrap.dedent("\n".join(lines)).strip("\n")
    return code_fence(code, language.strip()).split("\n")


MAX_NESTING = 50
"""Blocks within blocks (directives, delimited blocks) read as such; deeper, a block's
lines are read as text."""


class NestedReader:
    """A reader of a page's lines as blocks, each block's lines read one level deeper
    (`_nested`), up to MAX_NESTING: deeper, a block's lines read as text (`inline`),
    not as a recursion error. Subclasses read blocks in `_blocks`."""

    depth = 0
    inline: Callable[[str], str]

    def read(self, lines: list[str]) -> list[str]:
        """The lines a reader of the page sees, of `lines` (a page, or a block's)."""
        if self.depth > MAX_NESTING:
            return self.inline("\n".join(lines)).split("\n")
        return self._blocks(lines)

    def _blocks(self, lines: list[str]) -> list[str]:
        raise NotImplementedError

    def _nested(self, lines: list[str]) -> list[str]:
        """A block's lines, read one level deeper."""
        self.depth += 1
        try:
            return self.read(lines)
        finally:
            self.depth -= 1


def squeeze_blank_lines(lines: list[str]) -> str:
    """Lines a reader wrote (markup left out where they stood) joined, with one blank
    line where several fell in a row, outside fenced code (whose blank lines are the
    code's), and none at either end."""
    squeezed: list[str] = []
    fence = ""  # the open code fence
    for line in lines:
        if fence:
            fence = "" if line == fence else fence
        elif re.fullmatch(r"`{3,}\S*", line):
            fence = "`" * (len(line) - len(line.lstrip("`")))
        elif not line.strip() and (not squeezed or not squeezed[-1].strip()):
            continue
        squeezed.append(line)
    return "\n".join(squeezed).strip("\n")


def _body_lines(body: str, mdx: bool, include: Include | None = None) -> tuple[list[str], bool]:
    """The lines of `body` a reader sees as text (see the module docstring), and whether
    any was left out or changed. Where lines are left out, no more than one blank line
    stays in a row outside code blocks (a code block keeps its lines as written)."""
    out: list[str] = []
    changed = False
    fence = ""  # the open code fence, "" outside one
    raw_block = False  # inside ```{=html}: left out whole
    skip_until = ""  # the closing of an HTML comment, <style> or <script> block
    indented = False  # inside an indented code block
    blank_before = True  # the line above (as written) is blank, or this is the first
    container = False  # below a list item, admonition or HTML block, up to unindented text
    for line in body.split("\n"):
        if skip_until:
            if skip_until in line.lower() or (skip_until == "\n" and not line.strip()):
                skip_until = ""
            continue
        m = _FENCE.match(line)
        if fence:
            if not raw_block:
                out.append(line)
            if m and closes_fence(m.group("fence"), m.group("info"), fence):
                fence, raw_block = "", False
            continue
        if m:
            fence = m.group("fence")
            raw_block = m.group("info").strip().startswith("{=")
            changed |= raw_block
            if not raw_block:
                out.append(line)
            continue
        blank, after_blank = not line.strip(), blank_before
        blank_before = blank
        if not blank and _INDENTED.match(line):
            if indented or (after_blank and not container):
                indented = True  # after a blank line, outside a list or a block: code
                out.append(line)
                continue
        elif not blank:
            indented = False
            container = bool(_CONTAINER.match(line))
        included = _INCLUDE.match(line)
        if included and include is not None:
            changed = True
            text = include(next(t for t in included.group("dq", "sq", "target") if t))
            if text:
                out.extend(text.split("\n"))
            continue
        kept = _visible(line, mdx)
        if kept is None:
            changed = True
            skip_until = _opens_block(line)
            if mdx and _MDX_STATEMENT.match(line):
                skip_until = "" if _statement_ends(line) else "\n"  # to the blank line
            continue
        changed |= kept != line
        if not kept.strip() and (not out or not out[-1].strip()):
            continue  # a blank line after a blank line or a line left out
        out.append(kept)
    return out, changed


def _opens_block(line: str) -> str:
    """What closes the HTML comment, `<style>` or `<script>` block `line` opens without
    closing it, or ""."""
    low = line.strip().lower()
    if low.startswith("<!--"):
        return "" if "-->" in low else "-->"
    m = _STYLE_OR_SCRIPT.match(low)
    if m and f"</{m.group(1)}>" not in low:
        return f"</{m.group(1)}>"
    return ""


def _statement_ends(line: str) -> bool:
    """Whether an MDX `import`/`export` line is the whole statement: a one-line import
    (`import X from 'y';`) or an export that opens no bracket it does not close. MDX
    runs a statement on to the next blank line otherwise."""
    text = line.strip()
    opened = sum(text.count(c) for c in "({[") - sum(text.count(c) for c in ")}]")
    return opened <= 0 and (text.startswith("export") or " from " in text or text.endswith(";"))


def _visible(line: str, mdx: bool) -> str | None:
    """`line` as a reader sees it outside code blocks: None when it is left out whole
    (see the module docstring), a marker's title in place of the marker, a heading
    without its attributes."""
    low = line.strip().lower()
    if _opens_block(line) or (low.startswith("<!--") and low.endswith("-->")):
        return None
    if _STYLE_OR_SCRIPT.match(low):
        return None  # a block opened and closed on its own line
    if mdx and (_MDX_STATEMENT.match(line) or _MDX_COMMENT.match(line)):
        return None
    if _SHORTCODE.match(line):
        return None
    div = _DIV.match(line) or _ADMONITION.match(line)
    if div:
        return _marker_title(div.group("rest")) or None
    if _layout_only(line, mdx):
        return None
    wrapped = _unwrapped(line)
    if wrapped is not None:
        return wrapped
    attrs = _HEADING_ATTRS.match(line)
    return attrs.group("head") if attrs else line


def _unwrapped(line: str) -> str | None:
    """The text of a line that is only text inside layout tags (`<summary>Details
    </summary>`, `<p align="center">Text</p>`; `<h2>Title</h2>` as `## Title`), or None
    for any other line: a tag within a sentence stays as written."""
    m = _WRAPPED.match(line)
    if not m or not m.group("text").strip():
        return None
    names = [t.group("name").lower() for t in _TAG_NAMES.finditer(line)]
    if not all(n in HTML_NAMES for n in names):
        return None
    level = next((int(n[1]) for n in names if re.fullmatch(r"h[1-6]", n)), 0)
    text = m.group("text").strip()
    return f"{'#' * level} {text}" if level else text


def _meta_text(meta: dict[str, Any], key: str) -> str:
    """A front matter field as text: a string or number; "" for a list, a mapping or
    nothing."""
    value = meta.get(key)
    return " ".join(str(value).split()) if isinstance(value, str | int | float) else ""


def markdown_text(
    raw: str, *, mdx: bool = False, include: Include | None = None
) -> tuple[str, str]:
    """(the text a reader of the rendered page sees, its title) of a markdown file; the
    title is the front matter's, else the first heading's, else "". See the module
    docstring for what is left out; `mdx` also leaves out MDX's imports, exports and
    component tags; `include` reads the files Quarto's include shortcodes name."""
    meta, body = front_matter(raw)
    lines, changed = _body_lines(body, mdx, include)
    # nothing to leave out: the file as written, byte for byte
    text = "\n".join(lines).strip("\n") if changed or body is not raw else raw
    title = _meta_text(meta, "title")
    if title and text.strip() and not re.match(r"#[ \t]", text.lstrip()):
        subtitle = _meta_text(meta, "subtitle")
        text = f"# {title}\n\n" + (f"{subtitle}\n\n" if subtitle else "") + text
    if not title:
        title = first_heading(text)
    return text, title
