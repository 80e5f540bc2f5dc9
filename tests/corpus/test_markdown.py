"""Markdown as documentation sites write it, and notebooks, read as their pages show them
(harness.corpus.markdown, harness.corpus.notebook)."""

from __future__ import annotations

import json

import pytest

from harness.corpus import load_documents
from harness.corpus.markdown import front_matter, markdown_text
from harness.corpus.notebook import notebook_text
from harness.errors import ConfigError

DOCUSAURUS = """---
title: Text splitters
sidebar_position: 3
keywords: [chunking, splitting]
---
import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';

<span data-heading-keywords="text splitter"></span>

:::info[Prerequisites]

* [Documents](/docs/concepts/documents)
:::

## Why split documents? {#why}

Splitting keeps chunks under the model's limit.

<Tabs>
  <TabItem value="py" label="Python">

```python
import os
# ::: not an admonition inside code
print(os.sep)
```

  </TabItem>
</Tabs>

:::tip Keep overlap small

Ten percent is plenty.

:::
<!-- a note to the docs' authors
     over two lines -->
Read <Link to="/docs/x">the guide</Link> next.
"""

QUARTO = """---
title: Caching
subtitle: Fewer calls, same answers
llms-description: Caching model output.
---

```{=html}
<style type="text/css">
table a { white-space: nowrap; }
</style>
```

## Overview {#sec-overview}

[]{#sec-cache}

Caching saves time.

::: {.callout-note appearance="simple"}
The cache is local.
:::

::: {.callout-tip title="Expiry"}
Entries expire after a week.
:::

{{< include _cache-limits.md >}}

``` python
eval("arc.py", cache=True)
```

The return type is:

<class 'pandas.core.frame.DataFrame'>

Set <PROVIDER_NAME>_API_KEY first.

!!! warning "Costs"
    Each miss is a paid call.
"""


def test_a_docusaurus_page_reads_as_its_text_without_imports_tags_or_markers():
    text, title = markdown_text(DOCUSAURUS, mdx=True)
    assert title == "Text splitters"
    assert text.startswith("# Text splitters\n\nPrerequisites\n\n* [Documents]")
    assert "## Why split documents?\n" in text and "{#why}" not in text
    assert "import Tabs" not in text and "<Tabs>" not in text and "TabItem" not in text
    assert (
        "<span" not in text and "sidebar_position" not in text and ":::" not in text.split("```")[0]
    )
    # a code block is kept as written, its `import` and `:::` lines included
    assert "```python\nimport os\n# ::: not an admonition inside code\nprint(os.sep)\n```" in text
    assert "Keep overlap small\n\nTen percent is plenty." in text
    assert "authors" not in text and "over two lines" not in text
    assert 'Read <Link to="/docs/x">the guide</Link> next.' in text  # text with tags stays
    assert "\n\n\n" not in text


def test_a_quarto_page_reads_as_its_text():
    text, title = markdown_text(QUARTO)
    assert title == "Caching"
    assert text.startswith("# Caching\n\nFewer calls, same answers\n\n## Overview\n\nCaching")
    assert "llms-description" not in text and "<style" not in text and "nowrap" not in text
    assert "{=html}" not in text and "{#sec-" not in text and "{{<" not in text
    assert "The cache is local." in text and "callout" not in text
    assert "Expiry\nEntries expire after a week." in text
    assert '``` python\neval("arc.py", cache=True)\n```' in text
    # lines that only look like tags are text
    assert "<class 'pandas.core.frame.DataFrame'>" in text
    assert "Set <PROVIDER_NAME>_API_KEY first." in text
    assert "Costs\n    Each miss is a paid call." in text and "!!!" not in text


def test_plain_markdown_reads_byte_for_byte():
    raw = "# Leave\n\n\n\nStaff get 27 days.  \n<br>\n"
    assert markdown_text(raw.replace("<br>\n", "")) == (raw.replace("<br>\n", ""), "Leave")
    # something left out: the blank lines it leaves are collapsed
    assert markdown_text(raw)[0] == "# Leave\n\nStaff get 27 days.  "


def test_a_code_block_keeps_its_blank_lines_when_markers_around_it_go():
    raw = (
        ":::tip\n\n\nRun it:\n\n```python\ndef a():\n    pass\n\n\ndef b():\n    pass\n```"
        "\n\n\n:::\n"
    )
    text, _ = markdown_text(raw)
    assert text == "Run it:\n\n```python\ndef a():\n    pass\n\n\ndef b():\n    pass\n```"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # a rule, a blank line and a paragraph that reads as YAML: text, not front matter
        ("---\n\nNote: this guide assumes Python 3.\n\n---\n\nBody.\n", None),
        # a value YAML's own types would refuse (no such date) is text, not a crash
        ("---\ndate: 2024-02-30\ntitle: Yes\n---\nBody.\n", ("# Yes\n\nBody.", "Yes")),
        # Jekyll's empty front matter
        ("---\n---\n# Post\n\nBody.\n", ("# Post\n\nBody.", "Post")),
        # a component named like a style or script tag is not a style or script block
        ("Intro\n\n<StyledBox>\n\nImportant text\n", None),
        ("Intro\n\n<scripting-notes>\n\nImportant text\n", None),
        # Pandoc's div with trailing colons; a multi-line title
        ("::: Warning ::::::\nMind the gap.\n:::\n", ("Mind the gap.", "")),
        ("---\ntitle: |\n  Two\n  lines\n---\nBody.\n", ("# Two lines\n\nBody.", "Two lines")),
    ],
)
def test_what_is_and_is_not_markup(raw, expected):
    text, title = markdown_text(raw)
    if expected is None:
        assert text == raw  # text, read as written
    else:
        assert (text, title) == expected


def test_indented_code_keeps_its_lines_and_wrapped_layout_lines_read_as_text():
    raw = (
        "<details>\n<summary>Click to expand</summary>\n\nHidden text.\n</details>\n\n"
        '<h2 align="center">Install</h2>\n\nAn HTML example:\n\n    <div class="box">\n'
        "    <!-- a comment the example shows -->\n\n    :::note\n"
        "After the code, <b>bold</b> stays.\n<!-- gone -->\n<p>a <b>b</b> c</p>\n"
    )
    text, title = markdown_text(raw)
    assert text == (
        "Click to expand\n\nHidden text.\n\n## Install\n\nAn HTML example:\n\n"
        '    <div class="box">\n    <!-- a comment the example shows -->\n\n    :::note\n'
        "After the code, <b>bold</b> stays.\n<p>a <b>b</b> c</p>"
    )
    assert title == "Install"
    # an indented line right after text continues its paragraph: read as text
    assert markdown_text("Intro\n    <!-- gone -->\nmore\n")[0] == "Intro\nmore"


def test_mdx_statements_over_several_lines_and_comments():
    raw = (
        "import {\n  Foo,\n  Bar,\n} from '@site/x';\n\nexport const meta = {\n  a: 1,\n};\n\n"
        "Text.\n{/* truncate */}\n\nMore.\n"
    )
    assert markdown_text(raw, mdx=True)[0] == "Text.\n\nMore."


def test_front_matter_fields_that_are_not_text_give_no_title():
    text, title = markdown_text("---\ntitle: [a, b]\nsubtitle: {x: 1}\n---\n\n## Setup\n")
    assert (text, title) == ("## Setup", "Setup")
    assert markdown_text("---\ntitle: 2026\n---\nBody.\n") == ("# 2026\n\nBody.", "2026")


def test_front_matter_yaml_toml_and_what_is_not_front_matter():
    assert front_matter("---\ntitle: A\ntags: [x]\n---\nbody\n") == (
        {"title": "A", "tags": ["x"]},
        "body\n",
    )
    assert front_matter('+++\ntitle = "Hugo page"\n+++\n\nbody') == (
        {"title": "Hugo page"},
        "\nbody",
    )
    assert front_matter("---\ntitle: A\n...\nbody")[0] == {"title": "A"}
    # a page that opens with a horizontal rule, or whose block is not a mapping
    for raw in (
        "---\nJust a paragraph.\n---\nMore.\n",
        "---\nno closing line\n",
        "---\n: [\n---\n",
    ):
        assert front_matter(raw) == ({}, raw)
        assert markdown_text(raw)[0] == raw
    # a page with its own first heading keeps it; the front matter's title names it
    text, title = markdown_text("---\ntitle: Short name\n---\n# The long heading\n\nBody.\n")
    assert (text, title) == ("# The long heading\n\nBody.", "Short name")
    # an untitled page is named by its first heading
    assert markdown_text("---\ndraft: true\n---\n\n## Setup\n\nRun it.\n")[1] == "Setup"


def _notebook(cells, language="python", **extra):
    return json.dumps(
        {
            "cells": cells,
            "metadata": {"kernelspec": {"language": language, "name": "k"}},
            "nbformat": 4,
            **extra,
        }
    )


def test_a_notebook_reads_as_its_markdown_and_code_without_outputs():
    nb = _notebook(
        [
            {"cell_type": "markdown", "source": ["# Retrievers\n", "\n", "How to **search**."]},
            {
                "cell_type": "code",
                "source": 'docs = retriever.invoke("what is a chunk?")\ns = "```"',
                "outputs": [{"output_type": "stream", "text": ["a very long print\n"]}],
            },
            {"cell_type": "code", "source": [], "outputs": []},
            {"cell_type": "raw", "source": "\\begin{equation}"},
            {"cell_type": "markdown", "source": "<!-- hidden -->\nDone."},
        ]
    )
    text, title = notebook_text(nb, "nb.ipynb")
    assert title == "Retrievers"
    assert text == (
        "# Retrievers\n\nHow to **search**.\n\n"
        '````python\ndocs = retriever.invoke("what is a chunk?")\ns = "```"\n````\n\nDone.'
    )
    quarto = _notebook(
        [
            {"cell_type": "raw", "source": "---\ntitle: Agents\n---"},
            {"cell_type": "code", "source": "x <- 1"},
        ],
        language="R",
    )
    assert notebook_text(quarto, "q.ipynb") == ("# Agents\n\n```R\nx <- 1\n```", "Agents")


def test_odd_notebook_cells_are_read_without_a_crash():
    nb = _notebook(
        [
            {"cell_type": "markdown", "source": None},
            "not a cell",
            {"cell_type": "raw", "source": ["---\n", "title: Agents\n", "---"]},
            {"cell_type": "markdown", "source": ["Text ", 3, "more."]},
            {"cell_type": "code", "source": "````\n# a comment, not a heading\n````"},
        ]
    )
    text, title = notebook_text(nb, "nb.ipynb")
    assert title == "Agents" and text.startswith("# Agents\n\nText more.")
    assert "`````python\n````\n# a comment, not a heading\n````\n`````" in text


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ("{not json", "expected a Jupyter notebook \\(JSON\\)"),
        ('{"worksheets": []}', "nbformat 3 notebook: convert it"),
        ("[1, 2]", 'a JSON object with "cells"'),
    ],
)
def test_a_file_that_is_not_a_notebook_is_named(raw, match):
    with pytest.raises(ConfigError, match=match) as exc:
        notebook_text(raw, "docs/nb.ipynb")
    assert exc.value.field == "corpus.sources" and "docs/nb.ipynb" in str(exc.value)


def test_a_documentation_repository_is_read_and_a_dangling_link_named(tmp_path, warnings):
    docs = tmp_path / "docs"
    (docs / "concepts").mkdir(parents=True)
    (docs / "concepts" / "splitters.mdx").write_text(DOCUSAURUS)
    (docs / "caching.qmd").write_text(QUARTO)
    (docs / "howto.ipynb").write_text(
        _notebook([{"cell_type": "markdown", "source": "# How to\n\nSteps."}])
    )
    (docs / "report.Rmd").write_text("---\ntitle: Report\n---\n\nFigures.\n")
    (docs / "CHANGELOG.md").symlink_to(tmp_path / "gone.md")
    # Jupyter's checkpoint copy is a second copy of the notebook: not a document
    (docs / ".ipynb_checkpoints").mkdir()
    (docs / ".ipynb_checkpoints" / "howto-checkpoint.ipynb").write_text(
        _notebook([{"cell_type": "markdown", "source": "# How to\n\nSteps."}])
    )
    (docs / "stub.qmd").write_text("---\ntitle: Reference\n---\n\n\n")
    loaded = {d.doc_id: d for d in load_documents([str(docs)])}
    # a page whose body a generator fills in at build time has no text of its own
    assert sorted(loaded) == ["caching.qmd", "concepts/splitters.mdx", "howto.ipynb", "report.Rmd"]
    assert loaded["concepts/splitters.mdx"].title == "Text splitters"
    assert "import Tabs" not in loaded["concepts/splitters.mdx"].text
    assert loaded["howto.ipynb"].title == "How to"
    assert loaded["report.Rmd"].text == "# Report\n\nFigures."
    assert any("skipped 1 link whose target is missing: CHANGELOG.md" in w for w in warnings)
    assert any("left out 1 document without text: stub.qmd" in w for w in warnings)


def test_quarto_includes_are_read_into_their_pages(tmp_path, warnings):
    """A Quarto page shows its included partials' text where the shortcode stands; the
    partial (a `_` file, which Quarto renders no page for) is not a document of its own."""
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (tmp_path / "secret.md").write_text("Outside the corpus.\n")
    (docs / ".env").write_text("API_KEY=sk-not-for-pages\n")
    (docs / "logo.png").write_bytes(b"\x89PNG\x00")
    (docs / "_limits.md").write_text("Limits apply per sample.\n\n{{< include _nested.md >}}\n")
    (docs / "_nested.md").write_text("::: {.callout-note}\nTokens count too.\n:::\n")
    (docs / "_loop.md").write_text("Loop start.\n{{< include _loop.md >}}\n")
    (docs / "_unused.md").write_text("# Unused partial\n\nKept as its own document.\n")
    (docs / "_out.md").symlink_to(tmp_path / "secret.md")
    (docs / "guide" / "agents.qmd").write_text(
        "---\ntitle: Agents\n---\n\nIntro.\n\n{{< include ../_limits.md >}}\n\n"
        "{{< include /_limits.md >}}\n{{< include ../../secret.md >}}\n"
        '{{< include _gone.md >}}\n{{< include "../_loop.md" >}}\n{{< include ../.env >}}\n'
        "{{< include ../logo.png >}}\n{{< include ../_out.md >}}\n\n"
        "```markdown\n{{< include _shown_in_code.md >}}\n```\n"
    )
    loaded = {d.doc_id: d for d in load_documents([str(docs)])}
    assert sorted(loaded) == ["_unused.md", "guide/agents.qmd"]  # _out.md is included
    text = loaded["guide/agents.qmd"].text
    assert text.count("Limits apply per sample.\n\nTokens count too.") == 2
    assert "{{< include _shown_in_code.md >}}" in text  # code, as written
    assert "sk-not-for-pages" not in text and "../../secret.md" not in text
    # a link placed in the folder is read, as the folder's links are read as documents
    assert text.count("Outside the corpus.") == 1
    assert text.count("Loop start.") == 1  # a file including itself is read once
    (missing,) = [w for w in warnings if "not read into their pages" in w]
    assert missing.startswith(f"{docs}: 5 includes not read into their pages: ")
    assert missing.endswith(", ...")  # the first three named
    assert "guide/agents.qmd -> ../../secret.md (outside the folder)" in missing
    assert "guide/agents.qmd -> _gone.md (no such file)" in missing
    assert "_loop.md -> _loop.md (a loop)" in missing
    from harness.corpus.load import _Includes

    includes = _Includes(docs)
    include = includes.reader(docs / "guide" / "agents.qmd")
    assert include("../.env") is None and include("../logo.png") is None
    assert include("../_out.md") == "Outside the corpus.\n"
    assert list(includes.missing) == [
        "guide/agents.qmd -> ../.env (a hidden file)",
        "guide/agents.qmd -> ../logo.png (not a markdown file)",
    ]
    # a page without includes reads byte for byte as before, given a reader or not
    plain = "Body {{< include x >}} inline.\n\n    {{< include y >}}\n"
    assert markdown_text(plain, include=include)[0] == plain


def test_includes_that_multiply_are_bounded(tmp_path, warnings):
    """Partials that include each other ten times over, eight deep, would make a page of
    10^8 copies: each file is read once, and a page takes in at most MAX_INCLUDED_CHARS."""
    from harness.corpus.load import MAX_INCLUDED_CHARS

    for level in range(9):
        lines = "".join(f"{{{{< include _l{level + 1}.md >}}}}\n" for _ in range(10))
        (tmp_path / f"_l{level}.md").write_text(f"level {level}\n{lines}")
    (tmp_path / "_l9.md").write_text("leaf text here\n")
    (tmp_path / "deep.qmd").write_text("# Deep\n\n{{< include _l0.md >}}\n")
    (tmp_path / "page.qmd").write_text("# Page\n\n{{< include _l7.md >}}\n")
    loaded = {d.doc_id: d for d in load_documents([str(tmp_path)])}
    assert sorted(loaded) == ["deep.qmd", "page.qmd"]
    assert len(loaded["deep.qmd"].text) <= MAX_INCLUDED_CHARS
    # what the deep page could not take in, a shallower page read after it still does
    assert loaded["page.qmd"].text.count("leaf text here") == 100
    (missing,) = [w for w in warnings if "not read into" in w]
    assert "(deeper than 8 includes)" in missing
    assert "(the page would take in over 5,000,000 characters)" in missing
