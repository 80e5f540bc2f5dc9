"""The command line as a user meets it: bad input, and the real judge path end to end.

These run `python -m harness` in a subprocess, so exit codes and stderr are the real ones.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import DATA

ROOT = Path(__file__).resolve().parents[2]


def harness(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 600
):
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env=full_env,
        timeout=timeout,
    )


def assert_user_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    error_lines = [line for line in proc.stderr.splitlines() if line.startswith("harness: error:")]
    assert len(error_lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in error_lines[0], error_lines[0]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A copy of the tiny experiment that tests may break."""
    shutil.copytree(DATA, tmp_path / "data")
    return tmp_path / "data"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize(
    ("setup", "fragments"),
    [
        (
            lambda d: _edit(d / "experiment.toml", 'sources = ["corpus"]', 'sources = ["nowhere"]'),
            ["corpus.sources", "does not exist"],
        ),
        (
            lambda d: shutil.rmtree(d / "corpus") or (d / "corpus").mkdir(),
            ["corpus.sources", "holds no"],
        ),
        (lambda d: (d / "questions.jsonl").write_text("\n"), ["questions.jsonl", "no questions"]),
        (
            lambda d: _edit(d / "experiment.toml", "k = 3", "k = 3\ntop_n = 2"),
            ["experiment.toml", "retrieval.top_n", "unknown key"],
        ),
        (
            lambda d: _edit(d / "experiment.toml", "chunk_overlap = 20", "chunk_overlap = 200"),
            ["chunking.chunk_overlap", "chunk_overlap < chunk_size"],
        ),
        (lambda d: _edit(d / "experiment.toml", "k = 3", "k = 0"), ["retrieval.k", "k >= 1"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(workdir, tmp_path, setup, fragments):
    setup(workdir)
    proc = harness(
        "run",
        str(workdir / "experiment.toml"),
        "--results-dir",
        str(tmp_path / "r"),
        "--cache-dir",
        str(tmp_path / "c"),
    )
    assert_user_error(proc, *fragments)


def test_bad_set_override(tmp_path):
    proc = harness("run", str(DATA / "experiment.toml"), "--set", "chunking.chunk_size=abc")
    assert_user_error(proc, "chunking.chunk_size", "expected an integer")


def test_model_file_with_wrong_hash_is_refused(tmp_path):
    cache = tmp_path / "c"
    (cache / "models").mkdir(parents=True)
    (cache / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf").write_bytes(b"not the model")
    proc = harness(
        "run",
        str(DATA / "experiment.toml"),
        "--set",
        "judge.local_model=qwen2.5-coder-1.5b",
        "--results-dir",
        str(tmp_path / "r"),
        "--cache-dir",
        str(cache),
    )
    assert_user_error(proc, "sha256", "cc324af070c2")


def test_unreachable_judge_endpoint(tmp_path):
    proc = harness(
        "run",
        str(DATA / "experiment.toml"),
        "--set",
        "judge.base_url=http://127.0.0.1:9/v1",
        "--set",
        "judge.model=some-model",
        "--set",
        "judge.max_retries=0",
        "--results-dir",
        str(tmp_path / "r"),
        "--cache-dir",
        str(tmp_path / "c"),
        env={"OPENAI_API_KEY": "sk-secretsecretsecret"},
    )
    assert_user_error(proc, "http://127.0.0.1:9/v1", "unreachable")
    assert "sk-secret" not in proc.stderr + proc.stdout
    (run_dir,) = (tmp_path / "r").iterdir()
    header = json.loads((run_dir / "header.json").read_text())
    assert header["status"] == "failed" and "unreachable" in header["error"]
    assert "sk-secret" not in (run_dir / "header.json").read_text()


class _Failing(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error": {"message": "boom"}}')

    def log_message(self, *args):
        pass


def test_failing_judge_endpoint_stops_the_run(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        proc = harness(
            "run",
            str(DATA / "experiment.toml"),
            "--set",
            f"judge.base_url={url}",
            "--set",
            "judge.model=m",
            "--set",
            "judge.max_retries=0",
            "--results-dir",
            str(tmp_path / "r"),
            "--cache-dir",
            str(tmp_path / "c"),
        )
    finally:
        server.shutdown()
        server.server_close()
    assert_user_error(proc, url, "failed", "in a row")


@pytest.mark.llama
def test_real_local_judge_run_show_and_rerun(tmp_path):
    """The real path: harness starts llama.cpp on 127.0.0.1 with a packaged model itself."""
    results, cache = tmp_path / "r", tmp_path / "c"
    proc = harness(
        "run",
        str(DATA / "experiment.toml"),
        "--format",
        "json",
        "--results-dir",
        str(results),
        "--cache-dir",
        str(cache),
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "done"
    assert out["stats"]["judge_calls"] > 0 and out["stats"]["judge_cache_hits"] == 0
    assert out["metrics"]["context_chars@3"] > 0
    n_ok = 6 - out["metrics"]["errors@3"]
    assert ("mrr@3" in out["metrics"]) == (n_ok > 0)
    assert out["components"]["judge"]["args"]["engine"] == "llama-server"
    assert out["components"]["judge"]["args"]["model_sha256"].startswith("b179c952")
    run_dir = Path(out["run_dir"])
    assert (run_dir / "llama-server.log").is_file()
    lines = (run_dir / "questions.jsonl").read_text().splitlines()
    assert len(lines) == 6
    for line in lines:
        for hit in json.loads(line)["hits"]:
            rel = hit["verdict"]["relevant"]
            # every verdict is either a parsed yes/no or an error with the raw output kept
            assert (rel["value"] in (True, False)) != (rel["error"] is not None)

    again = harness(
        "run",
        str(DATA / "experiment.toml"),
        "--format",
        "json",
        "--results-dir",
        str(results),
        "--cache-dir",
        str(cache),
    )
    assert again.returncode == 0, again.stderr
    second = json.loads(again.stdout)
    # Only verdicts that failed the first time are paid for again (each may be re-asked once).
    assert second["stats"]["judge_calls"] <= 2 * out["stats"]["judge_errors"]
    assert second["stats"]["judge_cache_hits"] > 0
    # the local server starts for the verdicts the rerun asks again, and only then
    started = "starting local judge" in again.stderr
    assert started == (second["stats"]["judge_calls"] > 0), again.stderr
    assert (Path(second["run_dir"]) / "llama-server.log").is_file() == started

    show = harness("show", str(run_dir))
    assert show.returncode == 0, show.stderr
    assert "[hive] When is the hive inspection?" in show.stdout
    assert "relevant=" in show.stdout and "#1" in show.stdout
    one = harness(
        "show",
        run_dir.name,
        "--results-dir",
        str(results),
        "--question",
        "swap",
        "--format",
        "json",
    )
    assert one.returncode == 0, one.stderr
    data = json.loads(one.stdout)
    assert [q["question"]["question_id"] for q in data["questions"]] == ["swap"]
    assert harness("show", str(run_dir), "--failures").returncode == 0
    missing = harness("show", str(run_dir), "--question", "nope")
    assert_user_error(missing, "nope")


@pytest.mark.llama
def test_real_local_judge_sweep_and_resume(tmp_path):
    """harness sweep through the CLI: one local server for every trial, then --resume."""
    results, cache = tmp_path / "r", tmp_path / "c"
    proc = harness(
        "sweep",
        str(DATA / "sweep.toml"),
        "--trials",
        "2",
        "--format",
        "json",
        "--results-dir",
        str(results),
        "--cache-dir",
        str(cache),
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "done"
    assert out["counts"]["complete"] + out["counts"]["pruned"] + out["counts"]["failed"] >= 2
    assert out["stats"]["judge_calls"] > 0
    sweep_dir = Path(out["sweep_dir"])
    assert (sweep_dir / "llama-server.log").is_file()  # one server for the sweep
    assert not list(sweep_dir.glob("trials/*/llama-server.log"))
    # Asking for more trials on the same sweep continues it.
    more = harness(
        "sweep",
        "--resume",
        str(sweep_dir),
        "--trials",
        "3",
        "--format",
        "json",
        "--cache-dir",
        str(cache),
    )
    assert more.returncode == 0, more.stderr
    again = json.loads(more.stdout)
    assert sum(again["counts"].values()) >= 3
    listing = harness("list", str(results))
    assert listing.returncode == 0 and sweep_dir.name in listing.stdout


@pytest.mark.llama
def test_real_llm_reranker_is_flagged_as_the_judges_own_model(tmp_path):
    results, cache = tmp_path / "r", tmp_path / "c"
    proc = harness(
        "run",
        str(DATA / "experiment.toml"),
        "--set",
        "retrieval.reranker=llm",
        "--set",
        "retrieval.fetch_k=5",
        "--format",
        "json",
        "--results-dir",
        str(results),
        "--cache-dir",
        str(cache),
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    rr = out["components"]["reranker"]
    assert rr["name"] == "llm" and rr["args"]["same_model_as_judge"] is True
    assert out["stats"]["rerank_llm_calls"] > 0
    # the judge's relevance answers for the top k were already paid by the reranker
    assert out["stats"]["judge_cache_hits"] > 0
    show = harness("show", out["run_dir"])
    assert "warning: the llm reranker used the judge's own model" in show.stdout


def test_judge_batch_on_a_run_says_it_judges_online(tmp_path):
    proc = harness(
        "run", str(DATA / "experiment.toml"), "--dry-run", "--set", "judge.batch=true",
        "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "judge.batch applies to sweeps (harness sweep); this run judges online" in proc.stderr
