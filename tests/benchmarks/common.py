"""What the benchmark scripts share: a fresh cache and a plain table."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from loguru import logger

from harness.pipeline import default_cache_dir

ROOT = Path(__file__).resolve().parents[2]


def quiet() -> None:
    logger.remove()
    logger.add(sys.stderr, level="WARNING")


def fresh_cache(tmp: Path) -> Path:
    """An empty verdict/index/embedding cache that still sees the user's joined judge
    model, so assembling the 1 GB model file once is not part of any measurement."""
    cache = tmp / "cache"
    cache.mkdir()
    models = default_cache_dir() / "models"
    models.mkdir(parents=True, exist_ok=True)
    os.symlink(models, cache / "models")
    return cache


def print_table(title: str, head: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(head)]
    print(title)
    print("  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
    for r in cells:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))
