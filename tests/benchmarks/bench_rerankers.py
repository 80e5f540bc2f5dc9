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
import sys
import tempfile
from pathlib import Path

from common import ROOT, fresh_cache, print_table, quiet

from harness.config import load_experiment
from harness.pipeline import run_experiment


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default=str(ROOT / "experiments" / "quickstart.toml"))
    parser.add_argument("--cross-encoder", default="", help="a cross-encoder model folder")
    parser.add_argument("--fetch-k", type=int, default=10)
    parser.add_argument("--rerankers", default="none,bm25,hybrid,mmr,llm")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    quiet()
    rerankers = args.rerankers.split(",") + (["cross-encoder"] if args.cross_encoder else [])
    rows = []
    with tempfile.TemporaryDirectory(prefix="harness-bench-rr-") as tmp:
        cache = fresh_cache(Path(tmp))
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
                    f"{m.get(f'{n}@{k}', float('nan')):.3f}"
                    for n in ("hit_rate", "mrr", "relevancy_mrr")
                ]
            rows.append([*row, s["judge_calls"], s.get("rerank_llm_calls", 0)])
    head = ["reranker", "ms/question"]
    for k in (1, 3, 5):
        head += [f"hit@{k}", f"mrr@{k}", f"relmrr@{k}"]
    print_table(
        f"reranker benchmark: quick-start, fetch_k={args.fetch_k}, k=5, local judge",
        [*head, "judge_calls", "rerank_llm_calls"],
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
