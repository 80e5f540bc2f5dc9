"""Benchmark: one sweep with 1, 2 and 4 local worker processes sharing a PostgreSQL database.

    make bench-distributed   (or: .venv/bin/python tests/benchmarks/bench_distributed.py
                              [--experiment FILE] [--trials N] [--latency S] [--workers 1,2,4])

A real PostgreSQL server is started on 127.0.0.1 for the run (tests/postgres.py: Debian's
server binaries) and stopped at the end; the judge and the embedder are a fake
OpenAI-compatible endpoint in this process, answering after `--latency` seconds (50 ms).
Each row runs `harness sweep experiments/quickstart-sweep.toml --storage URL --workers N`
in a fresh database with a fresh local cache: a grid over the quick-start sweep's whole
space (18 settings of chunking and k, 40 questions), no pruning, so every row does the
same work. Printed per row: wall seconds, finished
trials per minute, the requests the endpoint answered, the distinct prompts among them,
the sweep's own judge calls and distinct verdicts, and the speed-up against one worker.
Answered requests equal distinct prompts when no verdict was paid twice.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from common import print_table  # noqa: E402

from harness.stores.sweeps import SweepDatabase  # noqa: E402
from harness.testing import Act, FakeOpenAI  # noqa: E402
from tests.postgres import PostgresServer, find_bin  # noqa: E402

SWEEP = ROOT / "experiments" / "quickstart-sweep.toml"
GRID = ["sweep.sampler=grid", "sweep.pruner=none", "sweep.baseline=false"]


class Endpoint:
    """The fake judge and embedder: counts answered prompts, answers after a delay."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.answered: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self.server = FakeOpenAI(self.behave)
        self.server._server.request_queue_size = 256

    def behave(self, n: int, prompt: str) -> Act:
        time.sleep(self.latency_s)
        with self._lock:
            self.answered[hashlib.sha256(prompt.encode()).hexdigest()] += 1
        return Act(text="yes" if len(prompt) % 2 else "no")

    def reset(self) -> None:
        with self._lock:
            self.answered.clear()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default=str(SWEEP))
    parser.add_argument("--trials", type=int, default=18)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()
    bindir = find_bin()
    if bindir is None:
        print("PostgreSQL server binaries not found: install the postgresql package")
        return 2
    counts = [int(n) for n in args.workers.split(",")]
    server = PostgresServer(bindir)
    endpoint = Endpoint(args.latency)
    rows = []
    base_wall = None
    with tempfile.TemporaryDirectory(prefix="harness-bench-distributed-") as tmp:
        try:
            server.start()
            with endpoint.server:
                for n in counts:
                    endpoint.reset()
                    url = server.new_database(f"bench_{n}")
                    sets = [
                        f"judge.base_url={endpoint.server.base_url}",
                        "judge.model=fake",
                        "judge.concurrency=4",
                        "embedder.name=openai",
                        f"embedder.base_url={endpoint.server.base_url}",
                        "embedder.api_key_env=HARNESS_BENCH_EMBED_KEY",
                        *GRID,
                    ]
                    cmd = [sys.executable, "-m", "harness", "-q", "sweep", args.experiment]
                    cmd += ["--storage", url, "--workers", str(n), "--name", f"bench-{n}"]
                    cmd += ["--trials", str(args.trials)]
                    cmd += ["--results-dir", f"{tmp}/r{n}", "--cache-dir", f"{tmp}/c{n}"]
                    for item in sets:
                        cmd += ["--set", item]
                    env = {
                        **os.environ,
                        "HARNESS_BENCH_EMBED_KEY": "bench-embed-key",
                        "HARNESS_CACHE_KEY": os.environ.get("HARNESS_CACHE_KEY")
                        or "harness-bench-distributed-key",
                    }
                    t0 = time.perf_counter()
                    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
                    wall = time.perf_counter() - t0
                    db = SweepDatabase(url)
                    summary = db.read_summary(f"bench-{n}")
                    db.close()
                    done = summary.counts.complete + summary.counts.pruned
                    base_wall = base_wall or wall
                    rows.append(
                        (
                            n,
                            done,
                            f"{wall:.1f}",
                            f"{done / wall * 60:.1f}",
                            sum(endpoint.answered.values()),
                            len(endpoint.answered),
                            summary.stats.judge_calls,
                            summary.stats.distinct_verdicts,
                            f"{base_wall / wall:.2f}x",
                        )
                    )
        finally:
            server.stop()
    print_table(
        f"distributed sweep: {Path(args.experiment).name}, grid of {args.trials} settings, "
        f"PostgreSQL storage, fake endpoint at {args.latency * 1000:.0f} ms, judge "
        "concurrency 4 per worker",
        (
            "workers",
            "trials",
            "wall_s",
            "trials/min",
            "answered",
            "distinct_prompts",
            "judge_calls",
            "distinct_verdicts",
            "speed-up",
        ),
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
