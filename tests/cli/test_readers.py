"""Readers of result folders and the terminal they print to (#26 items 11, 14, 15): a closed
stdout pipe is a quiet exit, hostile folder contents (a pid no process can have, JSON
nested too deep) end in one line or a normal result, `label` without a stdin says so,
and terminal control characters from a folder are printed as visible escapes."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import ROOT, assert_user_error, harness
from tests.conftest import DATA

V1 = DATA / "logs" / "v1"

HOSTILE_TEXT = "When\x1b]0;owned\x07 is\x1b[2J the\r hive\x9b31m inspection?\x7f"
"""A question that retitles the window, clears the screen, rewrites the line and uses a
one-byte CSI, if printed raw."""


def _raw_controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0]


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A results folder holding a copy of a finished run and of a finished sweep."""
    folder = tmp_path / "results"
    shutil.copytree(V1 / "run", folder / "run")
    shutil.copytree(V1 / "sweep", folder / "sweep")
    return folder


def _edit_json(path: Path, **changes: object) -> None:
    obj = json.loads(path.read_text(encoding="utf-8"))
    obj.update(changes)
    path.write_text(json.dumps(obj), encoding="utf-8")


# ---------------------------------------------------------------- item 11


def test_list_into_a_closed_pipe_exits_quietly(results: Path):
    """`harness list | head`: the reader is gone before anything is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "harness", "list", str(results)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""


def test_list_into_head_prints_no_error(results: Path):
    """The same through a shell pipeline, as a person types it."""
    for i in range(40):  # enough lines that head closes the pipe before list is done
        shutil.copytree(results / "run", results / f"run-{i:02d}")
    cmd = f"{sys.executable} -m harness list {results} | head -n 1"
    proc = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0
    assert len(proc.stdout.splitlines()) == 1
    assert "Broken pipe" not in proc.stderr and "Traceback" not in proc.stderr


# ---------------------------------------------------------------- item 14


def test_a_pid_no_process_can_have_is_a_gone_process(results: Path, tmp_path: Path):
    """pid = 2**70 on this host, status running: OverflowError in os.kill before; now the
    run reads as interrupted in show, report and list (of the run and of the folder)."""
    here = {"pid": 2**70, "host": socket.gethostname(), "status": "running"}
    _edit_json(results / "run" / "header.json", **here)
    _edit_json(results / "sweep" / "sweep.json", **here)
    for args in (
        ["show", str(results / "run")],
        ["show", str(results / "sweep")],
        ["report", str(results / "run"), "--out", str(tmp_path / "r.html")],
        ["list", str(results)],
        ["list", str(results / "run")],
    ):
        proc = harness(*args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and "OverflowError" not in proc.stderr
    listed = harness("list", str(results)).stdout
    assert "interrupted" in listed and "running" not in listed


def test_deeply_nested_json_in_a_questions_file_is_one_line(tmp_path: Path):
    """The experiment's questions.jsonl with a line nested 100,000 deep."""
    exp = Path(shutil.copytree(DATA, tmp_path / "data"))
    deep = '{"id": "deep", "text": "q", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    with open(exp / "questions.jsonl", "a", encoding="utf-8") as f:
        f.write(deep)
    proc = harness(
        "run",
        str(exp / "experiment.toml"),
        "--dry-run",
        "--results-dir",
        str(tmp_path / "r"),
        "--cache-dir",
        str(tmp_path / "c"),
    )
    assert_user_error(proc, "questions.jsonl", "expected a JSON object per line")


def test_deeply_nested_json_in_a_run_folder_is_one_line(results: Path):
    line = '{"question": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    with open(results / "run" / "questions.jsonl", "r+", encoding="utf-8") as f:
        lines = f.readlines()
        f.seek(0)
        f.writelines([lines[0], line, *lines[1:]])
    assert_user_error(harness("show", str(results / "run")), "questions.jsonl:2", "not valid JSON")


def test_label_with_stdin_closed_is_one_line(results: Path, tmp_path: Path):
    out = tmp_path / "labels.tsv"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "label", str(results / "run"), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        preexec_fn=lambda: os.close(0),
    )
    assert_user_error(proc, "stdin is closed")
    assert not out.exists()


# ---------------------------------------------------------------- item 15


def _hostile_run(results: Path) -> Path:
    """The run with a question and a chunk text full of terminal control sequences."""
    path = results / "run" / "questions.jsonl"
    lines = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        obj = json.loads(raw)
        obj["question"]["text"] = HOSTILE_TEXT
        for hit in obj["hits"]:
            hit["chunk"]["text"] = "chunk\x1b[31m red\r over\x1b]8;;http://x\x07"
        lines.append(json.dumps(obj))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _edit_json(results / "run" / "header.json", error="failed\x1b[2J\rcleared")
    return results / "run"


def test_show_prints_control_characters_as_escapes(results: Path):
    run = _hostile_run(results)
    for args in (["show", str(run)], ["show", str(run), "--question", "hive"]):
        proc = harness(*args)
        assert proc.returncode == 0, proc.stderr
        assert _raw_controls(proc.stdout) == [], args
        assert "\\x1b" in proc.stdout
    js = harness("show", str(run), "--format", "json")
    assert js.returncode == 0 and _raw_controls(js.stdout) == []
    # JSON escapes them instead, so a program reading it gets the text back exactly
    assert json.loads(js.stdout)["header"]["error"] == "failed\x1b[2J\rcleared"


def test_label_prints_control_characters_as_escapes(results: Path, tmp_path: Path):
    run = _hostile_run(results)
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "label", str(run), "--out", str(tmp_path / "l.tsv")],
        input="q\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "question [" in proc.stdout and "\\x1b" in proc.stdout
    assert _raw_controls(proc.stdout) == []


def test_format_table_is_gone(results: Path):
    """`--format table` was run's and sweep's old name for text; only text|json remain."""
    proc = harness("show", str(results / "run"), "--format", "table")
    assert proc.returncode == 2 and "invalid choice: 'table'" in proc.stderr
    assert harness("show", str(results / "run"), "--format", "text").returncode == 0
