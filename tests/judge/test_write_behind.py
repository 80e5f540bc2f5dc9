"""The verdict cache writes behind (#23): what a kill -9 of `harness run` can cost.

A paid verdict waits in memory at most `FLUSH_EVERY_S` before it is stored, and a
question's line is written only after its verdicts are stored. So after a kill -9 and a
rerun on the same cache: no question whose line was written is paid for again, and the
verdicts paid twice are at most those in flight at the kill or answered within the last
flush interval (plus the time to run a flush on a busy machine).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness.stores import VerdictCache
from harness.stores.verdicts import FLUSH_EVERY_S
from harness.testing import Act, FakeOpenAI, answer_any
from harness.types import CriterionVerdict, Verdict

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT = Path(__file__).resolve().parents[2]
LATENCY_S = 0.1
SLACK_S = 0.5
"""Beyond the flush interval: a flush (and the kill's own timing) on a loaded machine."""


def _harness_run(url: str, model: str, cache: Path, results: Path) -> subprocess.Popen[bytes]:
    sets = [f"judge.base_url={url}", f"judge.model={model}", "judge.concurrency=2"]
    cmd = [sys.executable, "-m", "harness", "-q", "run", str(DATA / "experiment.toml")]
    cmd += [a for kv in sets for a in ("--set", kv)]
    cmd += ["--cache-dir", str(cache), "--results-dir", str(results)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def _lines(results: Path) -> list[dict]:
    return [
        json.loads(line)
        for path in results.glob("*/questions.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip().endswith("}")
    ]


def test_kill_9_mid_judging_pays_again_only_the_unflushed_and_loses_nothing_written(tmp_path):
    events: list[tuple[str, float, str]] = []
    lock = threading.Lock()

    def behave(n: int, prompt: str) -> Act:
        with lock:
            events.append(("B", time.time(), prompt))
        time.sleep(LATENCY_S)
        with lock:
            events.append(("A", time.time(), prompt))
        return answer_any(n, prompt)

    cache = tmp_path / "cache"
    with FakeOpenAI(behave) as server:
        # a first run builds the index, so the killed one spends its time judging
        assert _harness_run(server.base_url, "warm", cache, tmp_path / "warm").wait(300) == 0
        with lock:
            events.clear()
        results = tmp_path / "results"
        proc = _harness_run(server.base_url, "killed", cache, results)
        deadline = time.time() + 120
        while not _lines(results) and proc.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "the run ended before it could be killed mid-judging"
        time.sleep(0.15)  # into the middle of the next verdicts
        os.kill(proc.pid, signal.SIGKILL)
        t_kill = time.time()
        proc.wait()
        time.sleep(LATENCY_S + 0.1)  # requests in flight at the kill end
        written = _lines(results)
        assert written and len(written) < 6, "killed mid-judging: some lines, not all"

        assert _harness_run(server.base_url, "killed", cache, tmp_path / "again").wait(300) == 0
        with lock:
            log = list(events)

    after = [p for ev, t, p in log if ev == "B" and t > t_kill]
    # nothing written is lost: no verdict of a question whose line was written is paid again
    for line in written:
        assert not [p for p in after if line["question"]["text"] in p], line["question"][
            "question_id"
        ]
    # what is paid twice is bounded by what was in flight or not yet flushed at the kill
    answered_before = {p for ev, t, p in log if ev == "A" and t <= t_kill}
    repeats = sum(1 for p in after if p in answered_before)
    settled = t_kill - FLUSH_EVERY_S - SLACK_S
    begun = sum(1 for ev, t, _ in log if ev == "B" and t <= t_kill)
    unflushed = begun - sum(1 for ev, t, _ in log if ev == "A" and t <= settled)
    assert repeats <= unflushed, (repeats, unflushed)
    # and the rerun paid for the rest: every verdict is in the cache now
    assert len(_lines(tmp_path / "again")) == 6


def test_a_put_is_read_back_before_it_is_stored_and_stored_by_the_writer(tmp_path):
    yes = CriterionVerdict(criterion="relevant", value=True, raw="yes")
    cache = VerdictCache(tmp_path / "v.sqlite", flush_every_s=0.05, flush_at=1000)
    cache.put("k", yes)
    assert cache.get("k") == yes  # from memory
    other = VerdictCache(tmp_path / "v.sqlite")
    deadline = time.time() + 10
    while other.get("k") is None and time.time() < deadline:
        time.sleep(0.01)
    assert other.get("k") == yes  # stored by the writer thread within its interval
    other.close()
    cache.close()


def test_a_claim_is_released_only_once_its_verdict_is_stored(tmp_path):
    """Another process must never see a key unclaimed and not yet stored: it would pay."""
    yes = CriterionVerdict(criterion="relevant", value=True, raw="yes")
    payer = VerdictCache(tmp_path / "v.sqlite", flush_every_s=3600, flush_at=1000)
    waiter = VerdictCache(tmp_path / "v.sqlite")
    got, paid = payer.claim_many(["a", "b"])
    assert got == {"a", "b"} and paid == {}
    payer.put("a", yes)
    # not flushed yet: the claim still stands, so the other worker gets neither key
    assert waiter.claim_many(["a", "b"]) == (set(), {})
    payer.flush()
    got, paid = waiter.claim_many(["a", "b"])
    assert paid == {"a": yes} and got == set()  # "b" is still claimed
    payer.release("b")
    assert waiter.claim_many(["b"]) == ({"b"}, {})
    waiter.close()
    payer.close()


def test_the_verdicts_handed_over_together_are_followed_by_one_idle_call():
    """`judge_pairs` calls `on_idle` only when no verdict is waiting: the caller writes
    the questions of a burst of answers in one go (one store flush, one sync)."""
    import queue

    from harness.judge.grading import _collect

    def verdict() -> Verdict:
        return Verdict(
            relevant=CriterionVerdict("relevant", True), complete=CriterionVerdict("complete", True)
        )

    done: queue.SimpleQueue = queue.SimpleQueue()
    for i in range(3):  # the first burst, waiting before the collector starts
        done.put((i, verdict(), None))
    events: list[str] = []

    def idle() -> None:
        events.append("idle")
        if len(events) == 4:  # the second burst arrives while the first is written
            done.put((3, verdict(), None))
            done.put((4, verdict(), None))

    got = _collect(done, 5, None, lambda i, v: events.append(f"done {i}"), idle, threading.Event())
    assert len(got) == 5
    assert events == ["done 0", "done 1", "done 2", "idle", "done 3", "done 4", "idle"]


def test_lines_written_together_are_synced_once_and_read_back_in_order(tmp_path, monkeypatch):
    from harness.log import RunWriter, read_run
    from harness.log import io as log_io

    source = read_run(DATA / "logs" / "v1" / "run")
    assert len(source.questions) > 1
    writer = RunWriter(tmp_path / "run")
    writer.write_header(source.header)
    syncs: list[int] = []
    real = os.fsync
    monkeypatch.setattr(log_io.os, "fsync", lambda fd: (syncs.append(fd), real(fd))[1])
    writer.append_many(source.questions)
    writer.append_many([])  # nothing to write: no sync
    writer.close()
    assert len(syncs) == 1
    back = read_run(tmp_path / "run").questions
    assert [q.to_dict() for q in back] == [q.to_dict() for q in source.questions]
