"""Benchmark: questions generated from the quick-start handbook with the local model,
then the quick-start run on them.

    make bench-generate   (or: .venv/bin/python tests/benchmarks/bench_generate.py --n 100)

From an empty cache: generates --n questions (every type) with the local Qwen model and
prints kept / dropped per filter / duplicates, minutes and calls; then runs the
quick-start on the generated set and prints the judge's hit_rate and MRR beside
source_hit and source_mrr; then judges the exam and prints its true-positive and
true-negative rates per criterion.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from common import ROOT, fresh_cache, print_table, quiet

from harness.analysis.sources import breakdown, judge_exam
from harness.config import load_experiment
from harness.generate import generate_questions
from harness.judge import open_judge
from harness.pipeline import run_experiment
from harness.stores import VerdictCache
from harness.stores.verdicts import FILE as VERDICTS_FILE


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default=str(ROOT / "experiments" / "quickstart.toml"))
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    quiet()
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp:
        cache = fresh_cache(Path(tmp))
        out = Path(tmp) / "questions" / "generated.jsonl"
        config = load_experiment(args.experiment, args.set)
        t0 = time.perf_counter()
        report = generate_questions(config, out=out, n=args.n, cache_dir=cache)
        gen_min = (time.perf_counter() - t0) / 60
        c, s = report.counts, report.stats
        print_table(
            f"generate: {args.n} questions asked from {config.name}'s documents, model "
            f"{config.judge.local_model if not config.judge.model else config.judge.model}",
            ("generated", "kept", "malformed", "errors", "standalone", "groundedness",
             "usefulness", "duplicates", "minutes", "calls", "tokens_out"),
            [(c["generated"], c["kept"], c["malformed"], c["errors"], c["standalone"],
              c["groundedness"], c["usefulness"], c["duplicates"], f"{gen_min:.1f}",
              s["calls"], s["completion_tokens"])],
        )  # fmt: skip
        if not c["kept"]:
            print("no question kept; nothing to run")
            return 1
        # failure explanations judge a wider pool per failed question: not measured here
        run_config = load_experiment(
            args.experiment, [*args.set, f"questions.file={out}", "failures.explain=false"]
        )
        t1 = time.perf_counter()
        run = run_experiment(run_config, results_dir=Path(tmp) / "results", cache_dir=cache)
        run_min = (time.perf_counter() - t1) / 60
        k = run.header.k
        m = run.header.metrics

        def f(key: str) -> str:
            v = m.get(key)
            return "-" if v is None else f"{v:.3f}"

        print_table(
            f"quick-start on the generated set: {len(run.questions)} questions, k={k}",
            ("hit_rate", "mrr", "source_hit", "source_mrr", "judge_calls", "minutes"),
            [(f(f"hit_rate@{k}"), f(f"mrr@{k}"), f(f"source_hit@{k}"), f(f"source_mrr@{k}"),
              run.header.stats.get("judge_calls"), f"{run_min:.1f}")],
        )  # fmt: skip
        rows = breakdown(run.questions, k, "type")
        print_table(
            "by type",
            ("type", "n", "hit_rate", "mrr", "source_hit", "source_mrr"),
            [(r["type"], r["questions"], *(
                "-" if r[x] is None else f"{r[x]:.3f}"
                for x in ("hit_rate", "mrr", "source_hit", "source_mrr")))
             for r in rows],
        )  # fmt: skip
        exam_file = out.with_name("generated.exam.jsonl")
        verdicts = VerdictCache(cache / VERDICTS_FILE)
        t2 = time.perf_counter()
        try:
            with open_judge(run_config.judge, cache_dir=cache) as judge:
                res = judge_exam(
                    exam_file,
                    judge,
                    run_config.judge.criteria,
                    cache=verdicts,
                    concurrency=run_config.judge.concurrency,
                )
        finally:
            verdicts.close()
        exam_min = (time.perf_counter() - t2) / 60

        def pct(v: float | None) -> str:
            return "-" if v is None else f"{v:.1%}"

        print_table(
            f"judge exam: {res['source_items']} source and {res['unrelated_items']} unrelated "
            f"passages, {res['errors']} errors, {exam_min:.1f} min",
            ("criterion", "TPR", "TNR"),
            [(crit, pct(res[crit]["tpr"]), pct(res[crit]["tnr"]))
             for crit in ("relevant", "complete")],
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
