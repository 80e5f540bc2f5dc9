"""A saved HTML page reads as its content, in lines (harness.corpus.html)."""

from __future__ import annotations

import pytest

from harness.corpus import load_documents
from harness.corpus.html import html_text
from harness.errors import ConfigError

SITE_PAGE = """<!doctype html>
<html><head><title>Caches - mysite</title><style>p{}</style></head>
<body>
<a class="skip" href="#c">Skip to content</a>
<header class="top"><nav>Home | Caches | Sweeps</nav><form><input>Search</form></header>
<div class="wrap">
<main>
  <nav class="toc">Table of contents: Caches, Keys</nav>
  <article>
    <header><h1>Caches <a class="headerlink" href="#caches">&para;</a></h1></header>
    <p>Verdicts are kept in
       <code>verdicts.sqlite</code>, keyed by the <em>prompt</em> and
       the <a href="/judge">judge</a>.</p>
    <h2>Keys<a class="hash-link" href="#keys">#</a></h2>
    <ul><li>one key a <b>user</b></li><li>rotated on request</li></ul>
    <table><tr><th>file</th><th>holds</th></tr>
           <tr><td> verdicts.sqlite </td><td>paid verdicts</td></tr></table>
    <pre><code># the judge's table

[judge]
    model = "gpt"
</code></pre>
    <div hidden>draft paragraph</div><span aria-hidden="true">icon</span>
  </article>
  <aside>Related: Sweeps</aside>
</main>
</div>
<footer>Made with a generator</footer>
<script>track()</script>
</body></html>
"""


def test_a_site_page_reads_as_its_article_in_lines():
    text, title = html_text(SITE_PAGE)
    assert title == "Caches - mysite"
    assert text.splitlines() == [
        "# Caches",
        "Verdicts are kept in verdicts.sqlite, keyed by the prompt and the judge.",
        "## Keys",
        "one key a user",
        "rotated on request",
        "file | holds",
        "verdicts.sqlite | paid verdicts",
        "```",
        "# the judge's table",
        "",
        "[judge]",
        '    model = "gpt"',
        "```",
    ]


def test_without_main_the_body_is_read_minus_page_header_nav_and_footer():
    page = (
        "<html><body><header><a>Logo</a> menu</header><div class=banner>We use cookies.</div>"
        "<section><header><h2>Plant swap</h2></header><p>On 14 May.</p></section>"
        "<footer>Copyright</footer></body></html>"
    )
    assert html_text(page)[0] == "We use cookies.\n## Plant swap\nOn 14 May."


def test_one_article_is_the_content_several_are_not():
    one = "<body><p>Share this</p><article><p>The post.</p></article></body>"
    assert html_text(one)[0] == "The post."
    two = "<body><p>Latest</p><article><p>A.</p></article><article><p>B.</p></article></body>"
    assert html_text(two)[0] == "Latest\nA.\nB."


def test_an_empty_main_falls_back_to_the_body():
    page = "<body><main><nav>menu</nav></main><div><p>The real text.</p></div></body>"
    assert html_text(page)[0] == "The real text."


def test_classes_keep_only_their_elements_in_lines():
    page = (
        "<body><div class=menu>Home</div><h1 class=post-title>Title</h1>"
        "<div class=post-content><p>First <i>one</i>.</p><p>Second.</p></div></body>"
    )
    assert html_text(page, ["post-title", "post-content"])[0] == "# Title\nFirst one.\nSecond."


def test_a_folder_page_is_loaded_as_its_content(tmp_path):
    (tmp_path / "caches.html").write_text(SITE_PAGE)
    (doc,) = load_documents([str(tmp_path)])
    assert doc.doc_id == "caches.html" and doc.title == "Caches - mysite"
    assert doc.text.startswith("# Caches\nVerdicts are kept in verdicts.sqlite, keyed")
    for boilerplate in ("Skip to content", "Home | Caches", "Table of contents", "Made with"):
        assert boilerplate not in doc.text
    with pytest.raises(ConfigError, match=r"caches.html.*corpus.html_classes"):
        load_documents([str(tmp_path)], html_classes=["post-content"])


def test_a_page_nested_thousands_deep_is_read():
    page = "<div>" * 5000 + "deep <b>text</b>" + "</div>" * 5000
    assert html_text(page)[0] == "deep text"


def test_role_main_marks_the_content_as_main_does():
    page = '<body><div class="menu">Home</div><div role="main"><p>The text.</p></div></body>'
    assert html_text(page)[0] == "The text."


def test_named_classes_keep_their_header_and_a_form_keeps_its_text():
    post = (
        '<body><nav>menu</nav><article class="post"><header class="post-header">'
        '<h1 class="post-title">Plant swap</h1><div class="meta">May 2026</div></header>'
        '<div class="post-content"><p>Body.</p></div></article></body>'
    )
    classes = ["post-title", "post-header", "post-content"]
    assert html_text(post, classes)[0] == "# Plant swap\nMay 2026\nBody."
    assert html_text(post, ["post-header"])[0] == "# Plant swap\nMay 2026"
    aspnet = (
        '<body><form id="aspnetForm"><div><p>The page text.</p>'
        "<h2><button>What is the refund policy?</button></h2><p>30 days.</p>"
        '<input name="q"><select><option>x</option></select></div></form></body>'
    )
    assert html_text(aspnet)[0] == "The page text.\n## What is the refund policy?\n30 days."


def test_icon_titles_empty_headings_and_hidden_mains_are_left_out():
    page = (
        "<html><head><title>Keys - Docs</title></head><body>"
        "<template><main><p>template text</p></main></template>"
        '<svg><title>GitHub</title></svg><article><h2><a class="headerlink">#</a></h2>'
        "<p>Real text.</p></article></body></html>"
    )
    assert html_text(page) == ("Real text.", "Keys - Docs")


def test_a_page_without_text_is_left_out_with_a_warning(tmp_path, warnings):
    (tmp_path / "app.html").write_text('<body><div id="root"></div><script>draw()</script></body>')
    (tmp_path / "notes.md").write_text("# Notes\n\nText.\n")
    docs = load_documents([str(tmp_path)])
    assert [d.doc_id for d in docs] == ["notes.md"]
    assert warnings == [
        "left out 1 document without text: app.html (a page its scripts draw holds no text when saved)"
    ]
