"""AsciiDoc as Asciidoctor and Antora documentation write it, read as its pages show it
(harness.corpus.asciidoc, harness.corpus.antora)."""

from __future__ import annotations

import time

import pytest

from harness.corpus import load_documents
from harness.corpus.asciidoc import MAX_ATTRIBUTE_CHARS, asciidoc_text, asciidoc_title
from harness.errors import ConfigError

PAGE = """= Install the Tool
Jane Doe <jane@example.org>
v2.1, 2026-01-01
:url-repo: https://git.example.org/tool
// a comment about the page
:toc:

The tool runs on {os-name} and needs Ruby {ruby-version} ({page-component-title} {page-component-version}).
See the {url-repo}[repository^] and xref:usage.adoc[] or xref:ROOT:usage.adoc#flags[the flags].
Read <<verify>> and <<verify,how to verify>>; press kbd:[Ctrl+C] or btn:[Stop] in menu:File[Quit].
It is +{literal}+ and `+{kept}+` text, #highlighted#, with a note.footnote:[Since 2.0.] +
A "`quoted`" {unset-attribute} stays.

[[verify]]
== Verify the install

NOTE: Run it as root.

.Check the version
[source,ruby]
----
puts Tool.version # <1>
----
<1> Prints the version.

include::partial$steps.adoc[tag=steps]

[cols="1,2",options="header"]
|===
|Option |Meaning
|`-v` |Verbose output
|`-q`
|Quiet
|===

////
A comment block.
////

[TIP]
====
Keep it updated.
====

* first
** nested
. one
CLI:: the command line

image::diagram.png[Diagram]

include::example$hello.rb[lines=2..3]
"""

EXPECTED = """# Install the Tool

The tool runs on Linux and needs Ruby 3.4 (The Tool 2.1).
See the repository and Usage or the flags.
Read Verify the install and how to verify; press Ctrl+C or Stop in File > Quit.
It is {literal} and `{kept}` text, highlighted, with a note. (Since 2.0.)
A \u201cquoted\u201d {unset-attribute} stays.

## Verify the install

Run it as root.

Check the version

```ruby
puts Tool.version
```

1. Prints the version.

1. Download it.
1. Run `tool`.

| Option | Meaning |
| --- | --- |
| `-v` | Verbose output |
| `-q` | Quiet |

Keep it updated.

- first
  - nested
1. one
CLI: the command line

puts "hello"
puts "world\""""


def _component(root):
    pages = root / "modules" / "ROOT" / "pages"
    for sub in ("pages", "partials", "examples"):
        (root / "modules" / "ROOT" / sub).mkdir(parents=True, exist_ok=True)
    (root / "antora.yml").write_text(
        "name: tool\ntitle: The Tool\nversion: '2.1'\nasciidoc:\n  attributes:\n"
        "    os-name: Linux\n    ruby-version: '3.4@'\n    unset-attribute: false\n"
    )
    (pages / "install.adoc").write_text(PAGE)
    (pages / "usage.adoc").write_text("= Usage\n\nText.\n")
    (pages / "_hidden.adoc").write_text("= Hidden\n\nNo page.\n")
    (root / "modules" / "ROOT" / "nav.adoc").write_text("* xref:install.adoc[]\n")
    (root / "modules" / "ROOT" / "partials" / "steps.adoc").write_text(
        "Intro left out.\n// tag::steps[]\n. Download it.\n. Run `tool`.\n// end::steps[]\n"
    )
    (root / "modules" / "ROOT" / "examples" / "hello.rb").write_text(
        '# hello.rb\nputs "hello"\nputs "world"\n'
    )
    return pages


def test_an_antora_page_reads_as_its_site_shows_it(tmp_path, warnings):
    """Attributes from antora.yml, includes by resource ID with their tags and lines,
    cross references by the page's and sections' titles, blocks and macros as text; the
    navigation, partials, examples and `_` files are no documents."""
    _component(tmp_path / "docs")
    loaded = {d.doc_id: d for d in load_documents([str(tmp_path / "docs")])}
    assert sorted(loaded) == ["modules/ROOT/pages/install.adoc", "modules/ROOT/pages/usage.adoc"]
    page = loaded["modules/ROOT/pages/install.adoc"]
    assert page.title == "Install the Tool"
    assert page.text == EXPECTED
    # the included example is no file "harness does not read", antora.yml no document
    assert warnings == []


def test_a_single_asciidoc_file_is_read_with_its_own_attributes(tmp_path):
    page = tmp_path / "guide.asciidoc"
    page.write_text(
        "= Guide\n:product: Widget\n:!product-old:\n\nUse {product}{nbsp}2.\n"
        "ifdef::product[Shown: {product}.]\nifndef::product[Hidden.]\n"
        "ifdef::env-github[]\nOn GitHub.\nendif::[]\n"
    )
    (doc,) = load_documents([str(page)])
    assert doc.title == "Guide"
    assert doc.text == "# Guide\n\nUse Widget\u00a02.\nShown: Widget."


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # text without markup reads byte for byte, Windows line endings and all
        (
            "Plain text.\r\nSecond line: with a colon.\n",
            "Plain text.\r\nSecond line: with a colon.\n",
        ),
        ("A C++ and C# note, 3 + 4 and a:b.\n", "A C++ and C# note, 3 + 4 and a:b.\n"),
        # markdown-style headings and emphasis are markdown already
        ("## Setup\n\n*bold* and _it_ and `code`\n", "## Setup\n\n*bold* and _it_ and `code`\n"),
        # a section title's closing marks, a discrete heading
        ("== Setup ==\n\n[discrete]\n=== Aside\n", "## Setup\n\n### Aside"),
        # a literal paragraph (indented) and a literal block are code
        ("Run:\n\n  $ tool --help\n", "Run:\n\n```\n$ tool --help\n```"),
        ("....\n<raw> *text*\n....\n", "```\n<raw> *text*\n```"),
        # a listing whose subs ask for attributes; one that does not keeps {name}
        (
            ":v: 2.1\n\n[source,shell,subs=attributes+]\n----\ngem install tool -v {v}\n----\n"
            "[source,shell]\n----\necho {v}\n----\n",
            "```shell\ngem install tool -v 2.1\n```\n\n```shell\necho {v}\n```",
        ),
        # a bare [source] takes the page's source-language; ---- alone is a listing
        (":source-language: python\n\n[source]\n----\nx = 1\n----\n", "```python\nx = 1\n```"),
        # a code line with backticks gets a fence they cannot close
        ("----\na ``` b\n----\n", "````\na ``` b\n````"),
        # an example block holding a listing that holds ==== (a longer delimiter, as
        # Asciidoctor asks: a block ends at the first line that is its delimiter)
        (
            "=====\nText.\n\n[source,asciidoc]\n----\n====\nnested\n====\n----\n=====\nAfter.\n",
            "Text.\n\n```asciidoc\n====\nnested\n====\n```\n\nAfter.",
        ),
        # sidebar, open block, quote with its attribution, passthrough without tags
        ("****\nAside.\n****\n--\nOpen.\n--\n", "Aside.\n\nOpen."),
        (
            "[quote,Ada Lovelace,Notes]\n____\nIt weaves.\n____\n",
            "It weaves.\n\u2014 Ada Lovelace, Notes",
        ),
        ('++++\n<div class="x">\n<b>Raw</b> HTML\n</div>\n++++\n', "Raw HTML"),
        # comments, a comment block, a [comment] paragraph, page breaks and rules
        ("// note\nText.\n// inside\nMore.\n\n[comment]\nHidden.\n\n'''\n<<<\n", "Text.\nMore."),
        # escaped markup and directives read as written
        (
            "Write \\{name}, \\<<id>> and \\https://x.org[text].\n\n\\include::a.adoc[]\n",
            "Write {name}, <<id>> and https://x.org[text].\n\ninclude::a.adoc[]",
        ),
        # links: quoted text with options, mailto, angle URL, bare URL, link: with no text
        (
            'See https://x.org["Docs, v2",window=_blank], mailto:a@b.org[mail], '
            "<https://y.org>, https://z.org and link:/path[].\n",
            "See Docs, v2, mail, https://y.org, https://z.org and /path.",
        ),
        # an xref to an id nobody set reads as Asciidoctor shows it
        ("See <<nowhere>> and xref:other.adoc#part[].\n", "See [nowhere] and part."),
        # index terms, inline anchors, icons, inline images with and without alt text
        (
            "A ((term)) (((hidden))) [[a1]]anchor icon:fire[] image:x.png[Logo] image:y.png[].\n",
            "A term  anchor  Logo .",
        ),
        # a CSV table, a table without a header
        (",===\na,b\nc,d\n,===\n", "| a | b |\n| c | d |"),
        ("|===\n|a |b\n|c |d\n|===\n", "| a | b |\n| c | d |"),
        ('[%header,cols="2*"]\n|===\n|K |V\n|===\n', "| K | V |\n| --- | --- |"),
        # description lists, checklists, a list continuation
        ("Term:: Text.\nOther;; More.\n", "Term: Text.\nOther: More."),
        ("* [x] done\n* item\n+\nattached\n", "- [x] done\n- item\nattached"),
        # a line markdown would read as a heading, within a paragraph
        ("Text\n# not a title\n", "Text\n\\# not a title"),
        # a document header's author and revision lines, and an attribute over lines
        ("= T\nA Author\nv1.0\n:desc: one \\\ntwo\n\nBody {desc}.\n", "# T\n\nBody one two."),
        # leveloffset set by hand
        (":leveloffset: +1\n= Part\n:leveloffset: 0\n", "## Part"),
        # the second review: a footnote or xref whose text holds a link or passthrough
        ("A.footnote:[See https://x.org[the site].]\n", "A. (See the site.)"),
        ("See xref:a.adoc[`+--safe+`].\n", "See `--safe`."),
        # a passthrough whose substitutions include macros reads them; a footnote after
        # a space takes no second one
        (
            "Chains footnote:[See pass:q,macros[xref:a.adoc[the *intro*]] and pass:[*x*].]\n",
            "Chains (See the *intro* and *x*.)",
        ),
        # CSV data in a |=== table; cells without spaces, numbers that are no spec
        (
            "[%header,format=csv]\n|===\nName,Value\nfoo,1\n|===\n",
            "| Name | Value |\n| --- | --- |\n| foo | 1 |",
        ),
        ("|===\n|a|b|c\n|http 1.1|yes|3\n|===\n", "| a | b | c |\n| http 1.1 | yes | 3 |"),
        ('[cols="3*,1"]\n|===\n|a |b |c |d\n|===\n', "| a | b | c | d |"),
        (',===\nA,"x, y"\n,===\n', "| A | x, y |"),
        ("[%noheader]\n|===\n|a |b\n\n|c |d\n|===\n", "| a | b |\n| c | d |"),
        ('[cols="1,1"]\n|===\n|a +\nb |c\n2+|wide\n|===\n', "| a b | c |\n| wide |"),
        # an AsciiDoc cell is read as a page, on one line
        ('[cols="1a,1"]\n|===\n|* x\n* y\n|plain\n|===\n', "| - x - y | plain |"),
        # a list item's text runs on over its next lines, indented or not
        (
            "* An item that\n  wraps.\n* Second\n. step\nwraps too\n",
            "- An item that wraps.\n- Second\n1. step wraps too",
        ),
        # markdown-style fences are listings
        ("```js\n// set up\n* star {x}\n```\n", "```js\n// set up\n* star {x}\n```"),
        # a role on quoted text, ++unconstrained++ and nested passthroughs
        (
            "[.path]_conf.yml_, ++a+b++ and pass:[asciimath:[x]].\n",
            "_conf.yml_, a+b and asciimath:[x].",
        ),
        # what an HTML build sets; the document title
        (
            "= Guide\n\nifdef::backend-html5[]\nIn {doctitle}.\nendif::[]\n"
            "ifdef::backend-pdf[]\nPDF.\nendif::[]\n",
            "# Guide\n\nIn Guide.",
        ),
        # ids with a role, reftext, a title as the target
        ("[#id.role]\n== T\n\nSee <<id>> and <<T>>.\n", "## T\n\nSee T and T."),
        ("[[id,Label]]\n== T\n\nSee <<id>>.\n", "## T\n\nSee Label."),
        # escaped directives read as written, in text and in code
        ("----\n\\ifdef::x[]\n----\n", "```\nifdef::x[]\n```"),
        # plain text stays byte for byte: white space lines, braces, a list line in a
        # paragraph (Asciidoctor reads it as text), a term only at a block's start
        ("Text\n   \nMore\n", "Text\n   \nMore\n"),
        ("Regex `a\\{2,3\\}`.\n", "Regex `a\\{2,3\\}`.\n"),
        (
            "Some text\n* not a list\nCall std::\nfoo\n",
            "Some text\n* not a list\nCall std::\nfoo\n",
        ),
    ],
)
def test_what_is_and_is_not_markup(raw, expected):
    assert asciidoc_text(raw)[0] == expected


def test_an_include_moved_by_a_leveloffset_moves_only_its_own_titles():
    part = "== Part\n\nMore text.\n"
    raw = "= Book\n\ninclude::part.adoc[leveloffset=+1]\n\n== Next\n"
    text = asciidoc_text(raw, include=lambda target, optional=False: (part, lambda *a: None))[0]
    assert text == "# Book\n\n### Part\n\nMore text.\n\n## Next"


def test_includes_are_bounded_and_never_leave_the_folder(tmp_path, warnings, monkeypatch):
    """An include outside the folder, of a hidden file, of a URL, a loop, and partials
    that multiply (10^9 empty includes): each refused include is named once, a page takes
    in at most MAX_INCLUDED_CHARS, and each include, read or not, takes INCLUDE_COST of
    that."""
    from harness.corpus import load
    from harness.corpus.load import INCLUDE_COST, MAX_INCLUDED_CHARS

    fetched = []
    fetch = load._Includes._fetch
    monkeypatch.setattr(
        load._Includes, "_fetch", lambda self, *a, **k: fetched.append(1) or fetch(self, *a, **k)
    )

    docs = tmp_path / "docs"
    docs.mkdir()
    (tmp_path / "secret.adoc").write_text("Outside the corpus.\n")
    (docs / ".env").write_text("API_KEY=sk-not-for-pages\n")
    (docs / "_loop.adoc").write_text("Loop start.\ninclude::_loop.adoc[]\n")
    for level in range(9):
        lines = "".join(f"include::_l{level + 1}.adoc[]\n" for _ in range(10))
        (docs / f"_l{level}.adoc").write_text(lines)
    (docs / "_l9.adoc").write_text("")
    (docs / "page.adoc").write_text(
        "= Page\n\ninclude::../secret.adoc[]\ninclude::.env[]\n"
        "include::https://example.org/README.adoc[]\ninclude::_loop.adoc[]\n"
        "include::_gone.adoc[]\ninclude::{partials}/x.adoc[]\ninclude::_l0.adoc[]\nEnd.\n"
    )
    (doc,) = load_documents([str(docs)])
    # each of the 10 `_l` partials is read as a page first, then found to be a partial
    assert len(fetched) <= 11 * (MAX_INCLUDED_CHARS // INCLUDE_COST + 10)
    assert doc.text == "# Page\n\nLoop start.\nEnd."
    assert len(doc.text) <= MAX_INCLUDED_CHARS
    (missing,) = [w for w in warnings if "not read into" in w]
    assert "(the page would take in over 5,000,000 characters)" in missing
    from harness.corpus.load import _Includes

    deep = _Includes(docs)
    asciidoc_text("include::_l0.adoc[]\n", include=deep.asciidoc(docs / "page.adoc", None))
    assert "_l7.adoc -> _l8.adoc (deeper than 8 includes)" in deep.missing
    includes = _Includes(docs)
    include = includes.asciidoc(docs / "page.adoc", None)
    for target in ("../secret.adoc", ".env", "https://example.org/README.adoc", "_gone.adoc"):
        assert include(target) is None
    got = include("_loop.adoc")
    assert got is not None and got[0] == "Loop start.\ninclude::_loop.adoc[]\n"
    assert got[1]("_loop.adoc") is None  # the partial including itself
    assert list(includes.missing) == [
        "page.adoc -> ../secret.adoc (outside the folder)",
        "page.adoc -> .env (a hidden file)",
        "page.adoc -> https://example.org/README.adoc (a URL: harness reads no include from "
        "the network)",
        "page.adoc -> _gone.adoc (no such file)",
        "_loop.adoc -> _loop.adoc (a loop)",
    ]


def test_another_components_resources_are_not_read(tmp_path, warnings):
    pages = _component(tmp_path)
    (pages / "other.adoc").write_text(
        "= Other\n\ninclude::2.0@tool:ROOT:partial$steps.adoc[]\n"
        "include::lib:ROOT:partial$steps.adoc[]\ninclude::nofamily$x.adoc[]\nText.\n"
    )
    loaded = {d.doc_id: d for d in load_documents([str(tmp_path)])}
    assert loaded["modules/ROOT/pages/other.adoc"].text == "# Other\n\nText."
    (missing,) = [w for w in warnings if "not read into" in w]
    assert "(another component or version of the site)" in missing
    assert "nofamily$x.adoc (not a resource of a module)" in missing


def test_a_folder_of_antora_files_without_pages_says_so(tmp_path):
    (tmp_path / "antora.yml").write_text("name: x\n")
    (tmp_path / "modules" / "ROOT").mkdir(parents=True)
    (tmp_path / "modules" / "ROOT" / "nav.adoc").write_text("* xref:a.adoc[]\n")
    with pytest.raises(ConfigError, match="holds no page: its AsciiDoc files are Antora"):
        load_documents([str(tmp_path)])
    (tmp_path / "antora.yml").write_text("- a list\n")
    with pytest.raises(ConfigError, match="expected a YAML mapping") as exc:
        load_documents([str(tmp_path)])
    assert str(tmp_path / "antora.yml") in str(exc.value)


def test_titles_of_pages():
    assert asciidoc_title("// c\n:p: Tool\n\n= About {p} =\n") == "About Tool"
    assert asciidoc_title("Text first.\n= Title\n") is None
    assert asciidoc_title("") is None


@pytest.mark.parametrize(
    "line",
    [
        ":a: x" + " " * 20_000 + "y",
        "== T" + " " * 20_000 + "x",
        "----\n" + "x" + " " * 20_000 + "y\n----",
        "#a " * 7_000,
        "+a " * 7_000,
        "<<a " * 5_000,
        "xref:a[" * 5_000,
        "mailto:" * 5_000,
        "image:" * 6_000,
        "----\n" + "<1>" * 12_000 + "x\n----",
        "|===\n" + "|a " * 10_000 + "\n|===",
    ],
)
def test_long_lines_read_quickly(line):
    start = time.perf_counter()
    asciidoc_text(line)
    assert time.perf_counter() - start < 5  # quadratic took seconds; this is milliseconds


def test_deeply_nested_blocks_read_without_a_crash():
    raw = "".join(f"{'=' * (4 + k)}\n" for k in range(200)) + "Deep.\n"
    raw += "".join(f"{'=' * (4 + k)}\n" for k in reversed(range(200)))
    assert "Deep." in asciidoc_text(raw)[0]
    assert "Deep." in asciidoc_text("====\n****\n" * 490 + "Deep.\n")[0]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # a comment block's directives are not read; a listing's entries set nothing
        ("Intro.\n\n////\nifdef::foo[]\nold\n////\n\nImportant.\n", "Intro.\n\nImportant."),
        (
            "----\n:shown: yes\n----\nifdef::shown[Set.]\nifndef::shown[Unset.]\n",
            "```\n:shown: yes\n```\n\nUnset.",
        ),
        # ifeval compares values; counters count
        (
            'ifeval::["{backend}" == "pdf"]\nPDF.\nendif::[]\nifeval::[{n} > 1]\nKept.\nendif::[]\n',
            "Kept.",  # an expression harness cannot read (n is not set) keeps its text
        ),
        (":n: 2\n\nifeval::[{n} > 1]\nMany.\nendif::[]\n", "Many."),
        (
            "Step {counter:s}, step {counter:s}{counter2:s}, step {counter:s}.\n",
            "Step 1, step 2, step 4.",
        ),
        ("{name:x} stays.\n", "{name:x} stays.\n"),
    ],
)
def test_second_review_cases(raw, expected):
    assert asciidoc_text(raw)[0] == expected


def test_attributes_doubling_one_another_stop_growing():
    raw = ":a0: xy\n" + "".join(f":a{k}: {{a{k - 1}}}{{a{k - 1}}}\n" for k in range(1, 40))
    assert len(asciidoc_text(raw + "\n{a39} {a39}\n")[0]) < 3 * MAX_ATTRIBUTE_CHARS


def test_includes_through_links_and_out_of_the_folder(tmp_path, warnings):
    """A corpus folder reached through a link reads as the folder itself; a linked
    folder inside it that leads out of it is not read; an optional include of no file
    says nothing; included files are no documents of their own, nor an Antora
    component's examples and attachments."""
    real = tmp_path / "real"
    pages = _component(real / "site")
    (real / "site" / "modules" / "ROOT" / "examples" / "config.txt").write_text("Example text.\n")
    (real / "site" / "modules" / "ROOT" / "attachments").mkdir()
    (real / "site" / "modules" / "ROOT" / "attachments" / "app.zip").write_bytes(b"PK\x03\x04")
    (real / "book").mkdir()
    (real / "book" / "book.adoc").write_text(
        "= Book\n\ninclude::chapter.adoc[]\ninclude::maybe.adoc[opts=optional]\n"
        "include::ext/hostname[]\n"
    )
    (real / "book" / "chapter.adoc").write_text("== Chapter\n\nChapter text.\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "hostname").write_text("secret-host\n")
    (real / "book" / "ext").symlink_to(outside, target_is_directory=True)
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    by_real = {d.doc_id: d.text for d in load_documents([str(real)])}
    warnings.clear()
    by_link = {d.doc_id: d.text for d in load_documents([str(tmp_path / "link")])}
    assert by_link == by_real
    assert sorted(by_link) == [
        "book/book.adoc",
        "site/modules/ROOT/pages/install.adoc",
        "site/modules/ROOT/pages/usage.adoc",
    ]
    assert by_link["book/book.adoc"] == "# Book\n\n## Chapter\n\nChapter text."
    assert "Download it." in by_link["site/modules/ROOT/pages/install.adoc"]
    (missing,) = [w for w in warnings if "not read into" in w]
    assert "book/book.adoc -> ext/hostname (outside the folder)" in missing
    assert "maybe.adoc" not in missing
    assert not [w for w in warnings if "harness does not read" in w]
    assert pages.is_dir()
