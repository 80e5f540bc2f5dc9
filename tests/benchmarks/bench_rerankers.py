"""Benchmark: each reranker on the quick-start, with the local judge.

    make bench-rerankers   (or: .venv/bin/python tests/benchmarks/bench_rerankers.py)

For every reranker (none, bm25, hybrid, mmr, llm, and cross-encoder when
--cross-encoder FOLDER is given) runs the quick-start at k = 5 and prints one table:
median milliseconds per question for retrieval + rerank, and the judged hit rate, MRR
and relevancy-MRR at k = 1, 3 and 5. Verdicts are shared through one cache, so a chunk
that two rerankers both return is judged once.
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
    parser.add_argument("--cross-encoder", default="", help="a cross-encoder model folder")
    parser.add_argument("--fetch-k", type=int, default=10)
    parser.add_argument("--rerankers", default="none,bm25,hybrid,mmr,llm")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    rerankers = args.rerankers.split(",") + (["cross-encoder"] if args.cross_encoder else [])
    rows = []
    with tempfile.TemporaryDirectory(prefix="harness-bench-rr-") as tmp:
        cache = Path(tmp) / "cache"
        cache.mkdir()
        models = default_cache_dir() / "models"
        models.mkdir(parents=True, exist_ok=True)
        os.symlink(models, cache / "models")
        for name in rerankers:
            overrides = [
                *args.set,
                "retrieval.k=5",
                f"retrieval.reranker={name}",
                f"retrieval.fetch_k={args.fetch_k}",
            ]
            if name == "cross-encoder":
                overrides.append(f'retrieval.cross_encoder="{args.cross_encoder}"')
            config = load_experiment(args.experiment, overrides)
            run = run_experiment(config, results_dir=Path(tmp) / "results", cache_dir=cache)
            m, s = run.header.metrics, run.header.stats
            row = [name, f"{s['retrieve_ms_median']:.1f}"]
            for k in (1, 3, 5):
                row += [
                    f"{m.get(f'hit_rate@{k}', float('nan')):.3f}",
                    f"{m.get(f'mrr@{k}', float('nan')):.3f}",
                    f"{m.get(f'relevancy_mrr@{k}', float('nan')):.3f}",
                ]
            row += [str(s["judge_calls"]), str(s.get("rerank_llm_calls", 0))]
            rows.append(row)
    head = ["reranker", "ms/question"]
    for k in (1, 3, 5):
        head += [f"hit@{k}", f"mrr@{k}", f"relmrr@{k}"]
    head += ["judge_calls", "rerank_llm_calls"]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print(f"reranker benchmark: quick-start, fetch_k={args.fetch_k}, k=5, local judge")
    print("  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
