"""Result folders outlive their process: SIGTERM, kill -9, torn lines, corrupt headers.

A run stopped by SIGTERM says so in its header, with its stats; one killed with -9 is shown
as interrupted once its process is gone; a line torn inside a UTF-8 character costs only
that line; one unreadable folder does not hide the others; files follow the umask.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import HarnessError
from harness.log import (
    RunHeader,
    effective_status,
    list_results,
    now_iso,
    read_header,
    read_run,
    read_sweep,
    read_sweep_summary,
    this_host,
    write_json_atomic,
)
from harness.report import text
from harness.testing import FakeOpenAI
from tests.conftest import DATA

ROOT = Path(__file__).resolve().parents[2]
V1 = DATA / "logs" / "v1"


def _dead_pid() -> int:
    """The pid of a process that has ended and been reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _set(path: Path, **fields: object) -> None:
    raw = json.loads(path.read_text())
    raw.update(fields)
    path.write_text(json.dumps(raw))


# ---------------------------------------------------------------- SIGTERM (item 10)


def test_sigterm_leaves_an_interrupted_header_with_stats_and_keeps_finished_questions(
    tmp_path,
):
    results, cache = tmp_path / "r", tmp_path / "c"
    with FakeOpenAI(latency_s=0.25) as server:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "harness",
                "run",
                str(DATA / "experiment.toml"),
                "--set",
                f"judge.base_url={server.base_url}",
                "--set",
                "judge.model=fake",
                "--set",
                "judge.concurrency=1",
                "--results-dir",
                str(results),
                "--cache-dir",
                str(cache),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        try:
            deadline = time.monotonic() + 300
            questions: list[Path] = []
            while time.monotonic() < deadline and proc.poll() is None:
                questions = list(results.glob("*/questions.jsonl"))
                if questions and questions[0].read_text().count("\n") >= 1:
                    break
                time.sleep(0.05)
            assert proc.poll() is None, proc.communicate()[1]
            assert questions, "the run never finished a question"
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "harness: terminated" in err
    run = read_run(questions[0].parent)
    assert run.header.status == "interrupted" and run.header.error == "interrupted"
    assert run.header.finished_at is not None
    assert run.header.stats["judge_calls"] > 0 and "total_s" in run.header.stats
    assert 1 <= len(run.questions) < 6  # what finished is kept; the rest was not judged
    assert run.header.pid == proc.pid and run.header.host == this_host()


# ---------------------------------------------------------------- kill -9 (item 10)


@pytest.fixture
def killed_run(tmp_path: Path) -> Path:
    """A results folder holding a run whose header says running, written by a dead process
    of this host."""
    folder = tmp_path / "results" / "killed"
    shutil.copytree(V1 / "run", folder)
    _set(folder / "header.json", status="running", pid=_dead_pid(), host=this_host())
    return folder


def test_a_running_run_whose_process_is_gone_is_listed_and_shown_as_interrupted(killed_run, capsys):
    before = (killed_run / "header.json").read_bytes()
    (row,) = list_results(killed_run.parent)
    assert row["status"] == "interrupted"
    assert "interrupted" in text.format_list([row])
    header = read_header(killed_run)
    assert header.status == "running" and effective_status(header) == "interrupted"
    assert repr(read_run(killed_run)).startswith(f"RunLog({str(killed_run)!r}: interrupted, ")

    assert main(["list", str(killed_run.parent)]) == 0
    assert "interrupted" in capsys.readouterr().out
    assert main(["show", str(killed_run)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("run run: interrupted,")
    assert "is gone; the run did not finish" in out
    assert (killed_run / "header.json").read_bytes() == before  # reading rewrites nothing


def test_a_running_run_is_left_running_while_its_process_lives_or_is_elsewhere(killed_run):
    _set(killed_run / "header.json", pid=os.getpid(), started_at=now_iso())
    assert list_results(killed_run.parent)[0]["status"] == "running"
    _set(killed_run / "header.json", pid=_dead_pid(), host=f"not-{this_host()}")
    assert list_results(killed_run.parent)[0]["status"] == "running"  # cannot tell
    _set(killed_run / "header.json", host=this_host(), status="done")
    assert list_results(killed_run.parent)[0]["status"] == "done"


def test_a_reused_pid_does_not_keep_a_killed_run_running(killed_run):
    # This process is alive but started long after the run did: it got the run's pid later.
    if not sys.platform.startswith("linux"):
        pytest.skip("process start times are read from /proc")
    _set(killed_run / "header.json", pid=os.getpid(), started_at="2000-01-01T00:00:00+0000")
    assert list_results(killed_run.parent)[0]["status"] == "interrupted"


def test_a_running_sweep_whose_process_is_gone_is_listed_and_shown_as_interrupted(tmp_path, capsys):
    folder = tmp_path / "results" / "sweep"
    shutil.copytree(V1 / "sweep", folder)
    _set(folder / "sweep.json", status="running", pid=_dead_pid(), host=this_host())
    (row,) = list_results(folder.parent)
    assert row["kind"] == "sweep" and row["status"] == "interrupted"
    summary = read_sweep_summary(folder)
    assert summary.status == "running" and effective_status(summary) == "interrupted"
    assert repr(read_sweep(folder)).startswith(f"SweepLog({str(folder)!r}: interrupted, ")
    assert main(["show", str(folder)]) == 0
    assert "interrupted" in capsys.readouterr().out.splitlines()[0]


def test_pid_and_host_are_optional_and_round_trip():
    old = read_header(V1 / "run")
    assert old.pid is None and old.host is None
    assert "pid" not in old.to_dict() and "host" not in old.to_dict()
    new = RunHeader(**{**old.__dict__, "pid": 42, "host": "h"})
    d = new.to_dict()
    assert d["pid"] == 42 and d["host"] == "h"
    summary = read_sweep(V1 / "sweep").summary
    assert summary.pid is None and "pid" not in summary.to_dict()


# ---------------------------------------------------------------- torn lines (item 11)


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_a_last_line_torn_inside_a_multibyte_character_is_skipped(tmp_path, cut, capsys):
    folder = tmp_path / "run"
    shutil.copytree(V1 / "run", folder)
    lines = (folder / "questions.jsonl").read_text().splitlines()
    extra = json.loads(lines[0])
    extra["question"]["text"] = "Où est la ruche ? 🐝 蜂の巣"
    line = json.dumps(extra, ensure_ascii=False).encode()
    bee = line.index("🐝".encode())
    with open(folder / "questions.jsonl", "ab") as f:
        f.write(line[: bee + cut])  # 1 to 3 of the emoji's 4 bytes
    assert len(read_run(folder).questions) == 2
    assert main(["show", str(folder)]) == 0
    assert "[hive] When is the hive inspection?" in capsys.readouterr().out


def test_an_undecodable_earlier_line_names_the_file_and_line(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(V1 / "run", folder)
    lines = (folder / "questions.jsonl").read_bytes().split(b"\n")
    lines[0] = lines[0][:20] + b"\xff\xfe" + lines[0][20:]
    (folder / "questions.jsonl").write_bytes(b"\n".join(lines))
    with pytest.raises(HarnessError, match=r"questions.jsonl:1: not UTF-8"):
        read_run(folder)


# ---------------------------------------------------------------- list (item 15)


def test_one_corrupt_header_does_not_hide_the_other_folders(tmp_path, capsys):
    results = tmp_path / "results"
    for name in ("a-good", "b-bad", "c-good", "d-badsweep", "e-binary"):
        shutil.copytree(V1 / ("sweep" if "sweep" in name else "run"), results / name)
    (results / "b-bad" / "header.json").write_text('{"run_id": "b", ')
    (results / "d-badsweep" / "sweep.json").write_text("[]")
    (results / "e-binary" / "header.json").write_bytes(b"\xff\x00\xfe")
    rows = {r["id"]: r for r in list_results(results)}
    assert [rows[n]["status"] for n in ("a-good", "c-good")] == ["done", "done"]
    for name, kind in (("b-bad", "run"), ("d-badsweep", "sweep"), ("e-binary", "run")):
        assert rows[name]["kind"] == kind and rows[name]["status"] == "unreadable"
        assert name in rows[name]["error"]  # names the file
        assert "\n" not in rows[name]["error"]
    out = text.format_list(list(rows.values()))
    assert "b-bad" in out and "unreadable" in out and "a-good" in out
    assert main(["list", str(results)]) == 0
    listed = capsys.readouterr().out
    assert "c-good" in listed and "unreadable" in listed
    assert main(["list", str(results), "--format", "json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert {r["status"] for r in as_json} == {"done", "unreadable"}


# ---------------------------------------------------------------- file modes (item 15)


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_headers_and_sweep_summaries_follow_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        write_json_atomic(tmp_path / "header.json", {"a": 1})
        write_json_atomic(tmp_path / "header.json", {"a": 2})  # replacing keeps the mode
        write_json_atomic(tmp_path / "sweep.json", {"b": 1})
        (tmp_path / "questions.jsonl").touch()
    finally:
        os.umask(old)
    for name in ("header.json", "sweep.json", "questions.jsonl"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name
    assert json.loads((tmp_path / "header.json").read_text()) == {"a": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "header.json",
        "questions.jsonl",
        "sweep.json",
    ]  # no temp file left behind


def test_a_real_run_folder_follows_the_umask(tmp_path, scripted_judge):
    from harness.config import load_experiment
    from harness.pipeline import run_experiment

    old = os.umask(0o022)
    try:
        run = run_experiment(
            load_experiment(DATA / "experiment.toml"),
            results_dir=tmp_path / "r",
            cache_dir=tmp_path / "c",
            judge=scripted_judge,
        )
    finally:
        os.umask(old)
    for name in ("header.json", "questions.jsonl"):
        assert stat.S_IMODE((run.run_dir / name).stat().st_mode) == 0o644, name
    assert run.header.pid == os.getpid() and run.header.host == this_host()
