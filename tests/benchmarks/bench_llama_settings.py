"""Benchmark: the local judge's prompt layout and llama-server flags, on this machine's cores.

    .venv/bin/python tests/benchmarks/bench_llama_settings.py [--questions 12] [--k 4]
        [--trec-queries 22] [--per-query 2] [--repeats 3] [--settings 'LABEL;LABEL']

The packaged Qwen2.5-Coder-1.5B judges the same pairs under each setting (prompt layout,
slot pinning, slots, batch sizes, --cache-reuse, flash attention, KV cache type, mode),
each on a new server, with no verdict cache, `--repeats` times round the settings
(medians; this machine's speed moves by a quarter from one run to the next):

- quick-start pairs (`--questions` x k = `--k`, the handbook's chunks of 800 characters):
  prompt tokens the server *computed* per verdict (its /metrics counter, so cached
  prefixes do not count) beside the tokens of question + chunk, the computed tokens per
  second, and seconds per verdict;
- labelled pairs of the TREC DL 2019 development half (../shared/data, `--per-query`
  judged passages of each query: a relevant one and one of another grade, seeded):
  Cohen's kappa of each criterion with the labels (relevant = grade >= 1, complete =
  grade >= 2), for the rows whose prompt or numerics differ from the first (the others
  are compared with the first row's verdicts), so a faster setting that loses agreement
  shows it (on ~40 pairs a kappa moves by about 0.2 by chance alone).

A verdict is one (question, chunk) pair graded on both criteria ("complete" only if
relevant). "before" lets the server choose a slot for each request, as harness did
before #23; every row judges a chunk's pairs back to back. Prints one table; `make
bench-judge` runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # harness, run as a script

from bench_judge import agreement, sample_pairs
from common import ROOT, print_table, quiet

from harness.analysis import read_qrels
from harness.config import CriteriaConfig
from harness.judge import ChatJudge, JudgeStats, grading, judge_pairs
from harness.judge import chat as chat_module
from harness.judge.prompts import ANSWER_REASON, ANSWER_SHORT, SYSTEM_PROMPT, fence
from harness.llm.local import LlamaServer, resolve_model
from harness.metrics import cohen_kappa
from harness.pipeline import default_cache_dir

TREC = ROOT.parent / "shared" / "data" / "trec-dl-2019-dev"


def messages_question_first(
    question: str,
    chunk_text: str,
    criterion_text: str,
    *,
    reasons: bool,
    variant: str = "main",
) -> list[dict[str, str]]:
    """Prompt v2, the layout before: the question before the criterion for both criteria,
    so a pair's two criteria share the passage and the question, judged a pair at a time."""
    user = (
        f"<passage>\n{fence(chunk_text)}\n</passage>\n\nQuestion:\n{question}\n\n"
        f"Criterion: {criterion_text}\n"
        f"Does the passage meet the criterion for this question? "
        f"{ANSWER_REASON if reasons else ANSWER_SHORT}"
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


@dataclass(frozen=True)
class Setting:
    """One row: a server configuration and how the judge talks to it."""

    label: str
    slots: int = 4
    flags: tuple[str, ...] = ()
    pin: bool = True  # each worker's requests to a slot of its own (False: the server picks)
    layout: str = "prompts"  # or "question-first": `messages_question_first`
    mode: str = "pointwise"
    labels: bool = False  # also judge the labelled pairs (prompt or numerics differ)
    threads: int = field(default_factory=lambda: os.cpu_count() or 1)


SETTINGS = [
    Setting("default: 1 slot", slots=1, labels=True),
    Setting("before: 4 slots, the server picks", pin=False, labels=True),
    Setting("4 slots, a slot per worker"),
    Setting("2 slots, a slot per worker", slots=2),
    Setting("prompt v2: question first, a pair at a time", layout="question-first", labels=True),
    Setting("--cache-reuse 64", slots=1, flags=("--cache-reuse", "64")),
    Setting("batch 512 / ubatch 128", slots=1, flags=("-b", "512", "-ub", "128")),
    Setting(
        "flash attention on, KV q8_0",
        slots=1,
        flags=("-fa", "on", "-ctk", "q8_0", "-ctv", "q8_0"),
        labels=True,
    ),
    Setting("mode both: one call a pair", slots=1, mode="both", labels=True),
]


def trec_pairs(n_queries: int, per_query: int, seed: int = 0) -> list[tuple[str, str, int]]:
    """(query, passage, NIST grade): per query one passage graded >= 2 when there is one,
    then passages of other grades, seeded."""
    queries = [json.loads(x) for x in (TREC / "queries.jsonl").read_text().splitlines() if x]
    docs = {}
    for line in (TREC / "corpus.jsonl").read_text().splitlines():
        if line:
            d = json.loads(line)
            docs[d["id"]] = d["text"]
    qrels = read_qrels(TREC / "qrels.tsv")
    rng = random.Random(seed)
    out = []
    for q in queries[:n_queries]:
        graded = sorted((d, g) for d, g in qrels.get(q["id"], {}).items() if d in docs)
        rng.shuffle(graded)
        chosen: list[tuple[str, int]] = []
        for want in (lambda g: g >= 2, lambda g: g < 2, lambda g: True):
            for d, g in graded:
                if len(chosen) < per_query and want(g) and (d, g) not in chosen:
                    chosen.append((d, g))
                    break
        out += [(q["text"], docs[d], g) for d, g in chosen]
    return out


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        return json.load(reply)


def computed_prompt_tokens(server: LlamaServer) -> int:
    """The prompt tokens the server has evaluated so far (cached prefixes not counted)."""
    root = server.base_url.removesuffix("/v1")
    with urllib.request.urlopen(f"{root}/metrics", timeout=10) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith("llamacpp:prompt_tokens_total"):
                return int(float(line.split()[1]))
    raise RuntimeError("llama-server /metrics has no llamacpp:prompt_tokens_total")


def count_tokens(server: LlamaServer, texts: Sequence[str]) -> int:
    """Tokens of the texts in the model's vocabulary (the server's /tokenize)."""
    root = server.base_url.removesuffix("/v1")
    return sum(len(_post(f"{root}/tokenize", {"content": t})["tokens"]) for t in texts)


@contextmanager
def layout(name: str) -> Iterator[None]:
    """The judge's prompt builder and call order for the setting's layout, restored after."""
    original, init = chat_module.build_messages, grading._Grader.__init__
    if name == "question-first":

        def pair_at_a_time(self, *args, **kwargs) -> None:
            init(self, *args, **kwargs)
            self.by_criterion = False

        chat_module.build_messages = messages_question_first
        grading._Grader.__init__ = pair_at_a_time
    try:
        yield
    finally:
        chat_module.build_messages, grading._Grader.__init__ = original, init


def judge_once(server: LlamaServer, s: Setting, pairs: list[tuple[str, str]]) -> tuple:
    """(verdicts, seconds, computed prompt tokens) of one judging of `pairs`."""
    judge = ChatJudge(
        base_url=server.base_url, model="qwen", api_key="", grammar=True, mode=s.mode,
        prompt_cache=True, slots=s.slots if s.pin else 0,
        concurrency=s.slots,
    )  # fmt: skip
    before = computed_prompt_tokens(server)
    t0 = time.perf_counter()
    with layout(s.layout):
        verdicts = judge_pairs(
            pairs, judge, criteria=CriteriaConfig(), cache=None, stats=JudgeStats(),
            concurrency=s.slots,
        )  # fmt: skip
    return verdicts, time.perf_counter() - t0, computed_prompt_tokens(server) - before


def kappas(verdicts: list, grades: list[int]) -> str:
    """Cohen's kappa of relevant / complete against the labels."""
    rel = cohen_kappa([v.relevant.value is True for v in verdicts], [g >= 1 for g in grades])
    com = cohen_kappa([v.grade == 2 for v in verdicts], [g >= 2 for g in grades])
    return "/".join("-" if k is None else f"{k:.2f}" for k in (rel, com))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--trec-queries", type=int, default=22)
    parser.add_argument("--per-query", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each setting (median)")
    parser.add_argument(
        "--settings", default="", help="run the rows whose label starts with one of these (';')"
    )
    args = parser.parse_args()
    quiet()
    quick = sample_pairs(args.questions, args.k)
    trec = trec_pairs(args.trec_queries, args.per_query) if TREC.is_dir() else []
    model, _ = resolve_model("qwen2.5-coder-1.5b", default_cache_dir())
    wanted = [w.strip() for w in args.settings.split(";") if w.strip()]
    chosen = [s for s in SETTINGS if not wanted or any(s.label.startswith(w) for w in wanted)]
    own_tokens = 0
    runs: dict[str, list[tuple[float, int]]] = {s.label: [] for s in chosen}
    first: dict[str, tuple[list, list]] = {}
    # repetitions go round the settings (A B A B ...), so a slow spell of a shared machine
    # falls on all of them; each on a new server, so no prompt is cached from before
    for rep in range(args.repeats):
        for s in chosen:
            try:
                with LlamaServer(
                    model, alias="qwen", parallel=s.slots, threads=s.threads,
                    extra_args=("--metrics", *s.flags),
                ) as server:  # fmt: skip
                    if not own_tokens:
                        own_tokens = count_tokens(server, [t for pair in quick for t in pair])
                    verdicts, seconds, computed = judge_once(server, s, quick)
                    labelled = (
                        judge_once(server, s, [(q, p) for q, p, _ in trec])[0]
                        if trec and s.labels and rep == 0
                        else []
                    )
            except Exception as exc:  # one setting's failure must not lose the others
                print(f"{s.label}: failed: {exc}", file=sys.stderr, flush=True)
                continue
            runs[s.label].append((seconds, computed))
            first.setdefault(s.label, (verdicts, labelled))
            print(f"{s.label}  {seconds:.0f} s  {computed} tokens", file=sys.stderr, flush=True)
    rows = []
    n = len(quick)
    base = next(iter(first.values()))[0] if first else []
    for s in chosen:
        if not runs[s.label]:
            rows.append((s.label, "failed", *"------"))
            continue
        seconds = statistics.median(r[0] for r in runs[s.label])
        computed = statistics.median(r[1] for r in runs[s.label])
        verdicts, labelled = first[s.label]
        rows.append(
            (
                s.label,
                f"{computed / n:.0f}",
                f"{own_tokens / n:.0f}",
                f"{computed / own_tokens:.2f}",
                f"{computed / seconds:.0f}",
                f"{seconds / n:.2f}",
                f"{seconds / statistics.median(r[0] for r in runs[chosen[0].label]):.2f}",
                agreement(verdicts, base),
                kappas(labelled, [g for *_, g in trec]) if labelled else "-",
            )
        )
    print_table(
        f"Local judge settings: {len(quick)} quick-start pairs ({args.questions} questions x "
        f"k={args.k}), medians of {args.repeats}, for speed and agreement with the first row, {len(trec)} labelled TREC "
        f"DL dev pairs for kappa (rows whose prompt or numerics differ); {os.cpu_count()} "
        "cores, no verdict cache",
        (
            "setting",
            "computed tok/verdict",
            "question+chunk tok",
            "ratio",
            "computed tok/s",
            "s/verdict",
            "time vs first",
            "agree rel/grade",
            "kappa rel/complete",
        ),
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
