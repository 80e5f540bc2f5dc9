"""`harness validate`, `label`, `judge-check` and `export`: the judge against people."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.analysis.validate import UNJUDGED, default_cuts
from harness.cli.options import (
    cache_dir_option,
    emit,
    format_option,
    positive_int,
    printable,
    results_dir_option,
)
from harness.errors import HarnessError
from harness.log import (
    HEADER,
    RunHeader,
    RunLog,
    find_sweep_dir,
    read_header,
    read_run,
    resolve_run_dir,
)
from harness.report import text
from harness.types import JudgedHit, QuestionResult


def _qrels_path(arg: str | None, header: RunHeader | None) -> str:
    path = arg or (header.data.get("qrels_file") if header else None)
    if not path:
        raise HarnessError("give --qrels FILE (or set questions.qrels in the experiment)")
    return str(path)


def qrels_option(p: argparse.ArgumentParser) -> None:
    """--qrels: the labels, by default the run's experiment's questions.qrels."""
    p.add_argument("--qrels", help="qrels file (default: questions.qrels of the run's experiment)")


def grade_options(p: argparse.ArgumentParser) -> None:
    """--relevant-grade and --complete-grade: where graded labels start to count."""
    p.add_argument(
        "--relevant-grade",
        type=int,
        help="lowest label grade that counts as relevant (default: 1)",
    )
    p.add_argument(
        "--complete-grade",
        type=int,
        help="lowest label grade that counts as complete (default: 2, or 1 for binary labels)",
    )


def _runs_of(target: str, results_dir: str) -> tuple[list[RunLog], RunHeader | None]:
    """The run, or every trial's run of a sweep, and a header to find the qrels in."""
    sweep_dir = find_sweep_dir(target, results_dir)
    if sweep_dir is None:
        run = read_run(resolve_run_dir(target, results_dir))
        return [run], run.header
    runs = [read_run(p) for p in sorted((sweep_dir / "trials").glob("*")) if (p / HEADER).is_file()]
    return runs, runs[0].header if runs else None


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Fit a calibration of the judge on labelled pairs of a run or sweep and write it;
    with --exam, on the judge exam and the corpus's near misses (no labels)."""
    from harness.analysis import calibrate, read_qrels
    from harness.analysis.validate import cut_alike, labelled_chunking, other_chunking
    from harness.judge.calibration import write_calibration

    if args.exam is not None:
        return _calibrate_exam(args)
    if args.target is None:
        raise HarnessError("calibrate: give a RUN_OR_SWEEP with labels (--qrels), or --exam FILE")
    runs, header = _runs_of(args.target, args.results_dir)
    qrels_path = _qrels_path(args.qrels, header)
    qrels, chunking = read_qrels(qrels_path), labelled_chunking(qrels_path)
    if chunking is not None:  # chunk labels fit only runs that cut their chunks alike
        runs = [r for r in runs if cut_alike(r, chunking)]
        if not runs:
            raise other_chunking(qrels_path, chunking, args.target)
    rel_default, comp_default = default_cuts(qrels)
    cal = calibrate(
        runs,
        qrels,
        relevant_grade=args.relevant_grade or rel_default,
        complete_grade=args.complete_grade or comp_default,
        source={"target": str(args.target), "qrels": str(qrels_path), "runs": len(runs)},
        applies=args.apply or "verdicts",
    )
    if not cal.criteria and not cal.rates:
        left_out = cal.source.get("left_out", {})
        if left_out:
            reasons = "; ".join(f"{crit}: {why}" for crit, why in left_out.items())
            raise HarnessError(f"calibrate: {qrels_path}: nothing to write: {reasons}")
        raise HarnessError(
            f"{args.target}: no labelled chunk has a probability (the judge gave no logprobs?) "
            "and none has both an answer and a non-answer label to measure error rates on"
        )
    path = write_calibration(cal, args.out)
    return emit(args, {"out": str(path), **cal.to_dict()}, text.format_calibration(cal, path))


def _calibrate_exam(args: argparse.Namespace) -> int:
    """`calibrate --exam`: judge the exam and its near misses with the experiment's judge
    (through the verdict cache) and write the calibration (analysis/exam_calibration.py)."""
    from harness.analysis.exam_calibration import calibrate_from_exam, format_exam_calibration
    from harness.config import load_experiment
    from harness.judge import check_endpoint, open_judge
    from harness.judge.calibration import write_calibration
    from harness.pipeline import default_cache_dir
    from harness.pipeline.prepare import load_inputs
    from harness.stores import VerdictCache
    from harness.stores.verdicts import FILE

    if not args.experiment:
        raise HarnessError(
            "calibrate --exam: give --experiment FILE (its judge is calibrated, its corpus "
            "gives the near misses)"
        )
    config = load_experiment(args.experiment, args.set or [])
    check_endpoint(config.judge, config.path or args.experiment)
    inputs = load_inputs(config)
    cache = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    verdicts = VerdictCache(cache / FILE)
    try:
        with open_judge(config.judge, cache_dir=cache) as judge:
            cal, info = calibrate_from_exam(
                args.exam,
                inputs.chunks,
                judge,
                config.judge.criteria,
                cache=verdicts,
                concurrency=judge.concurrency,
                near=args.near,
                near_weight=args.near_weight,
                applies=args.apply or "rates",
            )
    finally:
        verdicts.close()
    path = write_calibration(cal, args.out)
    return emit(
        args,
        {"out": str(path), **info, **cal.to_dict()},
        format_exam_calibration(cal, path, info, Path(args.experiment)),
    )


def cmd_validate(args: argparse.Namespace) -> int:
    """Measure a run's (or every trial's) verdicts against human qrels; the qrels default
    to those named in the experiment.
    """
    from harness.analysis import validate_run, validate_sweep

    sweep_dir = find_sweep_dir(args.target, args.results_dir)
    if sweep_dir is not None:
        headers = [
            read_header(p)
            for p in sorted((sweep_dir / "trials").glob("*"))
            if (p / HEADER).is_file()
        ]
        from harness.analysis.sources import source_qrels
        from harness.analysis.validate import labels_file

        res = validate_sweep(
            sweep_dir,
            # each trial's own labels: chunk ids repeat across chunk sizes (`labels_for`)
            source_qrels
            if args.sources
            else labels_file(_qrels_path(args.qrels, headers[0] if headers else None)),
            metric=args.metric,
            unjudged=args.unjudged,
            relevant_grade=args.relevant_grade,
            complete_grade=args.complete_grade,
        )
        return emit(args, res, text.format_validate_sweep(res, str(sweep_dir)))
    run = read_run(resolve_run_dir(args.target, args.results_dir))
    if args.sources:
        from harness.analysis.sources import source_qrels

        qrels = source_qrels(run)
    else:
        from harness.analysis.validate import labels_file

        qrels = labels_file(_qrels_path(args.qrels, run.header))(run)
    res = validate_run(
        run,
        qrels,
        k=args.k,
        unjudged=args.unjudged,
        relevant_grade=args.relevant_grade,
        complete_grade=args.complete_grade,
    )
    return emit(args, res, text.format_validate_run(res, run.run_dir))


def _ask(prompt: str) -> str:
    while True:
        try:
            answer = input(prompt).strip().lower()[:1]
        except EOFError:
            return "q"
        if answer in ("y", "n", "s", "q"):
            return answer
        print("please answer y, n, s or q")


def ask_on_terminal(q: QuestionResult, h: JudgedHit) -> int | str | None:
    """Show one (question, chunk) and ask for its grade: 0, 1, 2, None (skip) or "quit"."""
    print("\n" + "=" * 80)
    print(printable(f"question [{q.question.question_id}]: {q.question.text}"))
    rank = next((i for i, x in enumerate(q.hits, 1) if x is h), None)
    print("-" * 33 + (f" chunk {rank} of {len(q.hits)} " if rank else "").ljust(47, "-"))
    print(printable(h.chunk.text))
    print("-" * 80)
    rel = _ask("relevant: is the passage about what the question asks? [y/n/s=skip/q=quit] ")
    if rel in ("q", "s"):
        return "quit" if rel == "q" else None
    if rel == "n":
        return 0
    comp = _ask("complete: does it alone answer the question? [y/n/s/q] ")
    if comp in ("q", "s"):
        return "quit" if comp == "q" else None
    return 2 if comp == "y" else 1


def cmd_label(args: argparse.Namespace) -> int:
    """Ask a person about sampled (question, chunk) pairs; append chunk-level qrels."""
    from harness.analysis import label_run

    if sys.stdin is None or sys.stdin.closed:
        # `harness label RUN <&-`: there is nobody to ask; say so before writing anything.
        raise HarnessError("label: stdin is closed; label asks a person for each grade")
    run = read_run(resolve_run_dir(args.run, args.results_dir))
    written = label_run(run, args.out, ask_on_terminal, sample=args.sample, seed=args.seed)
    message = (
        f"\n{written} labels written to {args.out}; `harness validate {run.run_dir} --qrels "
        f"{args.out}` compares them with the judge"
    )
    return emit(args, {"written": written, "out": str(args.out)}, message)


def cmd_judge_check(args: argparse.Namespace) -> int:
    """Re-judge a sample of a run's pairs, reworded and shuffled, to see how stable the
    judge is; every re-judged pair is a paid call (the verdict cache is bypassed).
    """
    from harness.analysis import injection_check, judge_check, read_qrels
    from harness.config import load_experiment, rebase_on_user
    from harness.judge import open_judge
    from harness.pipeline import default_cache_dir

    run = read_run(resolve_run_dir(args.run, args.results_dir))
    overrides = args.set or []
    # The run folder says how it was judged, never where the key goes: the endpoint and
    # the key's variable are the user's (--experiment, --set, environment, defaults).
    config = rebase_on_user(
        run.header.config,
        load_experiment(args.experiment, overrides) if args.experiment else None,
        overrides,
        where=str(run.run_dir / HEADER),
        hint="--experiment FILE",
        sections=("judge",),
        loads_corpus=False,  # judge-check re-judges recorded pairs: nothing is fetched
    )
    qrels_path = args.qrels or run.header.data.get("qrels_file")
    qrels = read_qrels(qrels_path) if qrels_path else None
    cache = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
    if args.exam is not None:
        return _judge_exam(args, run, config, cache)
    with open_judge(config.judge, cache_dir=cache) as judge:
        if args.injection:
            res = injection_check(
                run,
                judge,
                config.judge.criteria,
                policy=config.judge.injection,
                sample=args.sample,
                seed=args.seed,
                concurrency=judge.concurrency,
            )
            return emit(args, res, text.format_injection_check(res))
        res = judge_check(
            run,
            judge,
            config.judge.criteria,
            sample=args.sample,
            seed=args.seed,
            qrels=qrels,
            concurrency=judge.concurrency,
        )
    return emit(args, res, text.format_judge_check(res))


def _judge_exam(args: argparse.Namespace, run: RunLog, config: Any, cache: Path) -> int:
    """`judge-check --exam`: the generated set's exam, judged through the verdict cache;
    the judged exam goes to RUN/exam (a run folder `harness calibrate` reads)."""
    from harness.analysis.sources import exam_path_for, judge_exam
    from harness.judge import open_judge
    from harness.stores import VerdictCache
    from harness.stores.verdicts import FILE

    exam = Path(args.exam) if args.exam else exam_path_for(run)
    verdicts = VerdictCache(cache / FILE)
    try:
        with open_judge(config.judge, cache_dir=cache) as judge:
            res = judge_exam(
                exam,
                judge,
                config.judge.criteria,
                cache=verdicts,
                concurrency=judge.concurrency,
                out_dir=run.run_dir / "exam",
            )
    finally:
        verdicts.close()
    return emit(args, res, text.format_exam(res))


def cmd_export(args: argparse.Namespace) -> int:
    """Write a run's ranking and judge grades as TREC run and qrels files."""
    from harness.analysis import export_trec

    run = read_run(resolve_run_dir(args.run, args.results_dir))
    run_path, qrels_path = export_trec(run, args.out)
    return emit(
        args,
        {"run": str(run_path), "qrels": str(qrels_path)},
        f"wrote {run_path} and {qrels_path} (grades 0/1/2 from the judge)",
    )


def register(sub: argparse._SubParsersAction) -> None:
    """Add validate, label, judge-check and export to the command line."""
    p_val = sub.add_parser("validate", help="agreement of the judge with human labels (qrels)")
    p_val.add_argument("target", metavar="RUN_OR_SWEEP")
    qrels_option(p_val)
    p_val.add_argument(
        "--sources",
        action="store_true",
        help="use generated questions' source spans as the labels (a chunk overlapping the "
        "source is relevant and complete) instead of qrels",
    )
    p_val.add_argument("--k", type=int, help="metrics at this k (default: the run's k)")
    p_val.add_argument(
        "--metric",
        default=None,
        help="for a sweep: the metric ranked (default: the sweep's objective, soft_mrr; "
        "the labels' side is its hard twin, and the judge's hard twin is shown beside it)",
    )
    p_val.add_argument(
        "--unjudged",
        choices=UNJUDGED,
        default="auto",
        help="retrieved chunks the labels do not list: left out (skip) or irrelevant; "
        "default auto: left out where the labels name chunks (harness label), irrelevant "
        "where they name documents (pooled qrels, TREC's convention)",
    )
    format_option(p_val)
    results_dir_option(p_val)
    grade_options(p_val)
    p_val.set_defaults(func=cmd_validate)

    p_cal = sub.add_parser(
        "calibrate",
        help="fit the judge's probabilities to labels, or with --exam to the judge exam and "
        "the corpus (Platt, per criterion), and measure its error rates",
    )
    p_cal.add_argument("target", metavar="RUN_OR_SWEEP", nargs="?")
    qrels_option(p_cal)
    p_cal.add_argument(
        "--exam",
        metavar="EXAM.jsonl",
        help="instead of labels: the judge exam harness generate writes (questions with their "
        "source passages), plus near misses from the corpus; needs --experiment",
    )
    p_cal.add_argument(
        "--experiment", metavar="FILE", help="with --exam: the experiment whose judge and corpus"
    )
    p_cal.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="with --exam: override a setting"
    )
    p_cal.add_argument(
        "--near",
        type=int,
        default=2,
        help="with --exam: near misses per question (same document, then BM25; default 2)",
    )
    p_cal.add_argument(
        "--near-weight",
        type=float,
        default=0.5,
        help="with --exam: a near miss's weight as a non-answer for complete (default 0.5)",
    )
    p_cal.add_argument(
        "--apply",
        choices=("rates", "verdicts"),
        default=None,
        help="what runs change with it: 'rates' keeps their verdicts as judged and corrects "
        "only their rates and trust statement (the default with --exam); 'verdicts' re-cuts "
        "every verdict with the fitted maps (the default with labels)",
    )
    cache_dir_option(p_cal)
    p_cal.add_argument(
        "--out",
        default="judge-calibration.json",
        help="calibration file to write (default: judge-calibration.json); use it with "
        'judge.calibration = "judge-calibration.json"',
    )
    grade_options(p_cal)
    format_option(p_cal)
    results_dir_option(p_cal)
    p_cal.set_defaults(func=cmd_calibrate)

    p_lab = sub.add_parser("label", help="label sampled chunks of a run by hand, into qrels")
    p_lab.add_argument("run", metavar="RUN_OR_TRIAL")
    p_lab.add_argument(
        "--sample",
        type=positive_int,
        default=50,
        help="pairs to ask about (default 50): random questions, each with all its chunks "
        "in rank order, so the labels also give each question's hit rate and MRR",
    )
    p_lab.add_argument(
        "--out", default="labels.tsv", help="qrels file to append to (default: labels.tsv)"
    )
    p_lab.add_argument("--seed", type=int, default=0, help="the questions' order (default 0)")
    format_option(p_lab)
    results_dir_option(p_lab)
    p_lab.set_defaults(func=cmd_label)

    p_chk = sub.add_parser(
        "judge-check", help="flip rates under a reworded prompt and shuffled order"
    )
    p_chk.add_argument("run", metavar="RUN_OR_TRIAL")
    p_chk.add_argument("--sample", type=positive_int, default=30)
    p_chk.add_argument("--seed", type=int, default=0)
    p_chk.add_argument("--qrels", help="human labels, for the length-bias check")
    p_chk.add_argument(
        "--injection",
        action="store_true",
        help="instead: append an instruction to the grader to each sampled chunk and report "
        "how many verdicts flip, as judged (judge.injection) and unmasked",
    )
    p_chk.add_argument(
        "--exam",
        nargs="?",
        const="",
        metavar="FILE",
        help="instead: the judge exam of a generated set (default: the .exam.jsonl beside "
        "the run's questions file): true-positive and true-negative rates per criterion",
    )
    p_chk.add_argument(
        "--experiment",
        metavar="FILE",
        help="experiment whose judge endpoint and key variable to use (a run folder's are "
        "never used)",
    )
    p_chk.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a setting, e.g. judge.base_url=URL or judge.api_key_env=VAR",
    )
    cache_dir_option(p_chk)
    format_option(p_chk)
    results_dir_option(p_chk)
    p_chk.set_defaults(func=cmd_judge_check)

    p_exp = sub.add_parser("export", help="write a run as TREC run and qrels files")
    p_exp.add_argument("run", metavar="RUN_OR_TRIAL")
    p_exp.add_argument("--out", required=True, help="folder for run.trec and qrels.trec")
    format_option(p_exp)
    results_dir_option(p_exp)
    p_exp.set_defaults(func=cmd_export)
