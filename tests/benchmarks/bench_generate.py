"""Benchmark: generated questions, and whether tuning on them picks what real queries pick.

    make bench-generate   (.venv/bin/python tests/benchmarks/bench_generate.py --trec --n 100)

--trec (#24): generates --n questions from the judged passages of the TREC DL 2019
development half (--data DIR, default ../shared/data beside the repository; read in
place, never copied), for each seed (--seeds 0,1) and style (--styles: "question" is the
one-step prompt without the overlap and closed-book filters, as before #24; "query" the
default), then retrieves with 12 configurations (k 2-5 x reranker none / bm25 / hybrid,
chunk 1200 / overlap 100) and prints the Kendall tau and regret of the ranking by
source_mrr@k on the generated questions against the labels' MRR@k ranking on the real
development queries (relevant: grade 2-3); the lexical overlap of generated and real
questions with their passages (share of question words in the passage; BM25 rank of the
source passage among all passages); questions kept per minute; the filters' drop counts.
It then prints the ceiling: how far the labels' own ranking reproduces, from the real
queries alone (half against half, a resample against all, and each query scored by one
of its relevant passages as `source_mrr` scores a generated question by its source);
--ceiling prints only that table (retrieval only, no model, about 2 minutes).
--fake runs it all against a scripted model on a loopback endpoint (a smoke test: its
figures mean nothing).

Without --trec, the quick-start mode:
from an empty cache, generates --n questions (every type) with the local Qwen model and
prints kept / dropped per filter / duplicates, minutes and calls; then runs the
quick-start on the generated set and prints the judge's hit_rate and MRR beside
source_hit and source_mrr; then judges the exam and prints its true-positive and
true-negative rates per criterion.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, fresh_cache, print_table, quiet

from harness.analysis.sources import breakdown, judge_exam
from harness.config import load_experiment, parse_experiment
from harness.generate import generate_questions
from harness.judge import open_judge
from harness.metrics import kendall_tau, regret, split_half_taus, winner_warning, word_overlap
from harness.metrics.source import source_flags, source_mrr
from harness.pipeline import run_experiment
from harness.stores import VerdictCache
from harness.stores.verdicts import FILE as VERDICTS_FILE

DATA = ROOT.parent / "shared" / "data"
COLLECTION = "trec-dl-2019-dev"
RERANKERS = ("none", "bm25", "hybrid")
KS = (2, 3, 4, 5)
RELEVANT = 2
"""TREC DL grades 2-3 count as relevant for the labels' MRR."""
BM25_DEPTH = 1000
"""The BM25 rank of a source passage is read in the top 1,000 (deeper: reported as 1,001)."""
STYLES = {
    "question": [
        'generate.style="question"',
        "generate.max_overlap=1.0",
        "generate.closed_book=false",
    ],
    "query": [],
}
"""--styles: the overrides of each style ("question": before #24)."""


def trec_experiment(
    data: Path, questions: Path, qrels: Path | None, reranker: str, extra: Sequence[str] = ()
) -> Any:
    """The experiment of one retrieval over the collection's judged passages."""
    folder = data / COLLECTION
    cfg: dict[str, Any] = {
        "name": f"bench-generate-{reranker}",
        "corpus": {"sources": [str(folder / "corpus.jsonl")]},
        "questions": {"file": str(questions), **({"qrels": str(qrels)} if qrels else {})},
        "chunking": {"chunk_size": 1200, "chunk_overlap": 100},
        "retrieval": {"k": max(KS), "reranker": reranker, "fetch_k": 20},
        "judge": {"local_model": "qwen2.5-coder-1.5b", "concurrency": 4},
        "failures": {"explain": False},
    }
    return parse_experiment(cfg, str(ROOT / "experiments" / "bench-generate.toml"), list(extra))


def read_qrels_grades(path: Path) -> dict[str, dict[str, int]]:
    """query id -> passage id -> grade, from a BEIR qrels.tsv."""
    out: dict[str, dict[str, int]] = {}
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        parts = line.split("\t")
        if i == 0 and not parts[-1].strip().isdigit():
            continue
        out.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return out


def _ranked_chunks(config: Any, cache: Path) -> tuple[Any, list[list[Any]]]:
    """Each question's retrieved chunks, best first (no judge: retrieval only)."""
    from harness.pipeline import prepare

    prepared = prepare(config, cache_dir=cache)
    return prepared, [[prepared.chunks[h.chunk_id] for h in hits] for hits in prepared.hits]


def grid_scores(
    data: Path, generated: Path, cache: Path, extra: Sequence[str] = ()
) -> dict[str, list[float]]:
    """The 12 configurations' source_mrr@k on the generated questions and labels' MRR@k
    on the real queries, in the same order (names: reranker/k); "real": per configuration,
    each real query's id and retrieved passage ids, best first (for `labels_stability`);
    "source_per_question": per configuration, each generated question's source_mrr@k."""
    folder = data / COLLECTION
    grades = read_qrels_grades(folder / "qrels.tsv")
    names, source, labels, real, per_question = [], [], [], [], []
    for reranker in RERANKERS:
        gen_prep, gen_ranked = _ranked_chunks(
            trec_experiment(data, generated, None, reranker, extra), cache
        )
        real_prep, real_ranked = _ranked_chunks(
            trec_experiment(data, folder / "queries.jsonl", folder / "qrels.tsv", reranker, extra),
            cache,
        )
        for k in KS:
            names.append(f"{reranker}/k={k}")
            s = [
                source_mrr(source_flags(ch, q.source), k)
                for q, ch in zip(gen_prep.questions, gen_ranked, strict=True)
                if q.source
            ]
            source.append(statistics.fmean(s) if s else 0.0)
            per_question.append(s)
            r = []
            for q, ch in zip(real_prep.questions, real_ranked, strict=True):
                g = grades.get(q.question_id, {})
                r.append(source_mrr([g.get(c.doc_id, 0) >= RELEVANT for c in ch], k))
            labels.append(statistics.fmean(r) if r else 0.0)
            real.append(
                [
                    (q.question_id, [c.doc_id for c in ch][:k])
                    for q, ch in zip(real_prep.questions, real_ranked, strict=True)
                ]
            )
    return {
        "names": names,
        "source": source,
        "labels": labels,
        "real": real,
        "source_per_question": per_question,
    }


def _rr(ids: Sequence[str], positives: set[str]) -> float:
    """`source_mrr` of retrieved passage ids (already cut at k) against `positives`."""
    return source_mrr([d in positives for d in ids], max(1, len(ids)))


def labels_stability(
    real: Sequence[Sequence[tuple[str, Sequence[str]]]],
    grades: dict[str, dict[str, int]],
    draws: int = 500,
    seed: int = 0,
) -> dict[str, dict[str, float]]:
    """How far the labels' own ranking of the configurations reproduces (real queries, no
    model): the ceiling any set of questions can reach against it. `real` as in
    `grid_scores`; per row the median Kendall tau of the draws and their 10th and 90th
    percentiles (and for one_positive the median regret and the share of draws with
    regret 0):

    - split: half of the real queries against the other half (`split_half_taus`), and
      the share of splits whose halves put the same configuration first;
    - bootstrap: a resample of the real queries against all of them (`bootstrap_taus`);
    - one_positive: the real queries, each scored by one of its relevant passages drawn
      at random (grade 2-3), against all its labels: the one-source-span scoring of
      `source_mrr` with real users' words."""
    import numpy as np

    from harness.metrics import bootstrap_taus, split_half

    relevant = {
        qid: sorted(p for p, g in grades.get(qid, {}).items() if g >= RELEVANT)
        for qid, _ in real[0]
    }
    scored = [qid for qid, _ in real[0] if relevant[qid]]
    ids = [dict(cfg) for cfg in real]
    rr = [[_rr(cfg[qid], set(relevant[qid])) for qid in scored] for cfg in ids]
    full = [statistics.fmean(row) for row in rr]
    rng = np.random.default_rng(seed)
    one_tau, one_regret = [], []
    for _ in range(draws):
        pick = {qid: relevant[qid][rng.integers(len(relevant[qid]))] for qid in scored}
        one = [statistics.fmean(_rr(cfg[q], {pick[q]}) for q in scored) for cfg in ids]
        one_tau.append(kendall_tau(one, full))
        one_regret.append(regret(one, full))

    def summary(taus: Sequence[float]) -> dict[str, float]:
        p10, p50, p90 = np.quantile(np.asarray(taus, dtype=float), [0.1, 0.5, 0.9])
        return {"tau": float(p50), "tau_p10": float(p10), "tau_p90": float(p90)}

    split_taus, same_winner = split_half(rr, draws=draws, seed=seed)
    return {
        "split": summary(split_taus) | {"same_winner": same_winner},
        "bootstrap": summary(bootstrap_taus(rr, draws=draws, seed=seed)),
        "one_positive": summary(one_tau)
        | {
            "regret": float(np.median(one_regret)),
            "regret_zero": sum(r == 0 for r in one_regret) / len(one_regret),
        },
    }


def lexical(data: Path, generated: Path) -> dict[str, float | None]:
    """Mean word overlap and median BM25 rank of the source passage, for the generated
    questions (their source) and the real queries (their grade 2-3 passages; the best
    ranked one)."""
    from harness.corpus import load_questions
    from harness.retrieval.retrieve import bm25_search
    from harness.types import Chunk

    folder = data / COLLECTION
    passages = {}
    for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        o = json.loads(line)
        passages[str(o["id"])] = o["text"]
    chunks = [Chunk(chunk_id=pid, doc_id=pid, text=t, start_char=0) for pid, t in passages.items()]
    search = bm25_search(chunks, BM25_DEPTH)

    def rank(question: str, targets: set[str]) -> int:
        for i, pid in enumerate(search(question), 1):
            if pid in targets:
                return i
        return BM25_DEPTH + 1

    gen = [q for q in load_questions(generated) if q.source]
    g_ov = [
        word_overlap(q.text, " ".join(passages.get(s.doc_id, "") for s in q.source)) for q in gen
    ]
    g_rank = [rank(q.text, {s.doc_id for s in q.source}) for q in gen]
    grades = read_qrels_grades(folder / "qrels.tsv")
    r_ov, r_rank = [], []
    for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        rel = {
            p for p, g in grades.get(str(q["id"]), {}).items() if g >= RELEVANT and p in passages
        }
        if not rel:
            continue
        r_ov.extend(word_overlap(q["text"], passages[p]) for p in rel)
        r_rank.append(rank(q["text"], rel))

    def mean(v: list[float]) -> float | None:
        return statistics.fmean(v) if v else None

    def median(v: list[int]) -> float | None:
        return statistics.median(v) if v else None

    return {
        "gen_overlap": mean(g_ov),
        "real_overlap": mean(r_ov),
        "gen_bm25_rank": median(g_rank),
        "real_bm25_rank": median(r_rank),
    }


@dataclass(frozen=True)
class TrecRow:
    """One (seed, style) of the --trec table."""

    seed: int
    style: str
    kept: int
    minutes: float
    calls: int
    drops: dict[str, int]
    tau: float
    regret: float
    pick: str
    best: str
    lex: dict[str, float | None]
    warning: str | None
    grid: dict[str, list[Any]] = field(default_factory=dict)
    """`grid_scores`: the configurations' names, source and labels' scores."""
    self_tau: float = float("nan")
    """Median split-half Kendall tau of the generated questions' own ranking (half of
    them against the other half): how decisive they are, whether or not they agree
    with the labels."""


def trec_row(
    data: Path,
    seed: int,
    style: str,
    n: int,
    tmp: Path,
    cache: Path,
    extra: Sequence[str] = (),
    generator: Any = None,
) -> TrecRow:
    """Generate from the judged passages with one seed and style, sweep the grid, compare."""
    from harness.generate.pipeline import FILTERS

    folder = data / COLLECTION
    out = tmp / f"{style}-{seed}" / "generated.jsonl"
    config = trec_experiment(data, folder / "queries.jsonl", None, "none", [*extra, *STYLES[style]])
    t0 = time.perf_counter()
    report = generate_questions(
        config, out=out, n=n, seed=seed, cache_dir=cache, generator=generator
    )
    minutes = (time.perf_counter() - t0) / 60
    kept = report.counts["kept"]
    drops = {f: report.counts[f] for f in FILTERS}
    if not kept:
        return TrecRow(
            seed,
            style,
            0,
            minutes,
            report.stats["calls"],
            drops,
            float("nan"),
            float("nan"),
            "-",
            "-",
            {},
            None,
        )
    grid = grid_scores(data, out, cache, extra)
    names, src, lab = grid["names"], grid["source"], grid["labels"]
    return TrecRow(
        seed=seed,
        style=style,
        kept=kept,
        minutes=minutes,
        calls=report.stats["calls"],
        drops=drops,
        tau=kendall_tau(src, lab),
        regret=regret(src, lab),
        pick=names[max(range(len(names)), key=lambda i: src[i])],
        best=names[max(range(len(names)), key=lambda i: lab[i])],
        lex=lexical(data, out),
        warning=winner_warning(src, lab, names, "the labels"),
        grid=grid,
        self_tau=(
            statistics.median(split_half_taus(grid["source_per_question"]))
            if len(grid["source_per_question"][0]) >= 4  # questions with a source
            else float("nan")
        ),
    )


def print_trec(
    rows: Sequence[TrecRow], stability: dict[str, dict[str, float]] | None = None
) -> None:
    """The --trec tables: ranking agreement, lexical overlap, and the filters; with
    `stability` (`labels_stability`), how far the labels' own ranking reproduces."""

    def f(v: float | None, fmt: str = ".3f") -> str:
        return "-" if v is None or v != v else format(v, fmt)

    if rows:  # (none with --ceiling)
        print_table(
            "tuning on generated questions vs the labels on real queries (12 configurations)",
            ("seed", "style", "kept", "kept/min", "calls/kept", "tau", "regret", "picked", "labels' best",
             "self tau"),
            [(r.seed, r.style, r.kept, f(r.kept / r.minutes if r.minutes else None, ".1f"),
              f(r.calls / r.kept if r.kept else None, ".1f"), f(r.tau), f(r.regret), r.pick, r.best,
              f(r.self_tau, ".2f"))
             for r in rows],
        )  # fmt: skip
        print_table(
            "lexical overlap with the relevant/source passage (real: grade 2-3)",
            ("seed", "style", "gen overlap", "real overlap", "gen BM25 rank", "real BM25 rank"),
            [(r.seed, r.style, f(r.lex.get("gen_overlap")), f(r.lex.get("real_overlap")),
              f(r.lex.get("gen_bm25_rank"), ".0f"), f(r.lex.get("real_bm25_rank"), ".0f"))
             for r in rows],
        )  # fmt: skip
        filters = list(rows[0].drops)
        print_table(
            "dropped by filter",
            ("seed", "style", *filters),
            [(r.seed, r.style, *(r.drops[x] for x in filters)) for r in rows],
        )
    graded = [r for r in rows if r.grid]
    if graded:
        # where the rankings part: the labels' score of each configuration beside the
        # generated questions' source_mrr@k of each row
        names = graded[0].grid["names"]
        print_table(
            "per configuration: labels' MRR@k (real queries), source_mrr@k (generated)",
            ("configuration", "labels", *(f"seed {r.seed} {r.style}" for r in graded)),
            [
                (name, f(graded[0].grid["labels"][i]), *(f(r.grid["source"][i]) for r in graded))
                for i, name in enumerate(names)
            ],
        )
    if stability:
        what = {
            "split": "half of the real queries vs the other half",
            "bootstrap": "a resample of the real queries vs all of them",
            "one_positive": "real queries, one relevant passage each (as a source span)",
        }
        print_table(
            "the ceiling: how far the labels' own ranking reproduces (real queries, no model)",
            ("compared with the labels' ranking", "tau median", "tau 10-90%", "regret median",
             "regret 0", "same winner"),
            [(what[key], f(v["tau"], ".2f"), f"{f(v['tau_p10'], '.2f')} .. {f(v['tau_p90'], '.2f')}",
              f(v.get("regret")), f(v.get("regret_zero"), ".0%"), f(v.get("same_winner"), ".0%"))
             for key, v in stability.items()],
        )  # fmt: skip
    for r in rows:
        if r.warning:
            print(f"seed {r.seed} {r.style}: {r.warning}")


def fake_model(n: int, prompt: str) -> Any:
    """A scripted model that answers every generation prompt (for --fake): queries are
    the passage's first words, so the figures mean nothing; the run proves the wiring."""
    import re

    from harness.testing import Act

    if "Rate the question" in prompt:
        body = {c: 5 for c in ("groundedness", "usefulness", "standalone")}
        return Act(text=json.dumps(body | {f"{c}_why": "ok" for c in body}))
    if "does any of them answer it" in prompt:
        return Act(text='{"on_topic": "yes", "answered": "no"}')
    if "Copy the one sentence from the passages" in prompt:
        return Act(text="NONE")
    if "Answer the search query from this text" in prompt:
        return Act(text='{"answer": "it"}')
    if "from what you know" in prompt:
        return Act(text='{"answer": "unknown"}')
    if "Summarise in one line" in prompt:
        passage = prompt.split("<<<\n", 1)[1].split("\n>>>", 1)[0]
        return Act(text=json.dumps({"summary": " ".join(passage.split()[:12])}))
    source = (
        prompt.split("About a document:", 1)[-1]
        if "About a document:" in prompt
        else prompt.split("<<<\n", 1)[-1]
    )
    if "Search query:" in prompt:
        source = prompt.split("Search query:", 1)[1]
    words = re.findall(r"[a-z]{4,}", source.lower())[:2]
    if "About a document:" in prompt or "Search query:" in prompt:
        words += ["explained", "simply"]  # a query in "a user's words": half its own
    return Act(text=json.dumps({"question": " ".join(words) or "anything", "answer": "it"}))


def run_trec(
    data: Path,
    seeds: Sequence[int],
    styles: Sequence[str],
    n: int,
    extra: Sequence[str] = (),
    fake: bool = False,
    keep: Path | None = None,
) -> list[TrecRow]:
    """Every (seed, style) row, in a fresh cache (with --fake: a scripted model); with
    `keep`, each row's generated questions are copied there as STYLE-SEED.jsonl, and its
    report (every dropped question and why) as STYLE-SEED.report.json."""
    if not (data / COLLECTION / "corpus.jsonl").is_file():
        raise SystemExit(f"{data / COLLECTION}: not found (pass --data DIR holding {COLLECTION}/)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as t:
        tmp = Path(t)
        cache = fresh_cache(tmp)
        for seed in seeds:
            for style in styles:
                if fake:
                    from harness.testing import FakeOpenAI

                    with FakeOpenAI(fake_model) as server:
                        endpoint = [
                            f'generate.base_url="{server.base_url}"',
                            'generate.model="fake"',
                            'generate.api_key_env="HARNESS_BENCH_NO_KEY"',
                        ]
                        rows.append(trec_row(data, seed, style, n, tmp, cache, [*extra, *endpoint]))
                else:
                    rows.append(trec_row(data, seed, style, n, tmp, cache, extra))
                made = tmp / f"{style}-{seed}" / "generated.jsonl"
                if keep is not None and made.is_file():
                    keep.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(made, keep / f"{style}-{seed}.jsonl")
                    report = made.with_suffix(".report.json")  # every dropped one, and why
                    shutil.copyfile(report, keep / f"{style}-{seed}.report.json")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default=str(ROOT / "experiments" / "quickstart.toml"))
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--trec", action="store_true", help="the TREC DL ranking benchmark (#24)")
    parser.add_argument("--data", default=str(DATA), help="folder holding trec-dl-2019-dev/")
    parser.add_argument("--seeds", default="0,1", help="comma-separated generation seeds")
    parser.add_argument("--styles", default="question,query", help="comma-separated styles")
    parser.add_argument("--fake", action="store_true", help="a scripted model (smoke test)")
    parser.add_argument("--keep", help="copy each row's generated questions to this folder")
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="only the ceiling table of --trec: real queries, retrieval only, no model",
    )
    args = parser.parse_args()
    quiet()
    if args.ceiling:
        folder = Path(args.data) / COLLECTION
        with tempfile.TemporaryDirectory(prefix="harness-bench-") as t:
            # the real queries stand in for generated ones: only the "real" part is read
            grid = grid_scores(Path(args.data), folder / "queries.jsonl", fresh_cache(Path(t)))
        print_trec([], labels_stability(grid["real"], read_qrels_grades(folder / "qrels.tsv")))
        return 0
    if args.trec:
        styles = [s for s in args.styles.split(",") if s]
        bad = [s for s in styles if s not in STYLES]
        if bad:
            raise SystemExit(f"--styles: expected some of {','.join(STYLES)}, got {args.styles!r}")
        seeds = [int(x) for x in args.seeds.split(",") if x.strip()]
        keep = Path(args.keep) if args.keep else None
        rows = run_trec(Path(args.data), seeds, styles, args.n, args.set, args.fake, keep)
        graded = [r for r in rows if r.grid]
        stability = (
            labels_stability(
                graded[0].grid["real"],
                read_qrels_grades(Path(args.data) / COLLECTION / "qrels.tsv"),
            )
            if graded
            else None
        )
        print_trec(rows, stability)
        return 0
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
