"""Benchmark: kill -9 at random moments of runs and sweeps, rerun, count what was lost.

    make bench-faults   (or: .venv/bin/python tests/benchmarks/bench_faults.py [--repeats N])

Each repetition starts `python -m harness run` (even repetitions) or `python -m harness
sweep` (odd ones) on the tiny test experiment against a fake OpenAI-compatible endpoint
served from its own process with some latency, in a fresh results folder and with a cache
shared by every repetition (each repetition names its judge model differently, so its
verdicts are paid for anew). The process is killed with SIGKILL at a random moment of its
expected duration, then run again to completion (the sweep with --resume). Counted:

- results lost: questions in a questions.jsonl before the kill that it no longer holds
  after the rerun, and sweep trials finished before the kill missing after it;
- paid twice: requests after the kill for a (question, chunk, criterion) prompt the
  endpoint had answered before it, beyond the requests in flight at the kill;
- unreadable folders: run or sweep folders that read_run / read_sweep refuse, after the
  kill or after the rerun.

All three must be 0. Prints one table, one row per repetition and a total.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from common import print_table  # noqa: E402

from harness.errors import HarnessError  # noqa: E402
from harness.log import (  # noqa: E402
    HEADER,
    QUESTIONS,
    SWEEP_FILE,
    TRIALS_FILE,
    iter_jsonl,
    read_run,
    read_sweep,
)
from harness.stores.verdicts import FLUSH_EVERY_S  # noqa: E402

DATA = ROOT / "tests" / "data"
FINISHED_TRIAL = ("complete", "pruned")


# ---------------------------------------------------------------- the endpoint


def serve(log_path: str, latency_s: float) -> None:
    """The fake endpoint (run in its own process): answers every judge prompt after
    `latency_s`, and logs `B|A <time> <prompt hash>` when a request begins and when its
    answer is about to go out."""
    from harness.testing import Act, FakeOpenAI, answer_any

    lock = threading.Lock()
    log = open(log_path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives until killed

    def note(event: str, key: str) -> None:
        with lock:
            log.write(f"{event} {time.time():.6f} {key}\n")

    def behave(n: int, prompt: str) -> Act:
        key = hashlib.sha256(prompt.encode()).hexdigest()[:20]
        note("B", key)
        time.sleep(latency_s)
        note("A", key)
        return answer_any(n, prompt)

    server = FakeOpenAI(behave)
    server._server.request_queue_size = 64
    print(server.base_url, flush=True)
    server._server.serve_forever()


class Endpoint:
    """The fake endpoint's process and its request log."""

    def __init__(self, log: Path, latency_s: float) -> None:
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(log), str(latency_s)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url = self.proc.stdout.readline().strip()  # type: ignore[union-attr]
        if not self.url.startswith("http://127.0.0.1:"):
            self.stop()
            raise RuntimeError(f"the fake endpoint did not start (printed {self.url!r})")

    def events(self) -> list[tuple[str, float, str]]:
        """(B or A, time, prompt hash) of every request so far."""
        out = []
        for line in self.log.read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) == 3:
                out.append((parts[0], float(parts[1]), parts[2]))
        return out

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


# ---------------------------------------------------------------- the campaign


@dataclass
class Repetition:
    """What one kill and rerun did."""

    number: int
    kind: str
    kill_after_s: float
    killed: bool = False
    lost: int = 0
    paid_twice: int = 0
    repeats: int = 0
    in_flight: int = 0
    unreadable: int = 0
    rerun_ok: bool = False
    notes: list[str] = field(default_factory=list)


def harness_cmd(*args: str) -> list[str]:
    """`python -m harness ARGS` with warnings only."""
    return [sys.executable, "-m", "harness", "-q", *args]


def judge_sets(url: str, model: str) -> list[str]:
    """--set flags that point the judge at the fake endpoint."""
    out: list[str] = []
    for item in (f"judge.base_url={url}", f"judge.model={model}", "judge.concurrency=2"):
        out += ["--set", item]
    return out


def start_cmd(
    kind: str, results: Path, cache: Path, url: str, model: str, trials: int
) -> list[str]:
    """The command a repetition kills: a run, or a small sweep."""
    common = ["--results-dir", str(results), "--cache-dir", str(cache), *judge_sets(url, model)]
    if kind == "run":
        return harness_cmd("run", str(DATA / "experiment.toml"), *common)
    return harness_cmd("sweep", str(DATA / "sweep.toml"), "--trials", str(trials), *common)


def rerun_cmd(
    kind: str, results: Path, cache: Path, url: str, model: str, trials: int
) -> list[str]:
    """The command that finishes the work: the run again, or the sweep resumed."""
    sweeps = (
        [p for p in results.iterdir() if (p / SWEEP_FILE).is_file()] if results.is_dir() else []
    )
    if kind == "sweep" and sweeps:
        return harness_cmd(
            "sweep",
            "--resume",
            str(sweeps[0]),
            "--trials",
            str(trials),
            "--cache-dir",
            str(cache),
            *judge_sets(url, model),
        )
    return start_cmd(kind, results, cache, url, model, trials)


def snapshot(results: Path) -> tuple[dict[Path, set[str]], dict[Path, set[int]]]:
    """Question ids per questions.jsonl, and finished trial numbers per sweep, as the
    files hold them now (raw lines; a torn last line is not a finished result)."""
    questions: dict[Path, set[str]] = {}
    trials: dict[Path, set[int]] = {}
    if not results.is_dir():
        return questions, trials
    for path in results.rglob(QUESTIONS):
        try:
            questions[path.parent] = {d["question"]["question_id"] for d in iter_jsonl(path)}
        except (HarnessError, KeyError, TypeError):
            questions[path.parent] = set()  # counted as unreadable, not as lost
    for path in results.rglob(TRIALS_FILE):
        try:
            trials[path.parent] = {
                d["number"] for d in iter_jsonl(path) if d.get("state") in FINISHED_TRIAL
            }
        except (HarnessError, KeyError, TypeError):
            trials[path.parent] = set()
    return questions, trials


def unreadable_folders(results: Path) -> set[Path]:
    """Run and sweep folders under `results` that cannot be read back."""
    bad: set[Path] = set()
    if not results.is_dir():
        return bad
    for path in results.rglob(HEADER):
        try:
            read_run(path.parent)
        except Exception:  # anything: a traceback is as unreadable as a HarnessError
            bad.add(path.parent)
    for path in results.rglob(SWEEP_FILE):
        try:
            read_sweep(path.parent)
        except Exception:
            bad.add(path.parent)
    return bad


# An answer that left the endpoint this shortly before the kill may not have reached the
# client's cache yet: that request was still in flight for the client. The cache writes
# behind (a paid verdict is stored within FLUSH_EVERY_S, and before any line that uses it
# is written), so a verdict answered within that interval counts as in flight too.
IN_FLIGHT_MARGIN_S = 0.1 + FLUSH_EVERY_S


def paid_twice(events: list[tuple[str, float, str]], t_kill: float) -> tuple[int, int, int]:
    """(excess, repeats, in flight) for one kill. repeats: requests after the kill for
    prompts the endpoint answered before it; in flight: requests begun before the kill
    and not answered more than IN_FLIGHT_MARGIN_S before it; excess: repeats beyond those
    in flight."""
    settled = t_kill - IN_FLIGHT_MARGIN_S
    answered_before = {key for ev, t, key in events if ev == "A" and t <= t_kill}
    repeats = sum(1 for ev, t, key in events if ev == "B" and t > t_kill and key in answered_before)
    begun = sum(1 for ev, t, _ in events if ev == "B" and t <= t_kill)
    in_flight = begun - sum(1 for ev, t, _ in events if ev == "A" and t <= settled)
    return max(0, repeats - in_flight), repeats, in_flight


def repetition(
    number: int,
    kind: str,
    duration_s: float,
    tmp: Path,
    cache: Path,
    args: argparse.Namespace,
    rng: random.Random,
) -> Repetition:
    """Start, kill -9 at a random moment, snapshot, rerun, compare."""
    rep = Repetition(number, kind, round(rng.uniform(0.0, duration_s), 2))
    results = tmp / f"rep{number}" / "results"
    endpoint = Endpoint(tmp / f"rep{number}" / "requests.log", args.latency)
    model = f"fake-rep{number}"
    try:
        proc = subprocess.Popen(
            start_cmd(kind, results, cache, endpoint.url, model, args.trials),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            proc.wait(timeout=rep.kill_after_s)
        except subprocess.TimeoutExpired:
            t_kill = time.time()
            os.kill(proc.pid, signal.SIGKILL)
            rep.killed = True
        else:
            t_kill = time.time()
            rep.notes.append(f"finished before the kill (exit {proc.returncode})")
        proc.wait()
        time.sleep(args.latency + 0.1)  # let requests in flight at the kill end
        before_q, before_t = snapshot(results)
        bad = unreadable_folders(results)

        rerun = subprocess.run(
            rerun_cmd(kind, results, cache, endpoint.url, model, args.trials),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=args.timeout,
        )
        rep.rerun_ok = rerun.returncode == 0
        if not rep.rerun_ok:
            rep.notes.append(f"rerun exit {rerun.returncode}: {rerun.stderr.strip()[-300:]}")
        after_q, after_t = snapshot(results)
        bad |= unreadable_folders(results)
        rep.unreadable = len(bad)
        rep.notes += [f"unreadable: {p}" for p in sorted(bad)]
        for folder, ids in before_q.items():
            rep.lost += len(ids - after_q.get(folder, set()))
        for folder, numbers in before_t.items():
            rep.lost += len(numbers - after_t.get(folder, set()))
        rep.paid_twice, rep.repeats, rep.in_flight = paid_twice(endpoint.events(), t_kill)
    finally:
        endpoint.stop()
    return rep


def calibrate(kind: str, tmp: Path, cache: Path, args: argparse.Namespace) -> float:
    """Wall seconds of an uninterrupted run or sweep with fresh verdicts and the indexes
    already built (as every repetition finds them): the span kill moments are drawn from.
    The first, untimed, pass builds the indexes into the shared cache."""
    seconds = 0.0
    for attempt in ("warm", "timed"):
        endpoint = Endpoint(tmp / f"calibrate-{kind}-{attempt}.log", args.latency)
        try:
            t0 = time.perf_counter()
            proc = subprocess.run(
                start_cmd(
                    kind,
                    tmp / f"calibrate-{kind}-{attempt}",
                    cache,
                    endpoint.url,
                    f"fake-calibrate-{kind}-{attempt}",
                    args.trials,
                ),
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                timeout=args.timeout,
            )
            seconds = time.perf_counter() - t0
        finally:
            endpoint.stop()
        if proc.returncode != 0:
            raise RuntimeError(f"the uninterrupted {kind} failed: {proc.stderr.strip()[-500:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.3, help="fake endpoint seconds")
    parser.add_argument("--trials", type=int, default=3, help="trials of each sweep")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--timeout", type=float, default=600, help="seconds for one command")
    parser.add_argument("--keep", action="store_true", help="keep the folders; print where")
    parser.add_argument("--serve", nargs=2, metavar=("LOG", "LATENCY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve[0], float(args.serve[1]))
        return 0
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="harness-bench-faults-"))
    cache = tmp / "cache"
    kinds = ["run", "sweep"] if args.repeats > 1 else ["run"]
    durations = {kind: calibrate(kind, tmp, cache, args) for kind in kinds}
    print(
        "uninterrupted: " + ", ".join(f"{k} {d:.1f} s" for k, d in durations.items()),
        file=sys.stderr,
        flush=True,
    )
    reps: list[Repetition] = []
    for number in range(args.repeats):
        kind = kinds[number % len(kinds)]
        rep = repetition(number, kind, durations[kind], tmp, cache, args, rng)
        reps.append(rep)
        print(
            f"{number:>3} {kind:<5} kill at {rep.kill_after_s:5.2f} s: lost {rep.lost}, "
            f"paid twice {rep.paid_twice} (repeats {rep.repeats}, in flight {rep.in_flight}), "
            f"unreadable {rep.unreadable}" + "".join(f"; {n}" for n in rep.notes),
            file=sys.stderr,
            flush=True,
        )
    rows = [
        (
            r.number,
            r.kind,
            f"{r.kill_after_s:.2f}",
            "yes" if r.killed else "no",
            r.lost,
            r.paid_twice,
            f"{r.repeats}/{r.in_flight}",
            r.unreadable,
            "yes" if r.rerun_ok else "NO",
        )
        for r in reps
    ]
    total = (
        sum(r.lost for r in reps),
        sum(r.paid_twice for r in reps),
        sum(r.unreadable for r in reps),
    )
    rows.append(
        (
            "total",
            f"{len(reps)} reps",
            "-",
            str(sum(r.killed for r in reps)),
            *total[:2],
            f"{sum(r.repeats for r in reps)}/{sum(r.in_flight for r in reps)}",
            total[2],
            str(sum(r.rerun_ok for r in reps)),
        )
    )
    print_table(
        f"kill -9 campaign: {len(reps)} repetitions (runs and sweeps of the tiny experiment, "
        f"fake endpoint {args.latency:.2f} s per request)",
        (
            "rep",
            "kind",
            "kill_s",
            "killed",
            "results_lost",
            "paid_twice",
            "repeats/in_flight",
            "unreadable",
            "rerun_done",
        ),
        rows,
    )
    print(
        f"results lost {total[0]}, verdicts paid twice beyond those in flight {total[1]}, "
        f"unreadable folders {total[2]} (all must be 0)"
    )
    if args.keep:
        print(f"folders kept in {tmp}")
    else:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if total == (0, 0, 0) and all(r.rerun_ok for r in reps) else 1


if __name__ == "__main__":
    sys.exit(main())
