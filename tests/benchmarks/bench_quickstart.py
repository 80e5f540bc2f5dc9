"""Benchmark: the quick-start experiment twice, cold then warm.

    make bench            (or: .venv/bin/python tests/benchmarks/bench_quickstart.py)

The first run starts from an empty verdict/index/embedding cache; the second reuses it and
should make zero judge calls and embed nothing. Only the joined judge model file is shared
with the user's cache, so its one-off assembly is not timed. Prints one row per run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from loguru import logger

from harness.config import load_experiment
from harness.pipeline import default_cache_dir, run_experiment

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default=str(ROOT / "experiments" / "quickstart.toml"))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    config = load_experiment(args.experiment, args.set)
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp:
        cache = Path(tmp) / "cache"
        cache.mkdir()
        models = default_cache_dir() / "models"
        models.mkdir(parents=True, exist_ok=True)
        os.symlink(models, cache / "models")
        rows = []
        for label in ("cold", "warm"):
            run = run_experiment(config, results_dir=Path(tmp) / "results", cache_dir=cache)
            s = run.header.stats
            median = s.get("judge_call_median_s")
            rows.append(
                (
                    label,
                    f"{s['index_s']:.2f}",
                    str(s["judge_calls"]),
                    str(s["judge_cache_hits"]),
                    f"{median:.3f}" if median is not None else "-",
                    f"{s['total_s']:.1f}",
                    str(s["embedded_texts"]),
                    f"{run.header.metrics.get(f'mrr@{config.retrieval.k}', float('nan')):.3f}",
                )
            )
    head = (
        "run",
        "index_s",
        "judge_calls",
        "cache_hits",
        "median_call_s",
        "total_s",
        "embedded",
        f"mrr@{config.retrieval.k}",
    )
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print(
        f"quick-start benchmark: {config.name}, {run.header.data['n_questions']} questions, "
        f"{run.header.data['n_chunks']} chunks, k={config.retrieval.k}, judge {run.header.components['judge'].args.get('model')}"
    )
    print("  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
