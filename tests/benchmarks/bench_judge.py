"""Benchmark: verdicts per second, by engine, requests in flight and judge mode.

    make bench-judge   (or: .venv/bin/python tests/benchmarks/bench_judge.py)

1. The local judge (Qwen2.5-Coder-1.5B) on a fixed sample of quick-start pairs: the
   native llama-server with 1 and 4 requests in flight (pointwise, both criteria in one
   call, and listwise), and llama-cpp-python's server when it is installed (`make
   bench-judge` installs it) at 1 and 4 in flight with --logits_all (needed for P(yes))
   and at 1 without; with each row's agreement with llama-server pointwise at 1.
2. A fake OpenAI-compatible server on 127.0.0.1 answering after 50 ms, at 1, 4, 16, 64, 128
   and 256 requests in flight, as a ratio to the ideal (in-flight / latency), with no
   verdict cache (the client alone) and with one (its SQLite writes and claims included);
   with the client's and the fake server's CPU per request (both share the 2 cores).
3. The harness's overhead: `harness run` of the quick-start against the fake endpoint
   (warm index): wall / (judge calls / concurrency x median latency), and where the rest
   of the wall time went.
4. What users get: `harness run` itself (a `python -m harness run` process) of the
   quick-start with chunks of 200 characters, no overlap and k = 12 (about 800-960
   verdicts) against the 50 ms fake endpoint, the verdict cache on and empty (a fresh
   cache folder per repetition, the index copied in warm), at 64 and 256 in flight:
   verdicts/s over the run's judging time, its ratio to the ideal (in flight / 50 ms),
   and the client's CPU per verdict (the run's CPU less that of the same run again with
   every verdict cached). Medians of `--repeats`; with `--before REV` the same rows for
   the source tree of that git revision, in the same invocation, its repetitions
   alternating with this tree's. First, the
   floor: a minimal asyncio client's ratio against the same fake (`raw_client_ratio`),
   which says how much of the gap to the ideal is the machine's.

A verdict is one (question, chunk) pair graded on both criteria. Every measurement starts
from an empty verdict cache. Prints one table.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from common import print_table, quiet  # noqa: E402

from harness.config import CriteriaConfig, load_experiment  # noqa: E402
from harness.judge import ChatJudge, JudgeStats, judge_pairs  # noqa: E402
from harness.llm.local import LlamaServer, free_port, resolve_model  # noqa: E402
from harness.pipeline import default_cache_dir, prepare  # noqa: E402
from harness.stores import VerdictCache  # noqa: E402


def sample_pairs(n_questions: int, k: int) -> list[tuple[str, str]]:
    config = load_experiment(ROOT / "experiments" / "quickstart.toml", [f"retrieval.k={k}"])
    p = prepare(config, cache_dir=default_cache_dir())
    return [
        (q.text, p.chunks[h.chunk_id].text)
        for q, hits in list(zip(p.questions, p.hits, strict=True))[:n_questions]
        for h in hits
    ]


@contextlib.contextmanager
def llama_cpp_python_server(model: Path, *, logprobs: bool = True) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server on 127.0.0.1. It keeps logits for
    logprobs (P(yes)) only with --logits_all, which costs time on every call."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--n_threads",
        str(os.cpu_count() or 1),
        "--logits_all",
        str(logprobs),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import urllib.request

        for _ in range(240):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def measure(
    base_url: str,
    model: str,
    pairs,
    *,
    mode: str,
    concurrency: int,
    grammar: bool,
    tmp: Path,
    label: str,
    use_cache: bool = True,
    prompt_cache: bool = False,
    judge: ChatJudge | None = None,
) -> tuple[float, list]:
    judge = judge or ChatJudge(
        base_url=base_url,
        model=model,
        api_key="",
        grammar=grammar,
        mode=mode,
        max_retries=2,
        prompt_cache=prompt_cache,
    )
    cache = VerdictCache(tmp / f"{label}-{mode}-{concurrency}.sqlite") if use_cache else None
    t0 = time.perf_counter()
    verdicts = judge_pairs(
        pairs,
        judge,
        criteria=CriteriaConfig(),
        cache=cache,
        stats=JudgeStats(),
        concurrency=concurrency,
    )
    elapsed = time.perf_counter() - t0
    if cache is not None:
        cache.close()
    return len(pairs) / elapsed, verdicts


def agreement(a, b) -> str:
    rel = sum(x.relevant.value == y.relevant.value for x, y in zip(a, b, strict=True)) / len(a)
    grade = sum(x.grade == y.grade for x, y in zip(a, b, strict=True)) / len(a)
    return f"{rel:.2f}/{grade:.2f}"


HEAD = (
    "engine",
    "mode",
    "in_flight",
    "verdicts/s",
    "ratio_to_ideal",
    "agree rel/grade | where the time goes",
    "judged relevant",
)


def local_rows(args: argparse.Namespace, tmp: Path, emit) -> None:
    """The local judge's rows: each engine and mode on the same quick-start pairs."""
    pairs = sample_pairs(args.questions, args.k)
    model, _ = resolve_model("qwen2.5-coder-1.5b", default_cache_dir())
    base: list = []  # llama-server pointwise at 1 in flight: what the others agree with

    def row(engine: str, url: str, mode: str, in_flight: int) -> None:
        try:
            vps, verdicts = measure(
                url,
                "qwen",
                pairs,
                mode=mode,
                concurrency=in_flight,
                grammar=True,
                tmp=tmp,
                label=f"{engine}-{in_flight}".replace(" ", "_"),
                prompt_cache=engine.startswith("llama-server"),
            )
        except Exception as exc:  # one engine's failure must not lose the other rows
            emit((engine, mode, str(in_flight), f"failed: {exc}"[:60], "-", "-", "-"))
            return
        first = not base
        if first:
            base.extend(verdicts)
        agree = "-" if first else agreement(verdicts, base)
        relevant = sum(v.relevant.value is True for v in verdicts) / len(verdicts)
        emit((engine, mode, str(in_flight), f"{vps:.3f}", "-", agree, f"{relevant:.2f}"))

    for parallel in (1, 4):
        with LlamaServer(model, alias="qwen", parallel=parallel) as server:
            for mode in ("pointwise", "both", "listwise") if parallel == 4 else ("pointwise",):
                row("llama-server", server.base_url, mode, parallel)
    if importlib.util.find_spec("llama_cpp") is None:
        emit(("llama-cpp-python", "pointwise", "1", "not installed", "-", "-", "-"))
        return
    for logprobs, in_flight in ((True, 1), (True, 4), (False, 1)):
        with llama_cpp_python_server(model, logprobs=logprobs) as url:
            engine = "llama-cpp-python" + ("" if logprobs else " (no P(yes))")
            row(engine, url, "pointwise", in_flight)


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def fake_server(
    latency: float, text: str = "no", module: str = "fake_openai"
) -> Iterator[tuple[str, int]]:
    """The fake endpoint in its own process (its work does not share our GIL): (url, pid).
    `module` "lean_openai" is the lean one, which leaves the client the machine's CPU."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from harness.testing.{module} import main; main()",
            str(latency),
            text,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc.stdout.readline().strip(), proc.pid  # type: ignore[union-attr]
    finally:
        proc.terminate()
        proc.wait()


def fake_rows(tmp: Path, emit) -> None:
    """A fake endpoint answering after 50 ms, at 1 to 256 requests in flight, as a ratio to
    the ideal in-flight / latency; without a verdict cache (the client alone) and with one.
    The client's and the server's CPU per request say what bounds the ratio: both
    processes share the machine's cores."""
    latency = 0.05
    with fake_server(latency) as (url, pid):
        for use_cache in (False, True):
            for concurrency in (1, 4, 16, 64, 128, 256):
                n = max(64, concurrency * 16)
                fake_pairs = [(f"question {i} {use_cache}?", f"passage {i}") for i in range(n)]
                # one judge, its connections opened before the clock starts
                judge = ChatJudge(base_url=url, model="fake", api_key="", max_retries=2)
                warm = [(f"warm {i} {use_cache}?", "passage") for i in range(concurrency)]
                measure(url, "fake", warm, mode="pointwise", concurrency=concurrency,
                        grammar=False, tmp=tmp, label="warm", use_cache=False,
                        judge=judge)  # fmt: skip
                c0, s0 = time.process_time(), _cpu_s(pid)
                vps, _ = measure(
                    url,
                    "fake",
                    fake_pairs,
                    mode="pointwise",
                    concurrency=concurrency,
                    grammar=False,
                    tmp=tmp,
                    label=f"fake-{use_cache}",
                    use_cache=use_cache,
                    judge=judge,
                )
                client_ms = (time.process_time() - c0) / n * 1000
                server_ms = (_cpu_s(pid) - s0) / n * 1000
                ratio = vps / (concurrency / latency)
                emit(
                    (
                        "fake 50 ms" + (" +cache" if use_cache else ""),
                        "pointwise",
                        str(concurrency),
                        f"{vps:.1f}",
                        f"{ratio:.2f}",
                        f"cpu/req client {client_ms:.2f} ms, server {server_ms:.2f} ms",
                        "-",
                    )
                )


def overhead_rows(tmp: Path, emit, latency: float, concurrency: int) -> None:
    """`harness run` of the quick-start against the fake endpoint, second run of two (the
    first builds the index): wall / (judge calls / concurrency x median call latency),
    with where the rest of the wall time went."""
    from harness.pipeline import run_experiment

    with fake_server(latency) as (url, _):
        for attempt in range(2):
            config = load_experiment(
                ROOT / "experiments" / "quickstart.toml",
                [
                    f"judge.base_url={url}",
                    f"judge.model=fake-overhead-{attempt}",
                    "judge.api_key_env=HARNESS_BENCH_NO_KEY",
                    f"judge.concurrency={concurrency}",
                    "failures.explain=false",
                ],
            )
            t0 = time.perf_counter()
            run = run_experiment(config, results_dir=tmp / "overhead", cache_dir=tmp / "oc")
            wall = time.perf_counter() - t0
        st = run.header.stats
        calls, median = st["judge_calls"], st["judge_call_median_s"]
        ideal = calls / concurrency * median
        judge_s = st.get("judge_s", 0.0)
        prepare_s = st.get("prepare_s", 0.0)
        rest = wall - judge_s - prepare_s
        emit(
            (
                f"overhead, fake {latency * 1000:.0f} ms",
                "run",
                str(concurrency),
                f"{calls} calls",
                f"{wall / ideal:.2f}",
                f"wall {wall:.2f} s = judging {judge_s:.2f} (ideal {ideal:.2f}) + loading, "
                f"embedding, index {prepare_s:.2f} + log/other {rest:.2f}",
                "-",
            )
        )


RUN_SETTINGS = ("chunking.chunk_size=200", "chunking.chunk_overlap=0", "retrieval.k=12")


def _harness_run(tree: Path, url: str, model: str, concurrency: int, cache: Path, results: Path):
    """One `python -m harness run` of the quick-start from source tree `tree`: (its header
    stats, its CPU seconds, user + system)."""
    sets = [
        *RUN_SETTINGS,
        f"judge.base_url={url}",
        f"judge.model={model}",
        f"judge.concurrency={concurrency}",
        "judge.api_key_env=HARNESS_BENCH_NO_KEY",
        "failures.explain=false",
    ]
    cmd = [sys.executable, "-m", "harness", "run", str(tree / "experiments" / "quickstart.toml")]
    cmd += [a for kv in sets for a in ("--set", kv)]
    cmd += ["--cache-dir", str(cache), "--results-dir", str(results)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=tree, env=env, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    header = max(results.glob("*/header.json"), key=lambda p: p.stat().st_mtime)
    return json.loads(header.read_text())["stats"], cpu


def _fresh_cache(warm: Path, to: Path) -> Path:
    """A cache folder with the warm index and embeddings but no verdicts."""
    shutil.copytree(warm, to, ignore=shutil.ignore_patterns("verdicts.sqlite*"))
    return to


def raw_client_ratio(url: str, concurrency: int, calls: int, latency: float) -> tuple[float, float]:
    """The machine's floor for the `harness run` rows: `calls` chat requests from a
    minimal asyncio client (one keep-alive connection per request in flight, opened
    before the clock; prepared bytes; the answer read by its Content-Length, never
    parsed) to the same fake: (its rate as a ratio to the ideal in flight / latency, its
    median request time in seconds). What this client cannot reach, no client in Python
    on this machine will: the fake's own latency, the loopback and the event loop."""
    import asyncio
    import urllib.parse

    u = urllib.parse.urlsplit(url)
    body = b'{"model": "fake", "messages": [{"role": "user", "content": "floor"}]}'
    request = (
        f"POST {u.path}/chat/completions HTTP/1.1\r\nHost: {u.netloc}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body

    async def run() -> tuple[float, float]:
        conns = [await asyncio.open_connection(u.hostname, u.port) for _ in range(concurrency)]
        left, times = [calls], []

        async def worker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while left[0] > 0:
                left[0] -= 1
                t = time.perf_counter()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                size = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                await reader.readexactly(size)
                times.append(time.perf_counter() - t)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(r, w) for r, w in conns))
        wall = time.perf_counter() - t0
        for _, w in conns:
            w.close()
            await w.wait_closed()
        return calls / wall / (concurrency / latency), statistics.median(times)

    return asyncio.run(run())


def run_rows(tmp: Path, emit, concurrencies: list[int], repeats: int, before: str | None):
    """`harness run` with the verdict cache on, per source tree and in-flight count."""
    latency = 0.05
    trees: list[tuple[str, Path]] = []
    if before:
        tree = tmp / "before"
        tree.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", before], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        trees.append((f"before {before[:10]}", tree))
    trees.append(("this tree", ROOT))
    n = 0
    # the lean fake: on 2 cores the threaded one's CPU (~0.45 ms a request) is the client's
    with fake_server(latency, "yes", "lean_openai") as (url, server_pid):
        for concurrency in concurrencies:
            got = [raw_client_ratio(url, concurrency, 960, latency) for _ in range(repeats)]
            ratio = statistics.median(g[0] for g in got)
            emit(
                (
                    "floor: a minimal asyncio client",
                    "raw",
                    str(concurrency),
                    f"{ratio * concurrency / latency:.0f}",
                    f"{ratio:.2f}",
                    f"960 requests, no harness: what any client can reach here; median "
                    f"request {statistics.median(g[1] for g in got) * 1000:.1f} ms; median "
                    f"of {repeats}",
                    "-",
                )
            )
        warm: dict[str, Path] = {}
        for label, tree in trees:
            warm[label] = tmp / f"warm-{len(warm)}"
            _harness_run(tree, url, "fake-warm", 4, warm[label], tmp / "results")  # the index
        for concurrency in concurrencies:
            got: dict[str, list[tuple[float, float, float, float, int]]] = {
                label: [] for label, _ in trees
            }
            # the trees' repetitions alternate, so a shared machine's drift hits each alike
            for _ in range(repeats):
                for label, tree in trees:
                    n += 1
                    cache = _fresh_cache(warm[label], tmp / f"cache-{n}")
                    s0 = _cpu_s(server_pid)
                    stats, cpu = _harness_run(
                        tree, url, f"fake-run-{n}", concurrency, cache, tmp / "results"
                    )
                    server_ms = (_cpu_s(server_pid) - s0) / stats["judge_calls"] * 1000
                    _, cpu_cached = _harness_run(
                        tree, url, f"fake-run-{n}", concurrency, cache, tmp / "results"
                    )
                    paid = stats["judge_paid_verdicts"]
                    vps = paid / stats["judge_s"]
                    got[label].append(
                        (
                            vps,
                            vps / (concurrency / latency),
                            (cpu - cpu_cached) / paid * 1000,
                            server_ms,
                            paid,
                        )
                    )
                    shutil.rmtree(cache)
            for label, _ in trees:
                runs = got[label]
                vps, ratio, cpu_ms, server_ms = (
                    statistics.median(g[i] for g in runs) for i in range(4)
                )
                emit(
                    (
                        f"harness run, {label}",
                        "run +cache",
                        str(concurrency),
                        f"{vps:.0f}",
                        f"{ratio:.2f}",
                        f"client cpu/verdict {cpu_ms:.2f} ms (fake endpoint {server_ms:.2f} ms "
                        f"a request); median of {repeats}, {runs[0][4]} verdicts; ratios "
                        + " ".join(f"{g[1]:.2f}" for g in runs),
                        "-",
                    )
                )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=8, help="quick-start questions to sample")
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--overhead-latency", type=float, default=0.5)
    parser.add_argument("--overhead-concurrency", type=int, default=4)
    parser.add_argument("--run-only", action="store_true", help="only the `harness run` rows")
    parser.add_argument("--run-concurrency", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", help="also measure `harness run` at this git revision")
    args = parser.parse_args()
    quiet()
    rows: list[tuple[str, ...]] = []

    def emit(r: tuple[str, ...]) -> None:
        rows.append(r)
        print("  ".join(r), file=sys.stderr, flush=True)  # progress, in case of a crash

    with tempfile.TemporaryDirectory(prefix="harness-bench-judge-") as tmp_s:
        tmp = Path(tmp_s)
        if not (args.skip_local or args.run_only):
            local_rows(args, tmp, emit)
        if not args.run_only:
            fake_rows(tmp, emit)
            overhead_rows(tmp, emit, args.overhead_latency, args.overhead_concurrency)
        run_rows(tmp, emit, args.run_concurrency, args.repeats, args.before)
    print_table(
        f"judge benchmark: {args.questions} quick-start questions x k={args.k} "
        f"(agreement with llama-server pointwise at 1 in flight)",
        HEAD,
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
