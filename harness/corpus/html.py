"""The readable text of a saved HTML page: its main content, laid out in lines.

A page saved from a site carries the site around its content: a header with the search
box, the navigation menu and table of contents, a footer, "¶" anchors beside every
heading. Indexed as they are, these lines open every document's first chunk with the
same menu (which names every topic, so it matches many questions), and the text between
inline tags (`<code>`, `<a>`, `<em>`) falls apart into one line per tag.

`html_text` keeps what a reader of the page reads:

- the content: the elements `html_classes` name when given; otherwise the page's first
  shown `<main>` (or `role="main"`), else its only `<article>`, else its `<body>`;
- never: scripts, styles, form fields, hidden elements, heading anchors (`a.headerlink`,
  `a.hash-link`, `a.anchor`, `aria-hidden`), the markers e-books put where a printed
  page ended, a ruby's reading (its base text is read) and a book's table of contents
  (`<nav epub:type="toc">`);
- without what is not content inside it: `nav`, `aside` (but footnotes, which
  docutils and Sphinx write as asides), `footer` and the same ARIA
  landmarks on other elements (`role="navigation"`, `"contentinfo"`, ...), breadcrumb
  trails, a header (or `role="banner"`) outside an article, section, main, aside or nav
  (the page's banner), and what Confluence's HTML export puts around a page (its
  "Created by" line, attachments and comments lists; these only when no
  `html_classes` are given);
- in lines: a block element (paragraph, heading, list item, table row, ...) starts a
  line, inline elements stay in their sentence, white space runs become one space; a
  heading is written as markdown's (`## Keys`); a table row's cells are joined by
  " | "; `<pre>` keeps its lines as written, fenced by ``` as in markdown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from bs4 import BeautifulSoup, NavigableString, SoupStrainer, Tag
from bs4.element import Comment, Declaration, Doctype, PageElement, ProcessingInstruction
from bs4.exceptions import ParserRejectedMarkup

BLOCKS = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "br",
        "caption",
        "dd",
        "details",
        "dialog",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "li",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "tfoot",
        "thead",
        "tr",
        "ul",
    ]
)
"""Elements that start and end a line."""
NOT_TEXT = frozenset(
    [
        "head",
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "canvas",
        "iframe",
        "object",
        "select",
        "textarea",
    ]
)
"""Elements dropped with everything inside them, always."""
RUBY_READINGS = ("rt", "rp")
"""A ruby's reading and its fallback parentheses, left out: its base text is read. HTML
lets `</rt>` go unwritten before the next `<rp>` or `<rt>`, which the parser then nests
inside it, so a nested one ends the one around it (and the base text after it is read)."""
TOC_TYPES = frozenset(["toc", "landmarks", "page-list"])
"""`epub:type`s of a `<nav>` that lists a book's chapters, landmarks or pages (and
`role="doc-toc"`): left out always, as it names every chapter."""
CHROME = frozenset(["nav", "aside", "footer"])
"""A site's menus, sidebars and footers: dropped with everything inside them when a
page is read for its main content (not from the elements `html_classes` names)."""
FOOTNOTE_CLASSES = frozenset(["footnote", "footnote-list", "footnotes"])
FOOTNOTE_ROLES = frozenset(["doc-footnote", "doc-endnotes"])
"""An `<aside>` of footnotes (docutils writes them so since 0.18) is read, not dropped
as a sidebar."""
CHROME_ROLES = frozenset(["navigation", "contentinfo", "complementary", "search"])
"""The same as ARIA landmarks on any element (`<div id="footer" role="contentinfo">`, as
Confluence's export writes its footer); `role="banner"` is read as a header is."""
CHROME_CLASSES = frozenset(["page-metadata", "pageSection"])
"""Classes of what Confluence's HTML export puts around each page's content: "Created by
... last modified on ..." and the attachments, comments and page-tree lists."""
_BREADCRUMB = re.compile(
    r"breadcrumbs?(?:[-_](?:nav|list|bar|container|wrapper|section|trail))?", re.IGNORECASE
)
"""An id or class token that names breadcrumbs, whole (`ol.breadcrumb`, Confluence's
`#breadcrumb-section`): the trail of parent pages above the content, a menu. Not a
token that only mentions them (`has-breadcrumbs`, a Sphinx section's
`module-sentry_sdk.breadcrumbs`), nor a heading, section, article or an element that
holds the page's main or article (KEPT)."""
KEPT = frozenset(["h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "main", "body"])
HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
"""Written as markdown headings (`## Keys`), so a page's sections are marked as a
markdown file's are (generated questions' topics, the judge's reading)."""
ANCHOR_CLASSES = frozenset(("headerlink", "hash-link", "anchor"))
"""Classes of the permalink anchors documentation generators put beside headings."""
PAGE_BREAK = "pagebreak"
"""`epub:type` (and `role="doc-pagebreak"`) of the markers e-books put where a printed
page ended, some with its number as text: no part of the sentence they stand in."""
_SPACE = re.compile(r"\s+")
_HEADING_GAP = re.compile(r"^(#{1,6})  +")
_CELL = "\x1f"
_PRE = "\x1e"
_LINE = "\n"


def _dropped(tag: Tag, chrome: bool) -> bool:
    """Whether `tag` and what it holds are left out: NOT_TEXT, hidden elements, heading
    anchors, page-break markers and a book's table of contents (TOC_TYPES); with
    `chrome`, also CHROME (by element or ARIA role), breadcrumbs,
    CHROME_CLASSES and a header (or banner) outside an article, section, main, aside or
    nav (where HTML's rules make it the page's banner)."""
    if tag.name in NOT_TEXT or tag.has_attr("hidden") or tag.get("aria-hidden") == "true":
        return True
    if "role" in tag.attrs or "epub:type" in tag.attrs:  # most tags have neither
        roles = str(tag.get("role") or "").split()
        types = str(tag.get("epub:type") or "").split()
        if f"doc-{PAGE_BREAK}" in roles or PAGE_BREAK in types:
            return True
        if tag.name == "nav" and ("doc-toc" in roles or TOC_TYPES.intersection(types)):
            return True
    classes = tag.get("class") or ()
    if tag.name == "a" and ANCHOR_CLASSES.intersection(classes):
        return True
    if not chrome:
        return False
    role = tag.get("role")
    if tag.name in CHROME and not _footnotes(tag, classes):
        return True
    if role in CHROME_ROLES or CHROME_CLASSES.intersection(classes):
        return True
    if _breadcrumbs(tag, classes):
        return True
    header = tag.name == "header" or role == "banner"
    return header and tag.find_parent(("article", "section", "main", "aside", "nav")) is None


def _footnotes(tag: Tag, classes: Sequence[str]) -> bool:
    """Whether an `<aside>` holds footnotes (docutils' HTML, Sphinx's pages:
    `<aside class="footnote brackets" role="doc-footnote">` in a `footnote-list`): the
    page's text, not a sidebar."""
    return tag.name == "aside" and (
        bool(FOOTNOTE_CLASSES.intersection(classes)) or tag.get("role") in FOOTNOTE_ROLES
    )


def _breadcrumbs(tag: Tag, classes: Sequence[str]) -> bool:
    """Whether `tag` is a breadcrumb trail (see _BREADCRUMB)."""
    names = (str(tag.get("id") or ""), *classes)
    if tag.name in KEPT or not any(_BREADCRUMB.fullmatch(n) for n in names):
        return False
    return tag.find(("main", "article")) is None and tag.find(None, {"role": "main"}) is None


def _shown(tag: Tag) -> bool:
    """Neither `tag` nor an element around it is left out (a <main> in a <template>)."""
    return not any(_dropped(t, True) for t in (tag, *tag.parents) if isinstance(t, Tag))


def _content_root(soup: BeautifulSoup) -> Tag:
    mains = [*soup.find_all("main"), *soup.find_all(None, {"role": "main"})]
    main = next((m for m in mains if isinstance(m, Tag) and _shown(m)), None)
    if main is not None:
        return main
    articles = [a for a in soup.find_all("article") if isinstance(a, Tag) and _shown(a)]
    if len(articles) == 1:
        return articles[0]
    body = soup.find("body")
    return body if isinstance(body, Tag) else soup


def _title(soup: BeautifulSoup) -> str:
    """The page's <title>, not an inline SVG icon's."""
    for tag in soup.find_all("title"):
        if tag.find_parent("svg") is None:
            return _SPACE.sub(" ", tag.get_text()).strip()
    return ""


def _render(root: Tag, chrome: bool) -> list[str]:
    """`root`'s text as pieces: text, `_LINE` at block boundaries, `_CELL` before each
    table cell but a row's first, and each line of a `<pre>` as one piece marked `_PRE`
    (kept as written). Walks with a stack, so a page nested thousands deep is read."""
    out: list[str] = []
    stack: list[PageElement | None] = list(reversed(root.contents))
    while stack:
        node = stack.pop()
        if node is None:  # the end of a block element
            out.append(_LINE)
        elif isinstance(node, (Comment, Declaration, Doctype, ProcessingInstruction)):
            continue
        elif isinstance(node, NavigableString):
            out.append(_SPACE.sub(" ", str(node)))
        elif not isinstance(node, Tag) or _dropped(node, chrome):
            continue
        elif node.name in RUBY_READINGS:
            ended = [i for i, c in enumerate(node.contents) if _reading(c)]
            stack.extend(reversed(node.contents[ended[0] :]) if ended else ())
        elif node.name == "pre":
            lines = ["```", *node.get_text().strip("\n").splitlines(), "```"]
            out.append(_LINE)
            out.extend(part for line in lines for part in (_PRE + line, _LINE))
        else:
            if node.name in ("td", "th") and node.find_previous_sibling(("td", "th")):
                out.append(_CELL)
            if node.name in BLOCKS:
                out.append(_LINE)
                stack.append(None)
            if node.name in HEADINGS:
                out.append("#" * HEADINGS.index(node.name) + "# ")
            stack.extend(reversed(node.contents))
    return out


def _reading(node: PageElement) -> bool:
    return isinstance(node, Tag) and node.name in RUBY_READINGS


def _lines(pieces: list[str]) -> list[str]:
    lines: list[str] = []
    current: list[str] = []
    for piece in [*pieces, _LINE]:
        if piece == _LINE:
            text = "".join(current)
            if text.startswith(_PRE):  # a line of code, blank ones too
                lines.append(text[1:].rstrip())
            else:
                cells = (cell.strip() for cell in text.split(_CELL))
                # a heading's marker, then its text's leading white space: one space
                line = _HEADING_GAP.sub(r"\1 ", " | ".join(cell for cell in cells if cell))
                if line.strip("# "):  # not empty, nor a heading without text
                    lines.append(line)
            current = []
        else:
            current.append(piece)
    return lines


def html_text(html: str, html_classes: Sequence[str] = ()) -> tuple[str, str]:
    """The readable text of `html` (lines joined by newlines) and its `<title>`.

    With `html_classes`, the text of the elements with those classes, in page order;
    otherwise the page's main content (see the module docstring). "" when the page (or
    its classed elements) holds no text. Raises RejectedMarkup for markup the parser
    gives up on.
    """
    soup = _soup(html)
    title = _title(soup)
    if html_classes:
        classed = _soup(html, SoupStrainer(class_=tuple(html_classes)))
        return _text(classed, chrome=False), title
    return _text(_content_root(soup), chrome=True) or _text(soup, chrome=True), title


def fragment_text(html: str) -> str:
    """The readable text of an HTML fragment (an article's body a help desk's export
    holds in a cell, a book's chapter), every element's text kept: no part of it is a
    page's menu or footer. Raises RejectedMarkup for markup the parser gives up on."""
    return _text(_soup(html), chrome=False)


def link_share(html: str) -> float:
    """The share of a page's text (its characters but white space and its headings', in
    its body) that lies inside links: near 1 for a table of contents, near 0 for a
    chapter; 1 for a page without text. Raises RejectedMarkup as `html_text` does."""
    soup = _soup(html)
    body = soup.find("body") or soup

    def size(tags: list[Any]) -> int:
        return sum(len("".join(t.get_text().split())) for t in tags)

    total = size([body]) - size(body.find_all(HEADINGS))
    linked = size([a for a in body.find_all("a") if a.find_parent(HEADINGS) is None])
    return linked / total if total > 0 else 1.0


def toc_links(html: str) -> list[str]:
    """The pages an EPUB 3 navigation document's landmarks name as the book's table of
    contents (`<nav epub:type="landmarks">`'s `<a epub:type="toc" href=...>`), those
    without a fragment (a whole page). Raises RejectedMarkup as `html_text` does."""
    out: list[str] = []
    for nav in _soup(html).find_all("nav"):
        if "landmarks" not in str(nav.get("epub:type") or "").split():
            continue
        for a in nav.find_all("a"):
            href = str(a.get("href") or "")
            if "toc" in str(a.get("epub:type") or "").split() and href and "#" not in href:
                out.append(href)
    return out


class RejectedMarkup(ValueError):
    """Markup the HTML parser gives up on (a damaged `<![` section): `html_text` and
    `fragment_text` raise it, for the caller to name the file."""


def _soup(html: str, strainer: SoupStrainer | None = None) -> BeautifulSoup:
    try:
        return BeautifulSoup(html, "html.parser", parse_only=strainer)
    except ParserRejectedMarkup as exc:
        cause = str(exc).rsplit("\n", 1)[-1].strip()  # the parser's own words
        raise RejectedMarkup(f"the HTML parser rejected it ({cause})") from None


def _text(root: Tag, chrome: bool) -> str:
    return "\n".join(_lines(_render(root, chrome)))
