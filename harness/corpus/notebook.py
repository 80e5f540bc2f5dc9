"""Jupyter notebooks (.ipynb) read as markdown: their markdown cells as written, their code
cells fenced in the notebook's language, in order. Outputs are left out, as LangChain's
NotebookLoader leaves them out by default: they are what a run printed (tables, progress,
images), not what the documentation says, and a RAG index built with that loader holds
none. A first raw cell of front matter (Quarto's notebooks) gives the title. The result
goes through `markdown_text` like any markdown file.
"""

from __future__ import annotations

import json
from typing import Any

from harness.corpus.markdown import code_fence, markdown_text
from harness.errors import ConfigError


def _source(cell: dict[str, Any]) -> str:
    """A cell's text: nbformat 4 stores it as a string or as a list of lines."""
    src = cell.get("source")
    if isinstance(src, list):
        return "".join(s for s in src if isinstance(s, str))
    return src if isinstance(src, str) else ""


def _language(nb: dict[str, Any]) -> str:
    """The notebook's language (its kernel's, else its language_info's, else python)."""

    def mapping(d: Any, key: str) -> dict[str, Any]:
        value = d.get(key) if isinstance(d, dict) else None
        return value if isinstance(value, dict) else {}

    meta = mapping(nb, "metadata")
    kernel, info = mapping(meta, "kernelspec"), mapping(meta, "language_info")
    return str(kernel.get("language") or info.get("name") or "python")


def notebook_text(raw: str, where: str) -> tuple[str, str]:
    """(text, title) of a notebook's JSON (see the module docstring). Raises ConfigError
    naming `where` when `raw` is not an nbformat 4 notebook."""
    try:
        nb = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        raise ConfigError(where, "corpus.sources", "expected a Jupyter notebook (JSON)") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        old = isinstance(nb, dict) and "worksheets" in nb
        raise ConfigError(
            where,
            "corpus.sources",
            "an nbformat 3 notebook: convert it with `jupyter nbconvert --to notebook`"
            if old
            else 'expected a Jupyter notebook (a JSON object with "cells")',
        )
    language = _language(nb)
    parts: list[str] = []
    for cell in (c for c in cells if isinstance(c, dict)):
        kind, text = cell.get("cell_type"), _source(cell).strip("\n")
        if not text.strip():
            continue
        first = not parts
        if kind == "markdown" or (kind == "raw" and first and text.startswith(("---", "+++"))):
            parts.append(text)
        elif kind == "code":
            parts.append(code_fence(text, language))
    return markdown_text("\n\n".join(parts) + "\n")
