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
        "```python\nimport tool\n\n\ntool.run()\n```\n\n"
        "For example:\n\n```\n$ tool --help\n```\n\n"
        "The plot of a study.\n\n"
        "## Upgrade\n\nRun the same command."
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
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
