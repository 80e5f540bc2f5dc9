"""The --trec mode of tests/benchmarks/bench_generate.py runs end to end (#24): against a
scripted model on a loopback endpoint and a small collection in the BEIR layout written
here (the real TREC DL data is never read by tests). Its figures mean nothing; the test
proves the wiring: generation for each seed and style, the 12-configuration grid, tau,
regret, the lexical table and the drop counts."""

from __future__ import annotations

import importlib.util
import json
import math
import random
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_generate.py"

TOPICS = {
    "coffee": "espresso beans roast grind brew crema barista arabica",
    "tides": "moon gravity ocean tide coast sea level lunar",
    "volcano": "lava magma eruption crater ash basalt mountain",
    "tax": "income deduction refund return filing bracket audit",
}


def _bench():
    spec = importlib.util.spec_from_file_location("bench_generate", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_generate"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def write_collection(root: Path) -> Path:
    folder = root / "trec-dl-2019-dev"
    folder.mkdir(parents=True)
    rng = random.Random(0)
    corpus, qrels, queries = [], ["query_id\tdoc_id\trelevance"], []
    for t, (topic, words) in enumerate(TOPICS.items()):
        vocab = words.split()
        queries.append({"id": f"q{t}", "text": f"how does {vocab[0]} {vocab[1]} work"})
        for i in range(6):
            pid = f"{t}{i:02d}"
            text = (
                f"{topic.title()} note {i}. " + " ".join(rng.choice(vocab) for _ in range(40)) + "."
            )
            corpus.append({"id": pid, "title": "", "text": text})
            qrels.append(f"q{t}\t{pid}\t{3 if i < 2 else 0}")
    (folder / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels.tsv").write_text("\n".join(qrels) + "\n")
    return root


def test_trec_mode_runs_end_to_end_on_a_fake_endpoint(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "user-cache"))
    bench = _bench()
    data = write_collection(tmp_path / "data")
    kept = tmp_path / "kept"
    rows = bench.run_trec(data, [0, 1], ["question", "query"], 4, fake=True, keep=kept)
    assert [(r.seed, r.style) for r in rows] == [
        (0, "question"), (0, "query"), (1, "question"), (1, "query"),
    ]  # fmt: skip
    for r in rows:
        assert r.kept > 0
        assert -1.0 <= r.tau <= 1.0 and not math.isnan(r.tau)
        assert -1.0 <= r.self_tau <= 1.0  # the generated questions against themselves
        assert r.regret >= 0.0
        assert r.pick.split("/")[0] in bench.RERANKERS
        assert 0.0 <= r.lex["gen_overlap"] <= 1.0 and 0.0 <= r.lex["real_overlap"] <= 1.0
        assert r.lex["gen_bm25_rank"] >= 1 and r.lex["real_bm25_rank"] >= 1
        assert set(r.drops) >= {"overlap", "closed_book", "standalone", "answered"}
    # the question style is the one before #24: no overlap or closed-book filter
    assert all(r.drops["overlap"] == 0 for r in rows if r.style == "question")
    grades = bench.read_qrels_grades(data / "trec-dl-2019-dev" / "qrels.tsv")
    stability = bench.labels_stability(rows[0].grid["real"], grades, draws=50)
    assert set(stability) == {"split", "bootstrap", "one_positive"}
    for v in stability.values():
        assert -1.0 <= v["tau_p10"] <= v["tau"] <= v["tau_p90"] <= 1.0
    assert 0.0 <= stability["one_positive"]["regret_zero"] <= 1.0
    assert 0.0 <= stability["split"]["same_winner"] <= 1.0
    bench.print_trec(rows, stability)
    out = capsys.readouterr().out
    assert "the ceiling" in out and "one relevant passage each" in out
    assert "tau" in out and "regret" in out and "gen overlap" in out and "dropped by filter" in out
    # every configuration's scores, labels beside each row's source_mrr@k
    assert "per configuration" in out
    for r in rows:
        assert len(r.grid["names"]) == len(r.grid["source"]) == len(r.grid["labels"]) == 12
        assert f"{r.grid['source'][0]:.3f}" in out
    assert [line.split()[0] for line in _config_lines(out)] == rows[0].grid["names"]
    # --keep: each row's generated questions, as written, and its report
    assert sorted(p.name for p in kept.iterdir()) == [
        "query-0.jsonl", "query-0.report.json", "query-1.jsonl", "query-1.report.json",
        "question-0.jsonl", "question-0.report.json", "question-1.jsonl",
        "question-1.report.json",
    ]  # fmt: skip
    assert "dropped" in json.loads((kept / "query-0.report.json").read_text())
    assert all(
        json.loads(line)["text"] for line in (kept / "query-0.jsonl").read_text().splitlines()
    )


def _config_lines(out: str) -> list[str]:
    """The rows of the per-configuration table."""
    return out.split("per configuration", 1)[1].splitlines()[2:14]


def test_labels_stability_by_hand():
    """Two configurations, two queries with two relevant passages each. Configuration a
    finds each query's first relevant passage at rank 1, b at rank 2: every split, every
    resample and every single positive ranks a first."""
    bench = _bench()
    grades = {"q1": {"p1": 3, "p2": 2, "x": 0}, "q2": {"p3": 2, "p4": 3, "y": 1}}
    real = [
        [("q1", ["p1", "p2"]), ("q2", ["p3", "p4"])],  # a
        [("q1", ["x", "p1"]), ("q2", ["y", "p3"])],  # b
    ]
    st = bench.labels_stability(real, grades, draws=40)
    assert st["split"]["tau"] == st["bootstrap"]["tau"] == 1.0
    assert st["split"]["same_winner"] == 1.0
    # one positive per query: p2 or p4 alone scores a 1/2 and b 0, p1 or p3 a 1 and b 1/2
    assert st["one_positive"]["tau"] == 1.0 and st["one_positive"]["regret"] == 0.0


def test_ceiling_mode_prints_the_ceiling_without_a_model(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "user-cache"))
    bench = _bench()
    data = write_collection(tmp_path / "data")
    monkeypatch.setattr(sys, "argv", ["bench_generate.py", "--ceiling", "--data", str(data)])
    assert bench.main() == 0
    out = capsys.readouterr().out
    assert "the ceiling" in out and "half of the real queries" in out
    assert "tuning on generated questions" not in out  # nothing generated
