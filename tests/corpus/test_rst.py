"""reStructuredText as Sphinx documentation writes it, read as its pages show it
(harness.corpus.rst)."""

from __future__ import annotations

import pytest

from harness.corpus import load_documents
from harness.corpus.rst import rst_text

SPHINX = """.. module:: tool.pruners

.. _pruners:

=======
Pruners
=======

The :mod:`~tool.pruners` module defines :class:`~tool.pruners.BasePruner`; see
:meth:`~tool.pruners.BasePruner.prune`, :func:`tool.run` and :ref:`the guide <guide>`.
Read `the docs <https://example.org/docs>`__ or ``pip install tool``.

.. contents::
    :local:

.. toctree::
    :maxdepth: 2

    install
    usage

Install
-------

.. note::
    Use a virtual environment.

    It keeps :class:`Tool` apart.

.. versionadded:: 3.0

.. code-block:: python
    :caption: example.py

    import tool


    tool.run()

For example::

    $ tool --help

.. autosummary::
    :toctree: generated/

    BasePruner
    MedianPruner

.. figure:: img/plot.png
    :alt: a plot

    The plot of a study.

.. This comment is for the writers.
   It runs on.

.. |version| replace:: 3.0

Upgrade
-------

Run the same command.
"""


def test_a_sphinx_page_reads_as_its_text():
    text, title = rst_text(SPHINX)
    assert title == "Pruners"
    assert text == (
        "# Pruners\n\n"
        "The pruners module defines BasePruner; see\n"
        "prune(), tool.run() and the guide.\n"
        "Read the docs or `pip install tool`.\n\n"
        "## Install\n\n"
        "Use a virtual environment.\n\nIt keeps Tool apart.\n\n"
        "New in version 3.0.\n\n"
        "example.py\n\n```python\nimport tool\n\n\ntool.run()\n```\n\n"
        "For example:\n\n```\n$ tool --help\n```\n\n"
        "The plot of a study.\n\n"
        "## Upgrade\n\nRun the same command."
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # an only:: for HTML (or not for LaTeX) is shown; one for LaTeX alone is not
        (".. only:: not latex\n\n   Shown in html.\n", ("Shown in html.", "")),
        (".. only:: latex\n\n   In the PDF.\n\nAfter.\n", ("After.", "")),
        # a paragraph's last line over a rule is no title, even read as written
        ("Line one\nline two\n--------\n", ("Line one\nline two\n--------\n", "")),
        # anonymous targets and directives an HTML page does not show
        ("See `x`__.\n\n__ https://x.org\n\n.. default-domain:: py\n", ("See x.", "")),
        (
            ".. code-block:: python\n   :caption: :file:`x.py`\n\n   pass\n",
            ("x.py\n\n```python\npass\n```", ""),
        ),
        # plain text: as written, byte for byte
        ("Just a note.\n\n\nWith lines.\n", ("Just a note.\n\n\nWith lines.\n", "")),
        # a lone :: before a literal block; "Example ::" loses its colons
        ("Example ::\n\n    x = 1\n", ("Example\n\n```\nx = 1\n```", "")),
        ("Text.\n\n::\n\n    x = 1\n", ("Text.\n\n```\nx = 1\n```", "")),
        # a paragraph's :: without an indented block after it is text
        ("Ends with::\nnot a block\n", ("Ends with::\nnot a block\n", "")),
        # a rule shorter than its line is no underline; a transition stays
        ("Title\n---\n\nText\n\n----------\n\nMore\n", None),
        # a role with its own parentheses, a suppressed link, a domain role
        (":func:`run(x)` and :py:class:`!Tool`\n", ("run(x) and Tool", "")),
        # a code block holding a fence of its own, with blank lines kept
        (
            ".. code-block:: markdown\n\n    ```\n    a\n\n\n    b\n    ```\n",
            ("````markdown\n```\na\n\n\nb\n```\n````", ""),
        ),
        # a described function's signature is text; nested directives are read too
        (
            ".. function:: run(n)\n\n   Runs it.\n\n   .. warning:: Slow\n\n      Very.\n",
            ("run(n)\n\nRuns it.\n\nSlow\n\nVery.", ""),
        ),
    ],
)
def test_what_is_and_is_not_markup(raw, expected):
    text, title = rst_text(raw)
    if expected is None:
        assert (text, title) == (raw, "")
    else:
        assert (text, title) == expected


def test_a_sphinx_folder_is_read_with_its_titles(tmp_path):
    (tmp_path / "index.rst").write_text(SPHINX)
    (tmp_path / "plain.rst").write_text("no markup here\n")
    docs = {d.doc_id: d for d in load_documents([str(tmp_path)])}
    assert docs["index.rst"].title == "Pruners"
    assert ":class:" not in docs["index.rst"].text and "toctree" not in docs["index.rst"].text
    assert docs["plain.rst"].text == "no markup here\n" and docs["plain.rst"].title == "plain"


def test_a_deeply_nested_page_is_read_without_a_crash():
    raw = "".join(" " * (3 * n) + ".. note::\n\n" for n in range(200)) + " " * 600 + "Deep.\n"
    text, _ = rst_text(raw)
    assert text.endswith("Deep.") and ".. note::" in text  # read as text past the bound


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # a code-like directive's comment is code, not a heading (nor the title)
        ("Intro.\n\n.. prompt:: bash $\n\n   # set up\n   pip install x\n",
         "Intro.\n\n```\n# set up\npip install x\n```"),
        # a footnote's text stays; an empty comment and a target hold no block quote
        ("Text [#]_.\n\n.. [#] The footnote text.\n", "Text [#]_.\n\n[#] The footnote text."),
        ("Para.\n\n..\n\n   Quoted text.\n", "Para.\n\n   Quoted text."),
        ("Para.\n\n.. _a:\n\n   Quoted text.\n", "Para.\n\n   Quoted text."),
        # a literal block in a list item ends where the item's text goes on
        ("- Item::\n\n    code\n\n  Continuation.\n\nAfter.\n",
         "- Item:\n\n```\ncode\n```\n\n  Continuation.\n\nAfter."),
        # inline markup wrapped over two lines
        ("See `the long link\n<https://example.com>`__ and :ref:`the storage\nguide <rdb>` now.\n",
         "See the long link and the storage guide now."),
        # a simple table's rules are layout, and no heading
        ("Name   Use\n=====  ======\nTPE    HPO\n=====  ======\n", "Name   Use\nTPE    HPO"),
        # Sphinx's rst-class takes a class name; a class directive describes a class
        (".. rst-class:: sphx-glr-signature\n\n   Signed.\n", "Signed."),
        (".. class:: Foo(a)\n\n   A class.\n", "Foo(a)\n\nA class."),
        # substitutions and references to the page's own targets
        ("|ver| is out; see Python_.\n\n.. |ver| replace:: 3.0\n.. _Python: https://python.org\n",
         "3.0 is out; see Python."),
        ("Use |Auto|_.\n\n.. |Auto| replace:: :class:`~a.AutoSampler`\n", "Use AutoSampler."),
        # a wrapped option value is no text; a csv table's header is
        (".. figure:: x.png\n   :alt: long alt\n      continued\n\n   Caption.\n", "Caption."),
        ('.. csv-table:: Rates\n   :header: "A", "B"\n\n   1, 2\n', "Rates\nA, B\n\n1, 2"),
        # versions as Sphinx words them, with and without an explanation
        (".. versionchanged:: 3.0\n   The x changed.\n", "Changed in version 3.0:\nThe x changed."),
        (".. versionadded:: 3.0 Some explanation\n", "New in version 3.0: Some explanation"),
        # a paragraph line starting ".. " with no blank line before is text
        ("Text goes\n.. on here.\n", "Text goes\n.. on here.\n"),
        # a shorter rule of four or more is a title; a paragraph's last line is not
        ("Installation guide\n==========\n\nText.\n", "# Installation guide\n\nText."),
        ("Line one\nline two\n--------\n", "Line one\nline two\n--------\n"),
        # PEP and RFC roles; a line reading as a markdown heading is escaped
        (":pep:`8` and :rfc:`2616`\n\n# not a title\n", "PEP 8 and RFC 2616\n\n\\# not a title"),
        # Windows line endings and a byte-order mark
        ("\ufeffTitle\r\n=====\r\n\r\n.. note::\r\n\r\n   Body.\r\n", "# Title\n\nBody."),
    ],
)  # fmt: skip
def test_review_cases(raw, expected):
    assert rst_text(raw)[0] == expected


def test_nested_footnotes_are_bounded_like_directives():
    raw = "".join(" " * (3 * k) + f".. [{k}] note\n\n" for k in range(200)) + " " * 600 + "Deep.\n"
    text, _ = rst_text(raw)
    assert text.endswith("Deep.") and ".. [60] note" in text  # read as text past the bound


def test_a_long_line_with_a_stray_backtick_reads_quickly():
    import time

    line = "| `x" + " " * 100_000 + "|\n"
    start = time.perf_counter()
    assert rst_text(line * 3)[0] == line * 3
    assert time.perf_counter() - start < 5  # quadratic took minutes; this is milliseconds


def test_includes_are_read_where_they_stand(tmp_path, warnings):
    """`.. include::` reads reStructuredText in (a `_` partial is then no page of its
    own); `.. literalinclude::` and an include `:code:` read code, with the lines their
    options select; a file outside the folder and docutils' standard files are not."""
    src = tmp_path / "source"
    (src / "examples").mkdir(parents=True)
    (tmp_path / "secret.rst").write_text("Outside the corpus.\n")
    (src / "_intro.rst").write_text("Shared intro.\n\n.. note::\n   A shared note.\n")
    (src / "examples" / "app.py").write_text(
        "import os\n\n\n@dec\ndef run(x):\n    return x\n\n\nclass A:\n"
        "    def go(self):\n        # start\n        return 1\n        # end\n"
    )
    (src / "page.rst").write_text(
        "Guide\n=====\n\n.. include:: _intro.rst\n\n"
        ".. literalinclude:: examples/app.py\n   :pyobject: run\n\n"
        ".. literalinclude:: /examples/app.py\n   :start-after: # start\n"
        "   :end-before: # end\n   :caption: The method\n\n"
        ".. include:: examples/app.py\n   :code: python\n   :end-line: 1\n\n"
        ".. literalinclude:: examples/app.py\n   :pyobject: A.go\n   :language: python3\n\n"
        ".. include:: ../secret.rst\n.. include:: <isonum.txt>\n"
    )
    (doc,) = load_documents([str(src)])
    assert doc.text == (
        "# Guide\n\nShared intro.\n\nA shared note.\n\n"
        "```py\n@dec\ndef run(x):\n    return x\n```\n\n"
        "The method\n\n```py\nreturn 1\n```\n\n```python\nimport os\n```\n\n"
        "```python3\ndef go(self):\n    # start\n    return 1\n```"
    )
    (missing,) = [w for w in warnings if "not read into" in w]
    assert "page.rst -> ../secret.rst (outside the folder)" in missing
    # without a reader (a page read on its own), includes are left out as before
    assert rst_text(".. include:: _intro.rst\n\nText.\n")[0] == "Text."


def test_includes_as_sphinx_reads_them(tmp_path, warnings):
    """Substitutions and targets an included file defines; a markdown include; a nested
    include beside the page; `/` from the folder holding conf.py; literalinclude's
    markers by whole lines, and nothing when one is missing; deep code for :pyobject:."""
    src = tmp_path / "docs" / "source"
    (src / "inc").mkdir(parents=True)
    (src / "parent" / "child").mkdir(parents=True)
    (src / "conf.py").write_text("project = 'x'\n")
    (src / "inc" / "subs.rst").write_text(
        ".. |project| replace:: Harness\n.. _Python: https://python.org\n"
    )
    (src / "README.md").write_text("# Readme\n\n```{note}\nA note.\n```\n")
    (src / "parent" / "child" / "mychild.rst").write_text(
        "Child.\n\n.. include:: ./child/mysibling.rst\n"
    )
    (src / "parent" / "child" / "mysibling.rst").write_text("Sibling.\n")
    (src / "code.py").write_text("import os  # START here\nx = 1\ny = 2  # END\nz = 3\n")
    (src / "deep.py").write_text("TABLE = " + " + ".join(['"ab"'] * 3000) + "\n")
    (src / "parent" / "page.rst").write_text(
        "Page\n====\n\n.. include:: /inc/subs.rst\n\nProject |project|, see Python_.\n\n"
        ".. include:: ../README.md\n   :parser: myst_parser.sphinx_\n\n"
        ".. include:: ./child/mychild.rst\n\n"
        ".. literalinclude:: /code.py\n   :start-after: # START\n   :end-at: # END\n\n"
        ".. literalinclude:: /code.py\n   :start-at: x =\n   :end-before: z =\n\n"
        ".. literalinclude:: /code.py\n   :start-after: NOT THERE\n\n"
        ".. literalinclude:: /deep.py\n   :pyobject: f\n\nEnd.\n"
    )
    loaded = {d.doc_id: d.text for d in load_documents([str(tmp_path / "docs")])}
    assert list(loaded) == ["source/parent/page.rst"]  # included files are no pages
    assert loaded["source/parent/page.rst"] == (
        "# Page\n\nProject Harness, see Python.\n\n# Readme\n\n```{note}\nA note.\n```\n\n"
        "Child.\n\nSibling.\n\n```py\nx = 1\ny = 2  # END\n```\n\n```py\nx = 1\ny = 2  # END\n```"
        "\n\nEnd."
    )
    assert not [w for w in warnings if "not read into" in w or "without text" in w]
