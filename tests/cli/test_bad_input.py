"""Bad input and an unlucky environment through the real command line: each case ends in
one line naming the file and the field (exit 2), never a traceback; or, where a setting is
merely too large, in a warning and a sane run.

Most tests run `python -m harness` in a subprocess (helpers from test_cli.py); those about
what the pipeline does with a capped k run in process with the scripted judge.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.testing import FakeOpenAI
from tests.cli.test_cli import ROOT, _edit, assert_user_error, harness
from tests.conftest import DATA
from tests.corpus.test_inputs import never_answering_server

V1 = DATA / "logs" / "v1"


def run_cmd(exp_dir: Path, tmp_path: Path, *extra: str, env: dict[str, str] | None = None):
    """`harness run` on the working copy of the tiny experiment."""
    return harness(
        "run",
        str(exp_dir / "experiment.toml"),
        "--results-dir",
        str(tmp_path / "r"),
        "--cache-dir",
        str(tmp_path / "c"),
        *extra,
        env={"XDG_CONFIG_HOME": str(tmp_path / "config"), **(env or {})},
    )


def fake_embedder(server: FakeOpenAI) -> list[str]:
    """Overrides that embed with the fake server's vectors: no model to load, so fast."""
    return [
        "embedder.name=openai",
        f"embedder.base_url={server.base_url}",
        "embedder.api_key_env=HARNESS_TEST_EMBED_KEY",
    ]


def run_folders(tmp_path: Path) -> list[Path]:
    results = tmp_path / "r"
    return sorted(results.iterdir()) if results.is_dir() else []


@pytest.fixture
def exp_dir(tmp_path: Path) -> Path:
    """A copy of the tiny experiment that tests may break."""
    return Path(shutil.copytree(DATA, tmp_path / "data"))


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    """A copy of a finished run folder (k = 3) that tests may break."""
    return Path(shutil.copytree(V1 / "run", tmp_path / "run"))


@pytest.fixture
def old_sweep(tmp_path: Path) -> Path:
    """A copy of a finished sweep folder that tests may break."""
    return Path(shutil.copytree(V1 / "sweep", tmp_path / "sweep"))


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """`folder` made unwritable for this process: mode 0555, or (as root, whom modes do
    not stop) the immutable attribute. Skips the test when neither can be had."""
    folder.mkdir(parents=True, exist_ok=True)
    root = os.geteuid() == 0
    if root:
        if shutil.which("chattr") is None:
            pytest.skip("running as root without chattr: cannot make a folder read-only")
        proc = subprocess.run(["chattr", "+i", str(folder)], capture_output=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot make a folder read-only as root: {proc.stderr!r}")
    else:
        folder.chmod(0o555)
    try:
        yield
    finally:
        if root:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        else:
            folder.chmod(0o755)


# ---------------------------------------------------------------- item 13: one line


def test_non_utf8_experiment_file(tmp_path):
    exp = tmp_path / "e.toml"
    exp.write_bytes(b'name = "caf\xe9"\n')
    proc = harness("run", str(exp), "--results-dir", str(tmp_path / "r"))
    assert_user_error(proc, str(exp), "expected a UTF-8 text file")


def test_non_utf8_questions_file_leaves_no_run_folder(exp_dir, tmp_path):
    (exp_dir / "questions.jsonl").write_bytes(
        '{"id": "q", "text": "caf\u00e9?"}\n'.encode("cp1252")
    )
    proc = run_cmd(exp_dir, tmp_path)
    assert_user_error(proc, "questions.jsonl", "questions.file", "UTF-8")
    assert run_folders(tmp_path) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [("nan", "finite"), ("inf", "finite"), ("-1", "> 0"), ("-inf", "finite")],
)
def test_judge_timeout_nan_inf_negative(exp_dir, tmp_path, value, expected):
    proc = run_cmd(exp_dir, tmp_path, "--dry-run", "--set", f"judge.timeout_s={value}")
    assert_user_error(proc, "experiment.toml", "judge.timeout_s", expected)


def test_a_url_that_never_answers_stops_the_run_naming_the_url(exp_dir, tmp_path):
    with never_answering_server() as url:
        _edit(exp_dir / "experiment.toml", 'sources = ["corpus"]', f'sources = ["{url}"]')
        proc = run_cmd(exp_dir, tmp_path, "--set", "corpus.timeout_s=0.5")
    assert_user_error(proc, url, "corpus.timeout_s", "no answer within 0.5 s")
    assert run_folders(tmp_path) == []  # no run folder left saying "running" forever


def test_corpus_timeout_nan(exp_dir, tmp_path):
    proc = run_cmd(exp_dir, tmp_path, "--dry-run", "--set", "corpus.timeout_s=nan")
    assert_user_error(proc, "experiment.toml", "corpus.timeout_s", "finite")


def test_non_utf8_qrels(old_run, tmp_path):
    qrels = tmp_path / "qrels.tsv"
    qrels.write_bytes("hive\tbees.md\t2\nh\u00e9\tx\t1\n".encode("latin-1"))
    proc = harness("validate", str(old_run), "--qrels", str(qrels))
    assert_user_error(proc, str(qrels), "qrels", "UTF-8")


def test_binary_qrels(old_run, tmp_path):
    qrels = tmp_path / "qrels.tsv"
    qrels.write_bytes(bytes(range(256)) * 8)
    proc = harness("validate", str(old_run), "--qrels", str(qrels))
    assert_user_error(proc, str(qrels), "qrels", "NUL bytes")


def test_export_onto_an_existing_file(old_run, tmp_path):
    out = tmp_path / "taken.txt"
    out.write_text("keep me\n")
    proc = harness("export", str(old_run), "--out", str(out))
    assert_user_error(proc, str(out), "--out", "not a file")
    assert out.read_text() == "keep me\n"


def test_read_only_results_folder(exp_dir, tmp_path):
    results = tmp_path / "r"
    with read_only(results):
        proc = run_cmd(exp_dir, tmp_path)
    assert_user_error(proc, str(results))
    assert run_folders(tmp_path) == []


def test_read_only_cache_folder_fails_the_run(exp_dir, tmp_path):
    cache = tmp_path / "c"
    with read_only(cache):
        proc = run_cmd(exp_dir, tmp_path)
    assert_user_error(proc, str(cache))
    (run_dir,) = run_folders(tmp_path)
    header = json.loads((run_dir / "header.json").read_text())
    assert header["status"] == "failed" and str(cache) in header["error"]


def test_read_only_home_folder(exp_dir, tmp_path):
    home = tmp_path / "home"
    env = {"HOME": str(home), "HARNESS_CACHE_DIR": "", "XDG_CONFIG_HOME": "", "XDG_CACHE_HOME": ""}
    with read_only(home):
        proc = harness(
            "run",
            str(exp_dir / "experiment.toml"),
            "--results-dir",
            str(tmp_path / "r"),
            env=env,
        )
    assert_user_error(proc, str(home))


FULL_DISK = """
import sys
from harness.log import io

real_append = io.RunWriter.append_many

def append_on_a_full_disk(self, results):
    # questions.jsonl now lives on a disk with no space left: the kernel says ENOSPC
    self._questions.close()
    self._questions = open("/dev/full", "a", encoding="utf-8")
    real_append(self, results)

io.RunWriter.append_many = append_on_a_full_disk
from harness.cli.app import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_fails_the_run_in_one_line(exp_dir, tmp_path):
    with FakeOpenAI() as server:
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                FULL_DISK,
                "run",
                str(exp_dir / "experiment.toml"),
                "--set",
                f"judge.base_url={server.base_url}",
                "--set",
                "judge.model=fake",
                *(arg for o in fake_embedder(server) for arg in ("--set", o)),
                "--results-dir",
                str(tmp_path / "r"),
                "--cache-dir",
                str(tmp_path / "c"),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={
                **os.environ,
                "HF_HUB_OFFLINE": "1",
                "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
                "HARNESS_TEST_EMBED_KEY": "sk-test-not-a-key",
            },
            timeout=600,
        )
    assert_user_error(proc, "questions.jsonl", "No space left on device")
    (run_dir,) = run_folders(tmp_path)
    header = json.loads((run_dir / "header.json").read_text())
    assert header["status"] == "failed"
    assert "questions.jsonl" in header["error"] and "No space left" in header["error"]


def test_show_a_sweep_json_without_config(old_sweep):
    data = json.loads((old_sweep / "sweep.json").read_text())
    del data["config"]
    (old_sweep / "sweep.json").write_text(json.dumps(data))
    assert_user_error(harness("show", str(old_sweep)), "sweep.json", "config")


def test_show_a_sweep_json_that_is_not_an_object(old_sweep):
    (old_sweep / "sweep.json").write_text("[1, 2, 3]\n")
    assert_user_error(harness("show", str(old_sweep)), "sweep.json")


def test_show_trials_jsonl_of_the_wrong_shape(old_sweep):
    lines = (old_sweep / "trials.jsonl").read_text().splitlines()
    lines[0] = json.dumps({"number": "first", "state": 3})
    (old_sweep / "trials.jsonl").write_text("\n".join(lines) + "\n")
    assert_user_error(harness("show", str(old_sweep)), "trials.jsonl:1")


def test_show_a_questions_line_of_the_wrong_shape(old_run):
    lines = (old_run / "questions.jsonl").read_text().splitlines()
    lines[0] = json.dumps({"question": "hive", "hits": 7})
    (old_run / "questions.jsonl").write_text("\n".join(lines) + "\n")
    assert_user_error(harness("show", str(old_run)), "questions.jsonl:1")


def test_show_a_header_of_the_wrong_shape(old_run):
    header = json.loads((old_run / "header.json").read_text())
    header["ks"] = "three"
    (old_run / "header.json").write_text(json.dumps(header))
    assert_user_error(harness("show", str(old_run)), "header.json", "ks")


# ---------------------------------------------------------------- item 14: wrong answers


def test_an_objective_above_the_sweeps_k_is_refused_up_front(exp_dir, tmp_path):
    proc = harness(
        "sweep",
        str(exp_dir / "experiment.toml"),
        "--set",
        'sweep.objective=["mrr@9"]',
        "--set",
        "retrieval.k=4",
        "--results-dir",
        str(tmp_path / "r"),
        "--cache-dir",
        str(tmp_path / "c"),
    )
    assert_user_error(proc, "experiment.toml", "sweep.objective", "mrr@9", "only 4")
    assert run_folders(tmp_path) == []


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_sweep_over_a_space_of_one_setting_is_refused_up_front(exp_dir, tmp_path, dry_run):
    """No [sweep.space] (or one value per dimension) would run the same settings in every
    trial: one line naming the file and sweep.space, and no sweep folder."""
    args = ["--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c")]
    experiment = str(exp_dir / "experiment.toml")  # it has no [sweep] table
    proc = harness("sweep", experiment, *args, *(["--dry-run"] if dry_run else []))
    assert_user_error(
        proc,
        "experiment.toml",
        "sweep.space",
        "searches nothing",
        "chunk_size=200 chunk_overlap=20",
    )
    one_value = ["--set", "sweep.space.k=[3]", "--set", "sweep.space.reranker=['none']"]
    assert_user_error(harness("sweep", experiment, *one_value, *args), "searches nothing")
    assert run_folders(tmp_path) == []


def test_a_huge_k_in_a_dry_run_is_capped_with_a_warning(exp_dir, tmp_path):
    t0 = time.monotonic()
    # openai embedder without a cached index: the dry run uses k stand-in chunks a question
    proc = run_cmd(
        exp_dir,
        tmp_path,
        "--dry-run",
        "--format",
        "json",
        "--set",
        "retrieval.k=100000000",
        "--set",
        "embedder.name=openai",
    )
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - t0 < 60
    assert "retrieval.k = 100000000 but the corpus has" in proc.stderr
    est = json.loads(proc.stdout)
    n_chunks = int(proc.stderr.split("the corpus has ")[1].split()[0])
    assert est["pairs"] == est["questions"] * n_chunks


def test_a_huge_k_in_a_run_is_capped_at_the_chunks(tmp_path, scripted_judge, monkeypatch):
    from loguru import logger

    from harness.config import load_experiment
    from harness.pipeline import run_experiment

    monkeypatch.setenv("HARNESS_TEST_EMBED_KEY", "sk-test-not-a-key")
    messages: list[str] = []
    sink = logger.add(lambda m: messages.append(str(m)), level="WARNING")
    with FakeOpenAI() as server:
        config = load_experiment(
            DATA / "experiment.toml", ["retrieval.k=100000000", *fake_embedder(server)]
        )
        run = run_experiment(
            config,
            results_dir=tmp_path / "r",
            cache_dir=tmp_path / "c",
            judge=scripted_judge,
        )
    logger.remove(sink)
    n_chunks = run.header.data["n_chunks"]
    assert run.header.status == "done"
    assert run.header.ks == tuple(range(1, n_chunks + 1))
    assert run.header.config["retrieval"]["k"] == n_chunks
    assert all(len(q.hits) == n_chunks for q in run.questions)
    assert any("retrieval.k = 100000000" in m for m in messages)


@pytest.mark.parametrize("dry_run", [False, True])
def test_an_endpoint_without_a_model_is_refused_before_loading(exp_dir, tmp_path, dry_run):
    proc = run_cmd(
        exp_dir,
        tmp_path,
        *(["--dry-run"] if dry_run else []),
        "--set",
        "judge.base_url=http://127.0.0.1:9/v1",
        env={"HARNESS_JUDGE_MODEL": ""},
    )
    assert_user_error(proc, str(exp_dir / "experiment.toml"), "judge.model", "needs a model")
    assert "loaded" not in proc.stderr and "embedding" not in proc.stderr
    assert run_folders(tmp_path) == []


@pytest.mark.parametrize("uses", ["judge", "embedder"])
def test_a_key_with_its_newline_is_refused_naming_the_variable(exp_dir, tmp_path, uses):
    with FakeOpenAI(lambda n, prompt: None) as server:
        key = f"{uses}.api_key_env=HARNESS_TEST_NEWLINE_KEY"
        if uses == "judge":
            sets = [f"judge.base_url={server.base_url}", "judge.model=m", key]
        else:
            sets = [*fake_embedder(server)[:2], key]
        proc = run_cmd(
            exp_dir,
            tmp_path,
            *(a for kv in sets for a in ("--set", kv)),
            env={"HARNESS_TEST_NEWLINE_KEY": "sk-test-0123456789abcdef\n"},
        )
        assert server.requests == 0
    assert_user_error(proc, "$HARNESS_TEST_NEWLINE_KEY", "line break", "the key alone")
    assert "0123456789abcdef" not in proc.stderr + proc.stdout


def test_compare_k_0_is_an_error(old_run, tmp_path):
    other = shutil.copytree(old_run, tmp_path / "other")
    proc = harness("compare", str(old_run), str(other), "--k", "0")
    assert_user_error(proc, "--k", "expected 1..3", "got 0")


def test_compare_of_runs_on_other_questions_names_their_files(old_run, tmp_path):
    other = Path(shutil.copytree(old_run, tmp_path / "other"))
    log = other / "questions.jsonl"
    log.write_text(log.read_text().replace('"question_id": "', '"question_id": "other-'))
    header = json.loads((other / "header.json").read_text())
    header["data"]["questions_file"] = "/data/other-questions.jsonl"
    (other / "header.json").write_text(json.dumps(header))
    proc = harness("compare", str(old_run), str(other))
    assert_user_error(proc, "no question in common", "other-questions.jsonl", "same questions")


def test_compare_on_a_metric_a_run_lacks_names_the_run(old_run, tmp_path):
    other = shutil.copytree(old_run, tmp_path / "other")
    proc = harness("compare", str(old_run), str(other), "--metric", "source_hit")
    assert_user_error(proc, str(old_run), "has no source_hit@3 value", "another --metric")


@pytest.mark.parametrize("k", ["0", "99"])
def test_validate_k_outside_the_runs_k_is_an_error(old_run, k):
    proc = harness("validate", str(old_run), "--qrels", str(DATA / "qrels.tsv"), "--k", k)
    assert_user_error(proc, "--k", "expected 1..3", f"got {k}")


@pytest.mark.parametrize(("command", "extra"), [("label", ["--out", "x.tsv"]), ("judge-check", [])])
def test_sample_must_be_a_positive_integer(old_run, tmp_path, command, extra):
    proc = harness(command, str(old_run), "--sample", "-1", *extra, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "--sample" in errors[0] and "positive integer" in errors[0]
    assert not (tmp_path / "x.tsv").exists()


# ---------------------------------------------------------------- item 15: no failed folder


@pytest.mark.parametrize(
    ("setup", "fragments"),
    [
        (lambda d: (d / "questions.jsonl").write_text("not json\n"), ["questions.jsonl:1"]),
        (lambda d: (d / "questions.jsonl").unlink(), ["questions.file", "not found"]),
        (
            lambda d: (d / "corpus" / "tools.txt").write_bytes(b"\x00\x01" * 100),
            ["tools.txt", "corpus.sources", "NUL bytes"],
        ),
        (
            lambda d: _edit(d / "experiment.toml", 'sources = ["corpus"]', 'sources = ["none"]'),
            ["corpus.sources", "does not exist"],
        ),
    ],
)
def test_corpus_or_questions_errors_leave_no_run_folder(exp_dir, tmp_path, setup, fragments):
    setup(exp_dir)
    proc = run_cmd(exp_dir, tmp_path)
    assert_user_error(proc, *fragments)
    assert run_folders(tmp_path) == []
