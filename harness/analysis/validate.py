"""Can the judge be trusted? Its verdicts against human labels (qrels), on the user's data.

- `read_qrels`: BEIR `qrels.tsv` (`query_id doc_id relevance`, header optional) or TREC
  qrels (`qid 0 id relevance`). An id is a chunk id (labels written by `harness label`)
  or a document id, which then labels every chunk of that document. A chunk the
  labels do not list is left out where they name chunks (a person labelled a sample)
  and irrelevant where they name documents (pooled qrels): `unjudged_rule`.
- `validate_run`: per criterion, the confusion matrix, accuracy and Cohen's kappa (with
  a bootstrap interval over questions) for the verdicts the run paid for; the metrics
  recomputed from the human labels beside the judge's; and a label-corrected
  (prediction-powered) estimate of hit rate and MRR.
- `validate_sweep`: the Kendall tau between the judge's ranking of the trials and the
  labels' ranking, with the top configurations of each side by side.

"Complete" is checked against the highest grade in the qrels; with binary labels that
is relevance itself, and the report says so.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness import metrics as m
from harness.corpus import read_text_file
from harness.errors import ConfigError, HarnessError
from harness.log import RunLog, as_run, read_run, read_sweep
from harness.types import JudgedHit, QuestionResult

Qrels = dict[str, dict[str, int]]


def _number(text: str) -> float | None:
    """`text` as a finite number, or None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_qrels(path: str | os.PathLike[str], *, allow_empty: bool = False) -> Qrels:
    """query id -> (chunk or document id) -> grade.

    The first row is a header only when its last column is not a number; a grade may be
    written as an integer-valued float (`1.0`); `#` lines are comments. Raises
    ConfigError naming the file and line for anything else: a non-integer grade, a wrong
    row, a binary or non-UTF-8 file, or no label at all (unless `allow_empty`: a labels
    file `harness label` was stopped in before the first answer).
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigError(str(p), "qrels", "qrels file not found")
    out: Qrels = {}
    first = True
    for n, line in enumerate(read_text_file(p, "qrels").splitlines(), 1):
        # A TSV's columns are its tabs' (a document id may hold a space: a file's name);
        # TREC's are split at white space.
        parts = [c.strip() for c in line.split("\t") if c.strip()] if "\t" in line else line.split()
        if not parts or line.startswith("#"):
            continue
        if first and _number(parts[-1]) is None:
            first = False
            continue  # a header such as "query_id doc_id relevance"
        first = False
        if len(parts) == 4:  # TREC: qid iteration id relevance
            qid, _, did, rel = parts
        elif len(parts) == 3:
            qid, did, rel = parts
        else:
            raise ConfigError(
                f"{p}:{n}", "", "expected 'query_id doc_id relevance' (or TREC's 4 columns)"
            )
        grade = _number(rel)
        if grade is None or not grade.is_integer():
            raise ConfigError(f"{p}:{n}", "relevance", f"expected an integer grade, got {rel!r}")
        out.setdefault(qid, {})[did] = int(grade)
    if not out and not allow_empty:
        raise ConfigError(str(p), "qrels", "the file holds no labels")
    return out


def max_grade(qrels: Qrels) -> int:
    """The highest label in the qrels, which counts as "relevant and complete"; at least 1,
    so binary qrels (0/1) treat every relevant label as complete.
    """
    return max((g for q in qrels.values() for g in q.values()), default=1) or 1


CHUNKING_LINE = "# chunking: "
"""How `harness label` records, in the labels file, the chunking its chunk ids were cut
with (read_qrels skips the line as a comment)."""


def labelled_chunking(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The chunking a labels file's chunk ids were cut with (its `# chunking:` line, as
    `harness label` writes it), or None when the file does not say."""
    for line in read_text_file(Path(path), "qrels").splitlines():
        if line.startswith(CHUNKING_LINE):
            try:
                value = json.loads(line[len(CHUNKING_LINE) :])
            except json.JSONDecodeError:
                return None
            return value if isinstance(value, dict) else None
    return None


def chunking_text(chunking: Any) -> str:
    """A chunking as `chunk_overlap=100 chunk_size=800`."""
    if not isinstance(chunking, dict):
        return "unknown settings"
    return " ".join(f"{k}={v}" for k, v in sorted(chunking.items()))


def cut_alike(run: RunLog, chunking: dict[str, Any] | None) -> bool:
    """Whether `run` cuts its chunks as labels of `chunking` were cut (None: the labels
    do not say, so they are taken to fit)."""
    return chunking is None or run.header.config.get("chunking") == chunking


def other_chunking(path: str | os.PathLike[str], chunking: Any, target: str) -> HarnessError:
    """The one-line error for chunk labels that fit no run of `target`."""
    return HarnessError(
        f"{path}: its chunk labels are of chunks cut with {chunking_text(chunking)}, and "
        f"{target} cuts its chunks otherwise: the same chunk ids name other texts there; "
        "label a run of it (harness label)"
    )


def labels_for(run: RunLog, qrels: Qrels, chunking: dict[str, Any] | None) -> Qrels:
    """The labels that apply to `run`: all of them when the run cuts its chunks as the
    labels' were cut (or the labels do not say how), else only the document-level ones.

    Chunk ids are `doc#start`: a run with another chunk size has chunks with the labelled
    ids and other texts (the 400-character chunk at 0 is not the 800-character one), so
    a chunk label would be read as another chunk's."""
    if cut_alike(run, chunking):
        return qrels
    docs = {
        q: {k: g for k, g in labels.items() if not is_chunk_id(k)} for q, labels in qrels.items()
    }
    return {q: labels for q, labels in docs.items() if labels}


def labels_file(path: str | os.PathLike[str]) -> Callable[[RunLog], Qrels]:
    """The labels in `path` as a function of a run (`labels_for`): a run cut otherwise
    than the file's chunk labels gets its document-level labels only, and HarnessError
    (one line) when that leaves none; `validate_sweep` leaves such trials out."""
    qrels, chunking = read_qrels(path), labelled_chunking(path)

    def of(run: RunLog) -> Qrels:
        mine = labels_for(run, qrels, chunking)
        if mine or chunking is None:
            return mine
        raise other_chunking(path, chunking, str(run.run_dir))

    return of


UNJUDGED = ("auto", "irrelevant", "skip")
"""How a retrieved chunk the labels do not list counts (`--unjudged`)."""


def is_chunk_id(key: str) -> bool:
    """Whether a qrels id names a chunk (`doc_id#start`, as runs and `harness label` write
    them) rather than a document."""
    doc, sep, start = key.rpartition("#")
    return bool(sep and doc and start.isdigit())


def unjudged_rule(labels: dict[str, int], unjudged: str) -> str:
    """ "skip" or "irrelevant": how one question's chunks that its labels do not list
    count. "auto" skips them where the labels name chunks (a sample a person labelled,
    as `harness label` writes: an unlisted chunk was never looked at) and counts them
    irrelevant where the labels name documents (pooled qrels, TREC's convention)."""
    if unjudged not in UNJUDGED:
        raise HarnessError(f"--unjudged: expected one of {list(UNJUDGED)}, got {unjudged!r}")
    if unjudged != "auto":
        return unjudged
    return "skip" if any(is_chunk_id(key) for key in labels) else "irrelevant"


def human_grade(labels: dict[str, int], hit: JudgedHit, unjudged: str) -> int | None:
    """The label of a retrieved chunk: its own (chunk-level) or its document's; an id the
    qrels do not list is 0 (TREC's convention) or None (not labelled), as
    `unjudged_rule` says."""
    for key in (hit.chunk.chunk_id, hit.chunk.doc_id):
        if key in labels:
            return labels[key]
    return 0 if unjudged_rule(labels, unjudged) == "irrelevant" else None


def _kappa_ci(
    by_question: list[tuple[list[bool], list[bool]]], n_resamples: int = 1000, seed: int = 0
) -> tuple[float, float] | None:
    """Bootstrap over questions (verdicts of one question are not independent)."""

    def kappa(idx: np.ndarray) -> float | None:
        j = [v for i in idx for v in by_question[i][0]]
        h = [v for i in idx for v in by_question[i][1]]
        return m.cohen_kappa(j, h) if j else None

    return m.bootstrap_ci(len(by_question), kappa, n_resamples=n_resamples, seed=seed)


def _agreement(by_question: list[tuple[list[bool], list[bool]]]) -> dict[str, Any]:
    judge = [v for j, _ in by_question for v in j]
    human = [v for _, h in by_question for v in h]
    if not judge:
        return {"n": 0}
    c = m.confusion(judge, human)
    return {
        "n": len(judge),
        "confusion": c,
        "accuracy": (c["tp"] + c["tn"]) / len(judge),
        "judge_yes_rate": (c["tp"] + c["fp"]) / len(judge),
        "human_yes_rate": (c["tp"] + c["fn"]) / len(judge),
        "kappa": m.cohen_kappa(judge, human),
        "kappa_ci95": _kappa_ci(by_question),
    }


def default_cuts(qrels: Qrels) -> tuple[int, int]:
    """(relevant, complete) grade cut-offs of the labels when none are given: relevant
    from grade 1, complete from grade 2 (the TREC convention for graded labels; `harness
    label` writes 0/1/2); with binary labels complete falls back to relevance."""
    return 1, min(2, max_grade(qrels))


def _cuts(qrels: Qrels, relevant_grade: int | None, complete_grade: int | None) -> tuple[int, int]:
    """The (relevant, complete) label cut-offs: the ones given, else `default_cuts`."""
    rel_cut, top = default_cuts(qrels)
    rel_cut = relevant_grade if relevant_grade is not None else rel_cut
    top = complete_grade if complete_grade is not None else top
    if not 0 < rel_cut <= top:
        raise HarnessError(
            f"--relevant-grade and --complete-grade: expected 1 <= relevant <= complete, got "
            f"{rel_cut} and {top}"
        )
    return rel_cut, top


@dataclass
class _Labelled:
    """The judge against the labels, gathered question by question: yes/no pairs per
    criterion, (P(yes), label) pairs for the AUC, and each question's metrics both ways."""

    rel_cut: int
    top: int
    k: int
    unjudged: str
    rel_pairs: list[tuple[list[bool], list[bool]]] = field(default_factory=list)
    comp_pairs: list[tuple[list[bool], list[bool]]] = field(default_factory=list)
    scored: dict[str, list[tuple[float, bool]]] = field(
        default_factory=lambda: {"relevant": [], "complete": []}
    )
    judge_q: dict[str, dict[str, float]] = field(default_factory=dict)
    human_q: dict[str, dict[str, float]] = field(default_factory=dict)
    skipped: int = 0
    unlabelled: dict[str, int] = field(default_factory=lambda: {"skip": 0, "irrelevant": 0})
    """Chunks the labels do not list, by how they counted (`unjudged_rule`)."""

    def add(self, q: QuestionResult, labels: dict[str, int]) -> None:
        """One labelled question: its chunks without a label or with a failed verdict
        are skipped (counted)."""
        jr, hr, jc, hc = [], [], [], []
        grades_h: list[int | None] = []
        rule = unjudged_rule(labels, self.unjudged)
        for h in q.hits:
            g = human_grade(labels, h, rule)
            if h.chunk.chunk_id not in labels and h.chunk.doc_id not in labels:
                self.unlabelled[rule] += 1
            grades_h.append(g)
            if g is None or h.verdict.error:
                self.skipped += 1
                continue
            jr.append(bool(h.verdict.relevant.value))
            hr.append(g >= self.rel_cut)
            jc.append(h.verdict.grade == 2)
            hc.append(g >= self.top)
            p = h.verdict.probabilities()
            if p is not None:
                self.scored["relevant"].append((p[0], g >= self.rel_cut))
                self.scored["complete"].append((p[1], g >= self.top))
        self.rel_pairs.append((jr, hr))
        self.comp_pairs.append((jc, hc))
        lengths = [len(h.chunk.text) for h in q.hits]
        human_scale = [
            None if g is None else (2 if g >= self.top else 1 if g >= self.rel_cut else 0)
            for g in grades_h
        ]
        qid = q.question.question_id
        self.human_q[qid] = m.question_metrics(human_scale, lengths, range(1, self.k + 1))
        self.judge_q[qid] = q.metrics

    def agreement(self) -> dict[str, Any]:
        """Per criterion: the yes/no agreement and the AUC of the judge's P(yes)."""
        return {
            name: {
                **_agreement(pairs),
                "auc": m.auc([p for p, _ in self.scored[name]], [y for _, y in self.scored[name]]),
            }
            for name, pairs in (("relevant", self.rel_pairs), ("complete", self.comp_pairs))
        }

    def ppi(self, run: RunLog) -> dict[str, Any]:
        """Label-corrected estimates over the whole run: the judge's values on every
        question, corrected by the judge-vs-human difference on the labelled ones."""
        out: dict[str, Any] = {}
        shared = sorted(self.judge_q)
        for name in ("hit_rate", "mrr"):
            key = f"{name}@{self.k}"
            all_j = [q.metrics[key] for q in run.questions if key in q.metrics]
            lab = [qid for qid in shared if key in self.judge_q[qid] and key in self.human_q[qid]]
            if len(lab) >= 2 and all_j:
                est, low, high = m.ppi_mean(
                    all_j,
                    [self.judge_q[q][key] for q in lab],
                    [self.human_q[q][key] for q in lab],
                    bounds=(0.0, 1.0),  # hit rate and MRR are rates
                )
                out[key] = {
                    "judge_only": float(np.mean(all_j)),
                    "ppi": est,
                    "ci95": [low, high],
                    "n_labelled": len(lab),
                }
        return out


def _as_qrels(qrels: Qrels | str | os.PathLike[str]) -> Qrels:
    """`qrels` itself, or the labels file it names read by `read_qrels`."""
    return read_qrels(qrels) if isinstance(qrels, (str, os.PathLike)) else qrels


def validate_run(
    run: RunLog | str | os.PathLike[str],
    qrels: Qrels | str | os.PathLike[str],
    *,
    k: int | None = None,
    unjudged: str = "auto",
    relevant_grade: int | None = None,
    complete_grade: int | None = None,
) -> dict[str, Any]:
    """Agreement of a run's verdicts with human labels, and the metrics both ways.

    A label counts as relevant from `relevant_grade` and as complete from
    `complete_grade` (default: `default_cuts`). Besides the yes/no agreement, the AUC
    of the judge's P(yes) against the labels says how well its probabilities rank the
    chunks, whatever cut a calibration would choose. A chunk the labels do not list
    counts as `unjudged_rule` says (by default left out where the labels name chunks,
    irrelevant where they name documents); the labels' metrics of a question need each
    of its top k labelled (or counted irrelevant), else they are left out. `run` is a run
    (`read_run`) or its folder's path, `qrels` labels (`read_qrels`) or their file's path."""
    run = as_run(run)
    qrels = _as_qrels(qrels)
    rel_cut, top = _cuts(qrels, relevant_grade, complete_grade)
    run_k = max(run.header.ks) if run.header.ks else 1
    if k is None:  # 0 is not "the default": it is refused below
        k = run_k
    if not 1 <= k <= run_k:
        raise HarnessError(f"--k: expected 1..{run_k} (the run's k), got {k}")
    seen = _Labelled(rel_cut, top, k, unjudged)
    labelled = 0
    # in question-id order: the log lists questions as they finished, and the bootstrap
    # of kappa's interval must not depend on which finished first
    for q in sorted(run.questions, key=lambda q: q.question.question_id):
        labels = qrels.get(q.question.question_id)
        if labels is not None:
            labelled += 1
            seen.add(q, labels)
    if not labelled:
        raise HarnessError(
            "no question of the run has labels in the qrels (do the question ids match?)"
        )
    ks = range(1, k + 1)
    shared = sorted(seen.judge_q)
    return {
        "run_dir": str(run.run_dir),
        "k": k,
        "questions_labelled": labelled,
        "questions_in_run": len(run.questions),
        "pairs_skipped": seen.skipped,
        "unjudged": unjudged,
        "unlabelled_skipped": seen.unlabelled["skip"],
        "unlabelled_irrelevant": seen.unlabelled["irrelevant"],
        "questions_with_label_metrics": sum(
            f"hit_rate@{k}" in metrics for metrics in seen.human_q.values()
        ),
        "binary_labels": max_grade(qrels) == 1,
        "relevant_grade": rel_cut,
        "complete_grade": top,
        "agreement": seen.agreement(),
        "metrics": {
            "judge": m.aggregate([seen.judge_q[q] for q in shared], ks),
            "human": m.aggregate([seen.human_q[q] for q in shared], ks),
        },
        "ppi": seen.ppi(run),
    }


def _sweep_metric(objective: Sequence[str]) -> str:
    """The metric name a sweep's first objective ranks on ("soft_mrr@k" -> "soft_mrr"),
    or soft_mrr (the default objective's) when it names no per-question quality metric."""
    from harness.analysis.compare import DEFAULT_CHANGE_METRIC

    if objective:
        try:
            name, _ = m.parse_metric_id(objective[0])
        except ValueError:
            return DEFAULT_CHANGE_METRIC
        if name in m.METRIC_NAMES and name != "context_chars":
            return name
    return DEFAULT_CHANGE_METRIC


def _tau_rows(
    sweep: Any,
    qrels: Qrels | Callable[[RunLog], Qrels],
    metric: str,
    unjudged: str,
    relevant_grade: int | None,
    complete_grade: int | None,
) -> list[dict[str, Any]]:
    """One row per complete trial with labelled questions: the judge's `metric` at the
    trial's k, the labels' (its hard twin for a soft metric: labels are certain, so the
    two are equal) and the judge's hard twin beside it."""
    hard = m.METRICS[metric].hard if metric in m.METRICS else None
    rows = []
    for t in sweep.trials:
        if t.state != "complete":
            continue
        run = read_run(t.run_dir)
        try:
            labels = qrels(run) if callable(qrels) else qrels
        except HarnessError:
            continue  # labels of chunks cut otherwise (`labels_file`)
        if not any(q.question.question_id in labels for q in run.questions):
            continue
        # a trial's k above its corpus's chunks was lowered to their number in the run
        k = min(int(t.params["k"]), max(run.header.ks, default=1))
        v = validate_run(
            run,
            labels,
            k=k,
            unjudged=unjudged,
            relevant_grade=relevant_grade,
            complete_grade=complete_grade,
        )
        key = f"{metric}@{k}"
        judge, human = v["metrics"]["judge"], v["metrics"]["human"]
        j = judge.get(key)
        h = human.get(f"{hard}@{k}" if hard else key)
        if j is not None and h is not None:
            rows.append(
                {
                    "number": t.number,
                    "params": t.params,
                    "judge": j,
                    "human": h,
                    "judge_hard": judge.get(f"{hard}@{k}") if hard else None,
                    "kappa_relevant": v["agreement"]["relevant"].get("kappa"),
                }
            )
    return rows


def validate_sweep(
    sweep_dir: str | os.PathLike[str],
    qrels: Qrels | Callable[[RunLog], Qrels] | str | os.PathLike[str],
    *,
    metric: str | None = None,
    unjudged: str = "auto",
    relevant_grade: int | None = None,
    complete_grade: int | None = None,
) -> dict[str, Any]:
    """Kendall tau between the judge's and the labels' ranking of a sweep's complete trials
    (each at its own k), and the top configurations of each side. The labels' cut-offs
    are `validate_run`'s. `qrels` (labels, or their file's path) may be a function of a
    trial's run (labels from its source spans, `sources.source_qrels`): chunk ids are
    `doc#start`, so a 400-character chunk and an 800-character one that start at 0 share
    an id, and one set of chunk-level labels for every trial would give the shorter the
    longer one's label.

    `metric` (a name, or a metric id such as "soft_mrr@k") defaults to the sweep's
    objective, the statistic its decisions rest on (soft_mrr by default). A soft metric
    is compared with the labels' hard one (labels are certain, so the two are equal),
    and each row carries the judge's hard twin too (`judge_hard`, `hard` names it); when
    the defaulted soft metric is missing (a judge without probabilities) the hard twin
    is ranked instead, and `note` says so."""
    if isinstance(qrels, (str, os.PathLike)):
        qrels = read_qrels(qrels)
    sweep = read_sweep(sweep_dir)
    defaulted = metric is None
    if metric is None:
        metric = _sweep_metric(sweep.summary.objective)
    elif "@" in metric:
        try:
            metric, _ = m.parse_metric_id(metric)
        except ValueError:
            raise HarnessError(f"--metric: expected a metric name or id, got {metric!r}") from None
    if metric not in m.METRIC_NAMES:
        raise HarnessError(f"--metric: expected one of {list(m.METRIC_NAMES)}, got {metric!r}")
    rows = _tau_rows(sweep, qrels, metric, unjudged, relevant_grade, complete_grade)
    note = None
    hard = m.METRICS[metric].hard
    if defaulted and len(rows) < 2 and hard is not None:
        note = f"the trials have no {metric} (a judge without probabilities): ranked by {hard}"
        metric, hard = hard, None
        rows = _tau_rows(sweep, qrels, metric, unjudged, relevant_grade, complete_grade)
    if len(rows) < 2:
        raise HarnessError("a sweep needs two or more complete trials with labelled questions")
    tau = m.kendall_tau([r["judge"] for r in rows], [r["human"] for r in rows])
    by_judge = sorted(rows, key=lambda r: -r["judge"])
    by_human = sorted(rows, key=lambda r: -r["human"])
    out = {
        "sweep_dir": str(sweep_dir),
        "metric": metric,
        "hard": hard,
        "trials": len(rows),
        "kendall_tau": tau,
        "top_by_judge": by_judge[:5],
        "top_by_human": by_human[:5],
        "rows": rows,
    }
    if hard is not None:
        hard_rows = [r for r in rows if r["judge_hard"] is not None]
        out["kendall_tau_hard"] = (
            m.kendall_tau([r["judge_hard"] for r in hard_rows], [r["human"] for r in hard_rows])
            if len(hard_rows) >= 2
            else None
        )
    if note:
        out["note"] = note
    return out
