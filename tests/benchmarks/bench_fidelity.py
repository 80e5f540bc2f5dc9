"""How faithful is each judging method to human labels? `make bench-fidelity`.

For each collection (in ../shared/data, TREC DL 2019, development half: graded 0-3 by
NIST, and CISI: binary; in the repository, the quick-start's markdown handbook with its 40
questions, labelled by their answer spans: see `handbook_qrels`) and each judge method
(pointwise, graded, extractive, ensemble, criteria, and
pointwise+fewshot4: the default mode shown four worked examples from a judge exam), with the
packaged local judge: three retrievals of every question (no reranker, bm25 and hybrid
over the dense top fetch_k), each judged at k = 4, which gives 12 configurations (k = 1..4
x 3 rerankers). Printed per method and criterion: the judge's yes-rate against the
labels', the mean of the judge's probability (P(relevant), P(relevant and complete): a
rate read from the probabilities rather than the yes/no verdicts), Cohen's kappa with
its 95% interval, the AUC of the judge's probability, kappa after a calibration fitted
on 40 random labelled pairs (measured on the other pairs), with --exam-calibration the
yes-rate and kappa after a calibration fitted on the collection's judge exam alone (no
labels) that re-cuts the verdicts (`harness calibrate --exam --apply verdicts`), and the
judged yes-rate as a run's trust line corrects it with the exam's error rates of the raw
verdicts (what `harness calibrate --exam` writes by default),
Kendall tau between the judge's and the labels' ranking of the 12 configurations by MRR
(hard, and soft MRR for the judge), the regret of the configuration each puts first (the
labels' best MRR minus the labels' MRR of the pick; a tie at the top counts its worst),
the calls and seconds each method cost, and (first collection) the flip rate when a line
telling the grader to answer yes is appended to 30 sampled chunks: masked as harness
judges them / unmasked. Then, per method, every statistic of the judge a sweep could
decide on (`RANKING_STATISTICS`) with its tau and regret against the labels' MRR, and
the same by its worst case over the collections (which the defaults are chosen by); last,
each method by its worst case (lowest kappa, lowest tau and highest regret of the default
objective, calls against the default mode's), the default and the best worst case marked.

A method "MODE+fewshotN" is MODE with judge.few_shot = N from the collection's judge exam:
the exam `harness generate` writes for EXAM_QUESTIONS questions generated from the
collection's own passages (no labels), made once and kept in the shared cache (its
generation is not in the method's calls or seconds).

Labels: relevant = grade >= 1, complete = grade >= 2 (binary CISI: complete = relevant).
A retrieved passage the labels do not grade for that question is skipped on TREC (the
pool is judged) and counted irrelevant on CISI (TREC's convention for sparse labels).
The handbook's labels are graded from the answer spans (`handbook_qrels`).

    python tests/benchmarks/bench_fidelity.py [--collections trec-dl-2019-dev,cisi,handbook]
        [--methods pointwise,graded,extractive,ensemble,criteria,pointwise+fewshot4]
        [--questions N] [--prepare-only] [--exam-calibration]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.analysis import fit_platt, injection_check, read_qrels, validate_run
from harness.analysis.calibrate import labelled_hits
from harness.analysis.validate import Qrels, max_grade
from harness.config import JudgeConfig, parse_experiment
from harness.judge import open_judge
from harness.log import RunLog
from harness.metrics import auc, bootstrap_ci, cohen_kappa, kendall_tau, regret
from harness.metrics.trust import rogan_gladen
from harness.pipeline import default_cache_dir, prepare, run_experiment
from tests.benchmarks.common import ROOT, fresh_cache, print_table, quiet

DATA = ROOT.parent / "shared" / "data"
RERANKERS = ("none", "bm25", "hybrid")
K = 4
SETTINGS = {
    # passages of one or two sentences; abstracts of up to ~2,000 characters; the
    # quick-start's markdown handbook at the quick-start's chunking
    "trec-dl-2019-dev": {"chunk_size": 2000, "limit": 22, "unjudged": "skip"},
    # 40 of CISI's 76 judged queries (310 pairs): with 12 (89 pairs) its relevance kappa
    # moved by 0.09 and its soft tau by 0.16 between two runs of the same prompts
    # (2026-11-27 and 2026-12-01), as much as between two judge methods
    "cisi": {"chunk_size": 1200, "limit": 40, "unjudged": "irrelevant"},
    "handbook": {"chunk_size": 800, "limit": 40, "unjudged": "irrelevant"},
}
HANDBOOK = "handbook"
"""The collection in the repository: the quick-start's handbook and its 40 questions,
labelled by their answer spans (`handbook_qrels`) rather than a qrels file."""


METHODS = "pointwise,graded,extractive,ensemble,criteria,pointwise+fewshot4"
EXAM_QUESTIONS = 12
"""Questions generated per collection for its judge exam (the few-shot methods' source)."""


def parse_method(method: str) -> tuple[str, int]:
    """(judge mode, few-shot examples) of a method name: "graded", "pointwise+fewshot4"."""
    mode, _, extra = method.partition("+")
    if not extra:
        return mode, 0
    if not extra.startswith("fewshot"):
        raise SystemExit(f"--methods: expected MODE or MODE+fewshotN, got {method!r}")
    return mode, int(extra.removeprefix("fewshot") or 4)


def exam_for(collection: str, shared: Path, cache: Path) -> Path:
    """The collection's judge exam, generated once (EXAM_QUESTIONS questions from its
    passages, the local model) into the shared cache and reused."""
    from harness.generate.pipeline import generate_questions
    from harness.generate.writer import output_paths

    if collection == HANDBOOK:  # the quick-start's own exam, in the repository
        return ROOT / "questions" / "handbook-generated.exam.jsonl"
    out = shared / "exams" / f"{collection}.jsonl"
    exam = output_paths(out)["exam"]
    if not exam.is_file():
        config = experiment(collection, "none", "pointwise", SETTINGS[collection]["limit"])
        generate_questions(config, out=out, n=EXAM_QUESTIONS, seed=0, cache_dir=cache)
    return exam


def experiment(
    collection: str, reranker: str, method: str, limit: int, exam: Path | None = None
) -> Any:
    """The experiment of one retrieval of a collection, judged by `method` (few-shot
    methods take their examples from `exam`)."""
    folder = DATA / collection
    s = SETTINGS[collection]
    mode, few_shot = parse_method(method)
    judge: dict[str, Any] = {"local_model": "qwen2.5-coder-1.5b", "concurrency": 4, "mode": mode}
    if few_shot:
        assert exam is not None, "a few-shot method needs the collection's exam"
        judge.update(few_shot=few_shot, exam=str(exam))
    if collection == HANDBOOK:
        corpus = str(ROOT / "experiments" / "handbook")
        questions = {"file": str(ROOT / "questions" / "handbook.jsonl"), "limit": limit}
    else:
        corpus = str(folder / "corpus.jsonl")
        questions = {
            "file": str(folder / "queries.jsonl"),
            "qrels": str(folder / "qrels.tsv"),
            "limit": limit,
        }
    data = {
        "name": f"fidelity-{collection}-{reranker}-{method}",
        "corpus": {"sources": [corpus]},
        "questions": questions,
        "chunking": {"chunk_size": s["chunk_size"], "chunk_overlap": 100},
        "retrieval": {"k": K, "reranker": reranker, "fetch_k": 20},
        "judge": judge,
        # the methods' own cost: no wider pools judged for failed questions
        "failures": {"explain": False},
    }
    return parse_experiment(data, str(ROOT / "experiments" / "fidelity.toml"))


def handbook_qrels(runs: list[RunLog]) -> Qrels:
    """Chunk-level labels of the handbook runs from the questions' answer spans: 2
    (relevant and complete) for a chunk overlapping the span that answers, 1 (relevant)
    for one overlapping the markdown section holding it (from its heading to the next
    heading of any level), 0 for any other chunk and every chunk of an unanswerable
    question."""
    import re

    from harness.corpus.load import load_documents
    from harness.metrics.source import overlaps
    from harness.types import SourceSpan

    heading = re.compile(r"^#{1,6} ", re.M)
    # per document: where its headings start, and its length
    outline = {
        d.doc_id: ([m.start() for m in heading.finditer(d.text)], len(d.text))
        for d in load_documents([str(ROOT / "experiments" / "handbook")])
    }

    def section(span: SourceSpan) -> SourceSpan:
        starts, length = outline[span.doc_id]
        start = max((s for s in starts if s <= span.start), default=0)
        end = min((s for s in starts if s >= span.end), default=length)
        return SourceSpan(doc_id=span.doc_id, start=start, end=end)

    qrels: Qrels = {}
    for run in runs:
        for q in run.questions:
            spans = q.question.source
            sections = [section(s) for s in spans]
            labels = qrels.setdefault(q.question.question_id, {})
            for h in q.hits:
                answer = any(overlaps(h.chunk, s) for s in spans)
                near = any(overlaps(h.chunk, s) for s in sections)
                labels[h.chunk.chunk_id] = 2 if answer else 1 if near else 0
    return qrels


def pairs_of(runs: list[RunLog], qrels: Qrels, unjudged: str) -> list[tuple[Any, int]]:
    """Each labelled (question, chunk) of the runs once: (its verdict, its label grade)."""
    return [
        (h.verdict, g)
        for h, g in labelled_hits(runs, qrels, unjudged=unjudged)
        if h.verdict.grade is not None
    ]


def kappa_after_calibration(
    pairs: list[tuple[Any, int]], criterion: int, cut: int, n_fit: int = 40, seed: int = 0
) -> float | None:
    """Fit Platt on n_fit random labelled pairs, then Cohen's kappa on the others."""
    scored = [(v.probabilities(), g) for v, g in pairs if v.probabilities() is not None]
    if len(scored) < n_fit + 10:
        return None
    rng = random.Random(seed)
    rng.shuffle(scored)
    fit, held = scored[:n_fit], scored[n_fit:]
    m = fit_platt([p[criterion] for p, _ in fit], [g >= cut for _, g in fit])
    judge = [m(p[criterion]) >= 0.5 for p, _ in held]
    human = [g >= cut for _, g in held]
    return cohen_kappa(judge, human)


def exam_calibrated(
    pairs: list[tuple[Any, int]],
    collection: str,
    config: Any,
    judge: Any,
    shared: Path,
    cache: Path,
) -> tuple[list[Any], dict[str, Any]] | None:
    """What a calibration fitted only on the collection's judge exam (questions the
    local model generated from its passages, their source passages, unrelated passages
    and near misses; no labels) makes of the pairs: each verdict re-cut at its threshold
    (as `harness calibrate --exam --apply verdicts` fits it), and the exam's error rates
    of the raw verdicts per criterion (as the default `--apply rates` fits them, for
    the trust line's corrected rate). None when the method's judge gives no
    probabilities to calibrate."""
    from harness.analysis.exam_calibration import calibrate_from_exam
    from harness.pipeline.prepare import load_inputs

    if not any(v.probabilities() is not None for v, _ in pairs):
        return None
    exam = exam_for(collection, shared, cache)
    chunks = load_inputs(config).chunks
    cal, _ = calibrate_from_exam(exam, chunks, judge, config.judge.criteria, applies="rates")
    # the maps do not depend on `applies`: re-cut with the same fit
    recut = replace(cal, applies="verdicts")
    return [recut.apply_verdict(v) for v, _ in pairs], cal.rates


def judge_for(judge: Any, config: Any) -> Any:
    """The shared judge as `config`'s method asks for it: its mode, and its few-shot
    examples (one local server serves every method)."""
    from harness.judge.fewshot import load_examples

    other = judge.with_options(mode=config.judge.effective_mode)
    other.few_shot = load_examples(config.judge)
    return other


def measure(
    collection: str,
    methods: list[str],
    limit: int,
    cache: Path,
    injection_sample: int = 0,
    shared: Path | None = None,
    exam_calibration: bool = False,
    ranking: list[list[Any]] | None = None,
) -> list[list[Any]]:
    """The table rows of one collection; with `ranking`, one row per method and judge
    statistic (`RANKING_STATISTICS`) appended to it: Kendall tau and regret of the 12
    configurations ordered by that statistic against the labels' MRR."""
    folder = DATA / collection
    qrels = {} if collection == HANDBOOK else read_qrels(folder / "qrels.tsv")
    unjudged = SETTINGS[collection]["unjudged"]
    complete_cut = 2 if collection == HANDBOOK else min(2, max_grade(qrels))
    rows: list[list[Any]] = []
    base = experiment(collection, "none", "pointwise", limit)
    with tempfile.TemporaryDirectory() as tmp, open_judge(base.judge, cache_dir=cache) as judge:
        for method in methods:
            runs: list[RunLog] = []
            exam = exam_for(collection, shared or cache, cache) if parse_method(method)[1] else None
            t0 = time.perf_counter()
            for reranker in RERANKERS:
                config = experiment(collection, reranker, method, limit, exam)
                runs.append(
                    run_experiment(
                        config,
                        results_dir=Path(tmp) / method,
                        cache_dir=cache,
                        judge=judge_for(judge, config),
                    )
                )
            seconds = time.perf_counter() - t0
            if collection == HANDBOOK:
                qrels = handbook_qrels(runs)
            calls = sum(int(r.header.stats.get("judge_calls", 0)) for r in runs)
            pairs = pairs_of(runs, qrels, unjudged)
            # 12 configurations: each run at k = 1..4
            judge_mrr, judge_soft, human_mrr = [], [], []
            judged: dict[str, list[float]] = {name: [] for name in RANKING_STATISTICS}
            for run in runs:
                for k in range(1, K + 1):
                    v = validate_run(run, qrels, k=k, unjudged=unjudged)
                    judge_mrr.append(v["metrics"]["judge"].get(f"mrr@{k}", 0.0))
                    judge_soft.append(v["metrics"]["judge"].get(f"soft_mrr@{k}", 0.0))
                    human_mrr.append(v["metrics"]["human"].get(f"mrr@{k}", 0.0))
                    for name, values in judged.items():
                        values.append(v["metrics"]["judge"].get(f"{name}@{k}", math.nan))
            tau = kendall_tau(judge_mrr, human_mrr)
            tau_soft = kendall_tau(judge_soft, human_mrr)
            if ranking is not None:
                for name, values in judged.items():
                    if not any(math.isnan(x) for x in values):
                        ranking.append(
                            [
                                collection,
                                method,
                                name,
                                f"{kendall_tau(values, human_mrr):.2f}",
                                f"{regret(values, human_mrr):.3f}",
                            ]
                        )
            regrets = f"{regret(judge_mrr, human_mrr):.3f}/{regret(judge_soft, human_mrr):.3f}"
            examcal = (
                exam_calibrated(
                    pairs, collection, config, judge_for(judge, config), shared or cache, cache
                )
                if exam_calibration and not parse_method(method)[1]
                else None
            )
            for c, (name, cut) in enumerate((("relevant", 1), ("complete", complete_cut))):
                j = [bool(v.relevant.value) if c == 0 else v.grade == 2 for v, _ in pairs]
                h = [g >= cut for _, g in pairs]
                probs = [v.probabilities() for v, _ in pairs]
                scored = [p[c] for p in probs if p is not None]
                mean_p = sum(scored) / len(scored) if scored else None
                kappa = cohen_kappa(j, h)
                ci = bootstrap_ci(
                    len(j),
                    lambda idx, j=j, h=h: cohen_kappa([j[i] for i in idx], [h[i] for i in idx]),
                )
                a = auc(
                    [p[c] for p in probs if p is not None],
                    [g >= cut for (_, g), p in zip(pairs, probs, strict=True) if p is not None],
                )
                kc = kappa_after_calibration(pairs, c, cut)
                if examcal is None:
                    exam_cols = ["-", "-", "-"]
                else:
                    recut, rates = examcal
                    je = [bool(v.relevant.value) if c == 0 else v.grade == 2 for v in recut]
                    r = rates.get(name)
                    corr = None if r is None else rogan_gladen(sum(j) / len(j), r.tpr, r.fpr)
                    exam_cols = [
                        f"{sum(je) / len(je):.2f}",
                        f"{cohen_kappa(je, h):.2f}",
                        "-" if corr is None else f"{corr:.2f}",
                    ]
                rows.append(
                    [
                        collection,
                        method,
                        name,
                        len(j),
                        f"{sum(j) / len(j):.2f}",
                        f"{sum(h) / len(h):.2f}",
                        "-" if mean_p is None else f"{mean_p:.2f}",
                        f"{kappa:.2f}",
                        f"[{ci[0]:.2f},{ci[1]:.2f}]" if ci else "-",
                        "-" if a is None else f"{a:.2f}",
                        "-" if kc is None else f"{kc:.2f}",
                        *exam_cols,
                        f"{tau:.2f}" if c == 0 else "",
                        f"{tau_soft:.2f}" if c == 0 else "",
                        regrets if c == 0 else "",
                        calls if c == 0 else "",
                        f"{seconds:.0f}" if c == 0 else "",
                    ]
                )
            if injection_sample:
                inj = injection_check(
                    runs[0],
                    judge_for(judge, config),
                    base.judge.criteria,
                    policy="mask",
                    sample=injection_sample,
                    concurrency=base.judge.concurrency,
                )
                for row, crit in zip(rows[-2:], ("relevant", "complete"), strict=True):
                    row.append(
                        f"{inj['as_configured'][crit + '_flip_rate']:.2f}/"
                        f"{inj['unmasked'][crit + '_flip_rate']:.2f}"
                    )
            else:
                for row in rows[-2:]:
                    row.append("-")
            print_table(f"{collection} {method}", HEAD, rows[-2:])
            sys.stdout.flush()
    return rows


RANKING_STATISTICS = (
    "mrr",
    "soft_mrr",
    "hit_rate",
    "soft_hit_rate",
    "relevancy_mrr",
    "soft_relevancy_mrr",
    "ndcg",
    "ap",
    "precision",
)
"""The judge's statistics a sweep could decide on, each measured at ordering the 12
configurations as the labels' MRR orders them (issue 22: decide on what ranks best)."""

RANKING_HEAD = ("collection", "method", "judge statistic", "tau vs labels' MRR", "regret")


def worst_case(ranking: list[list[Any]]) -> list[list[Any]]:
    """Per method and statistic: tau on each collection and the lowest of them (the
    worst case the defaults are chosen by), best worst case first."""
    by: dict[tuple[str, str], dict[str, float]] = {}
    for collection, method, name, tau, _ in ranking:
        by.setdefault((method, name), {})[collection] = float(tau)
    out = [
        [
            method,
            name,
            " ".join(f"{c} {t:.2f}" for c, t in taus.items()),
            f"{min(taus.values()):.2f}",
        ]
        for (method, name), taus in by.items()
    ]
    return sorted(out, key=lambda row: -float(row[3]))


def methods_by_worst_case(rows: list[list[Any]]) -> list[list[Any]]:
    """Per method, its worst case over the collections measured: the lowest kappa (of
    either criterion), the lowest Kendall tau and the highest regret of the default
    objective (soft MRR) against the labels' MRR, and its calls against the default
    mode's on the same collections. Best worst case first (by tau, then kappa: a sweep
    decides on the ranking); the default mode and the best worst case are marked."""
    col = {name: i for i, name in enumerate(HEAD)}
    by: dict[str, dict[str, Any]] = {}
    for row in rows:
        m = by.setdefault(row[col["method"]], {"kappa": [], "tau": [], "regret": [], "calls": {}})
        where = row[col["collection"]]
        m["kappa"].append((float(row[col["kappa"]]), f"{row[col['criterion']]}, {where}"))
        if row[col["tau_soft"]] != "":
            m["tau"].append((float(row[col["tau_soft"]]), where))
            m["regret"].append((float(row[col["regret_mrr/soft"]].split("/")[1]), where))
            m["calls"][where] = int(row[col["calls"]])
    default = JudgeConfig().effective_mode
    base = by.get(default, {}).get("calls", {})
    # best worst case first: by the lowest tau, then the lowest kappa
    ranked = sorted(by.items(), key=lambda mm: (-min(mm[1]["tau"])[0], -min(mm[1]["kappa"])[0]))
    out = []
    for i, (method, m) in enumerate(ranked):
        kappa, tau, regret_ = min(m["kappa"]), min(m["tau"]), max(m["regret"])
        shared = [c for c in m["calls"] if c in base]
        ratio = (
            f"{sum(m['calls'][c] for c in shared) / sum(base[c] for c in shared):.2f}x"
            if shared
            else "-"
        )
        marks = ("default" if method == default else "", "best worst case" if i == 0 else "")
        out.append(
            [
                method,
                len(m["tau"]),
                f"{kappa[0]:.2f} ({kappa[1]})",
                f"{tau[0]:.2f} ({tau[1]})",
                f"{regret_[0]:.3f} ({regret_[1]})",
                ratio,
                ", ".join(x for x in marks if x),
            ]
        )
    return out


WORST_HEAD = (
    "method",
    "collections",
    "worst kappa",
    "worst tau soft_mrr",
    "worst regret soft_mrr",
    "calls vs default",
    "",
)

HEAD = (
    "collection",
    "method",
    "criterion",
    "pairs",
    "judge_yes",
    "labels_yes",
    "judge_mean_p",
    "kappa",
    "kappa_95%",
    "AUC",
    "kappa_cal40",
    "yes_examcal",
    "kappa_examcal",
    "yes_examcorr",
    "tau_mrr",
    "tau_soft",
    "regret_mrr/soft",
    "calls",
    "seconds",
    "inject_flips",
)


def bench_cache(tmp: Path, shared: Path) -> Path:
    """A cache with no verdicts (every method pays for its own, so calls and seconds are
    real) that shares the user's indexes, embeddings and joined model file."""
    cache = fresh_cache(tmp)
    (shared / "index").mkdir(parents=True, exist_ok=True)
    os.symlink(shared / "index", cache / "index")
    if (shared / "embeddings.sqlite").is_file():
        os.symlink(shared / "embeddings.sqlite", cache / "embeddings.sqlite")
    return cache


def main() -> None:
    """Measure and print the table (or only build the indexes, with --prepare-only)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", default="trec-dl-2019-dev,cisi,handbook")
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--questions", type=int, default=0, help="per collection (0: default)")
    parser.add_argument("--prepare-only", action="store_true", help="embed and index only")
    parser.add_argument(
        "--injection-sample",
        type=int,
        default=30,
        help="pairs re-judged with an instruction to the grader appended (first collection)",
    )
    parser.add_argument(
        "--exam-calibration",
        action="store_true",
        help="also each method's yes-rate and kappa under a calibration fitted on the "
        "collection's judge exam alone (no labels; the exam is generated once)",
    )
    args = parser.parse_args()
    quiet()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    collections = [c for c in args.collections.split(",") if c]
    missing = [c for c in collections if c != HANDBOOK and not (DATA / c / "qrels.tsv").is_file()]
    if missing:
        print(f"bench-fidelity: no labelled data at {DATA} for {missing}; left out")
        collections = [c for c in collections if c not in missing]
    shared = default_cache_dir()  # indexes and embeddings are reused across invocations
    rows: list[list[Any]] = []
    ranking: list[list[Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = bench_cache(Path(tmp), shared)
        for c in collections:
            limit = args.questions or SETTINGS[c]["limit"]
            if args.prepare_only:
                for reranker in RERANKERS:
                    prepare(experiment(c, reranker, "pointwise", limit), cache_dir=shared)
                continue
            rows += measure(
                c,
                args.methods.split(","),
                limit,
                cache,
                args.injection_sample if not rows else 0,
                shared=shared,
                exam_calibration=args.exam_calibration,
                ranking=ranking,
            )
    if rows:
        print()
        print_table("judge fidelity against human labels (local Qwen2.5-Coder-1.5B)", HEAD, rows)
        print()
        print_table("which judge statistic ranks the 12 configurations", RANKING_HEAD, ranking)
        print()
        print_table(
            "judge statistics by their worst case over the collections",
            ("method", "judge statistic", "tau per collection", "worst"),
            worst_case(ranking),
        )
        print()
        print_table(
            "judge methods by their worst case over the collections (the default objective, "
            "soft_mrr@k)",
            WORST_HEAD,
            methods_by_worst_case(rows),
        )


if __name__ == "__main__":
    main()
