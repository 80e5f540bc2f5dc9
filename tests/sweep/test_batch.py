"""A sweep judged through a batch API (judge.batch) against a fake one on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.config import JudgeConfig, load_experiment
from harness.errors import HarnessError, JudgeUnavailable
from harness.judge.batch import (
    MAX_SUBMISSIONS,
    BatchAPI,
    BatchState,
    judge_in_batches,
    state_path,
)
from harness.judge.chat import ChatJudge
from harness.judge.prompts import STRICT_REMINDER
from harness.log import read_run
from harness.stores import VerdictCache, verdict_key
from harness.sweep import SearchSpace, estimate_sweep, run_sweep
from harness.testing.fake_batch import FakeBatchAPI
from tests.conftest import DATA

SWEEP = DATA / "sweep.toml"
ROOT = Path(__file__).resolve().parents[2]


def sets(server: FakeBatchAPI, *, batch: bool = True) -> list[str]:
    return [
        f"judge.base_url={server.base_url}",
        "judge.model=fake",
        "judge.price_prompt_per_mtok=1",
        "judge.price_completion_per_mtok=2",
        f"judge.batch={'true' if batch else 'false'}",
        "judge.batch_poll_s=0.01",
        "judge.lazy=false",
        "sweep.sampler=grid",
        "sweep.pruner=none",
        "sweep.baseline=false",
    ]


def test_batch_sweep_pays_each_verdict_once_at_half_the_online_price(tmp_path, capsys):
    with FakeBatchAPI() as server:
        config = load_experiment(SWEEP, sets(server))
        n = len(SearchSpace(config).enumerate())
        est = estimate_sweep(config, cache_dir=tmp_path / "cache", trials=n)
        assert est["batch_cost_usd_max"] == pytest.approx(0.5 * est["cost_usd_max"], abs=2e-6)
        args = ["sweep", str(SWEEP), "--dry-run", "--cache-dir", str(tmp_path / "cache")]
        for item in sets(server):
            args += ["--set", item]
        assert main(args) == 0
        out = capsys.readouterr().out
        assert f"online price: at most ${est['cost_usd_max']:.4f}" in out
        assert f"batch price: at most ${est['batch_cost_usd_max']:.4f}" in out

        log = run_sweep(config, results_dir=tmp_path / "r", cache_dir=tmp_path / "cache", trials=n)
        assert log.summary.status == "done"
        assert sum(server.online.values()) == 0  # nothing asked online, trials included
        assert server.batch_requests and set(server.batch_requests.values()) == {1}
        assert set(server.submitted.values()) == {1}
        state = BatchState.load(state_path(log.sweep_dir))
        assert [b["round"] for b in state.batches] == [1, 2]  # relevance, then "complete"
        assert all(b["status"] == "completed" and b["id"] for b in state.batches)
        stats = log.summary.stats
        assert stats.judge_calls == 0
        assert stats.batch_verdicts == len(server.batch_requests) == len(state.batch_verdicts)
        for t in log.trials:  # every trial's verdicts from the cache
            run = read_run(Path(t.run_dir))
            assert run.header.stats["judge_calls"] == 0
            for q in run.questions:
                for h in q.hits:
                    assert h.verdict.relevant.cached
                    assert h.verdict.complete.cached or not h.verdict.complete.asked

    # The same sweep online, from a cold cache: the same verdicts at twice the price.
    with FakeBatchAPI() as online:
        config = load_experiment(SWEEP, sets(online, batch=False))
        paid = run_sweep(config, results_dir=tmp_path / "o", cache_dir=tmp_path / "c2", trials=n)
        assert set(online.online) == set(server.batch_requests)
        assert set(online.online.values()) == {1}
    assert stats.cost_usd > 0
    assert stats.cost_usd == pytest.approx(paid.summary.stats.cost_usd / 2, abs=2e-6)
    assert stats.prompt_tokens == paid.summary.stats.prompt_tokens


def test_a_batch_sweep_resumed_without_batch_stays_a_batch_sweep(tmp_path, monkeypatch, capsys):
    def interrupted(self, batch_id):
        raise KeyboardInterrupt  # Ctrl-C while the provider works

    with FakeBatchAPI() as server:
        config = load_experiment(SWEEP, sets(server))
        results, cache = tmp_path / "r", tmp_path / "c"
        with monkeypatch.context() as m:
            m.setattr(BatchAPI, "get", interrupted)
            with pytest.raises(KeyboardInterrupt):
                run_sweep(config, results_dir=results, cache_dir=cache, trials=3, name="s")
        assert len(server.batches) == 1 and server.polls == 0
        # resumed with the experiment file and without --batch (judge.batch = false)
        args = ["sweep", str(SWEEP), "--resume", str(results / "s"), "--trials", "3"]
        args += ["--cache-dir", str(cache)]
        for item in sets(server, batch=False):
            args += ["--set", item]
        assert main(args) == 0
    assert "resumed in batch mode" in capsys.readouterr().err
    state = BatchState.load(state_path(results / "s"))
    assert [b["round"] for b in state.batches] == [1, 2]
    assert state.batches[0]["id"] == "batch_1"
    assert set(server.submitted.values()) == {1}
    assert sum(server.online.values()) == 0  # nothing paid online, trials included
    assert set(server.batch_requests.values()) == {1}


# ---------------------------------------------------------------- the batch client


def _judge_config(**kw) -> JudgeConfig:
    return JudgeConfig(
        batch=True,
        batch_poll_s=0.0,
        price_prompt_per_mtok=1.0,
        **kw,
    )


PAIRS = [
    (f"question {q}?", f"chunk {c} of text " + "word " * (q + c))
    for q in range(4)
    for c in range(5)
]


def _run(server: FakeBatchAPI, tmp_path: Path, api: BatchAPI | None = None, **kw):
    config = _judge_config(**kw)
    judge = ChatJudge(base_url=server.base_url, model="fake", api_key="k", concurrency=4)
    cache = VerdictCache(tmp_path / "verdicts.sqlite")
    tmp_path.mkdir(exist_ok=True)
    try:
        stats = judge_in_batches(PAIRS, judge, config, cache, tmp_path, api=api)
        keys = _needed(judge, config, cache)
        return stats, keys
    finally:
        cache.close()


def _needed(judge: ChatJudge, config: JudgeConfig, cache: VerdictCache) -> list[str]:
    """Verdict keys a pointwise sweep of PAIRS needs that are missing from the cache."""
    identity = judge.identity()
    missing = []
    for q, c in PAIRS:
        rel = cache.get(verdict_key(identity, config.criteria.relevant, q, c))
        if rel is None:
            missing.append(q + c)
        elif rel.value and cache.get(verdict_key(identity, config.criteria.complete, q, c)) is None:
            missing.append(q + c + " complete")
    return missing


def test_partial_failures_are_asked_online_once(tmp_path):
    with FakeBatchAPI(fail=lambda cid: cid[-1] in "01") as server:
        stats, missing = _run(server, tmp_path)
    assert missing == []
    state = BatchState.load(state_path(tmp_path))
    failed = sum(b["failed_requests"] for b in state.batches)
    assert failed > 0
    # each request of the error file asked online once; nothing billed twice
    assert sum(server.online.values()) == failed == stats["batch_online_calls"]
    assert stats["batch_verdicts"] == len(server.batch_requests)  # not those asked online
    assert not set(server.online) & set(server.batch_requests)
    assert set(server.online.values()) == {1} and set(server.batch_requests.values()) == {1}


@pytest.mark.parametrize("ending", ["expired", "cancelled"])
def test_expired_batch_resubmits_only_what_it_never_answered(tmp_path, ending):
    # the fake lists what the batch never ran in its error file, as OpenAI does
    with FakeBatchAPI(expire=1, expire_as=ending) as server:
        stats, missing = _run(server, tmp_path)
    assert missing == []
    state = BatchState.load(state_path(tmp_path))
    first = state.batches[0]
    assert first["status"] == ending and first["round"] == 1
    assert first["failed_requests"] == 0 and first["error_file_id"]
    unanswered = first["custom_ids"][len(first["custom_ids"]) // 2 :]
    again = [b for b in state.batches[1:] if b["round"] == 1]
    assert len(again) == 1 and again[0]["custom_ids"] == unanswered
    assert {c for c, n in server.submitted.items() if n == 2} == set(unanswered)
    assert stats["batches"] == len(state.batches) and stats["batch_online_calls"] == 0
    assert set(server.batch_requests.values()) == {1}
    assert sum(server.online.values()) == 0


def test_a_rejected_batch_stops_once_and_a_resume_submits_its_requests_again(tmp_path):
    with FakeBatchAPI(reject=1) as server:
        with pytest.raises(HarnessError, match=r"rejected it .*line 1: bad body.*again") as err:
            _run(server, tmp_path)
        assert "\n" not in str(err.value)
        first = BatchState.load(state_path(tmp_path)).batches[0]
        assert first["done"] and first["status"] == "failed"
        assert "bad body" in first["errors"]
        stats, missing = _run(server, tmp_path)  # the resume: no error again
    assert missing == []
    state = BatchState.load(state_path(tmp_path))
    assert [b["status"] for b in state.batches] == ["failed", "completed", "completed"]
    assert state.batches[1]["custom_ids"] == first["custom_ids"]
    assert {server.submitted[c] for c in first["custom_ids"]} == {2}
    assert sum(server.online.values()) == 0 == stats["batch_online_calls"]
    assert set(server.batch_requests.values()) == {1}


def test_requests_rejected_max_submissions_times_are_left_to_the_trials(tmp_path):
    with FakeBatchAPI(reject=99) as server:
        for _ in range(MAX_SUBMISSIONS):
            with pytest.raises(HarnessError, match="rejected"):
                _run(server, tmp_path)
        stats, missing = _run(server, tmp_path)
        assert len(server.batches) == MAX_SUBMISSIONS
    assert len(missing) == len(PAIRS)  # judged online by the trials
    assert set(server.submitted.values()) == {MAX_SUBMISSIONS}
    assert sum(server.online.values()) == 0 and stats["batches"] == MAX_SUBMISSIONS


def test_an_unavailable_judge_stops_the_online_asks_at_once(tmp_path):
    # every request fails in the batch, and the endpoint refuses the key online
    with FakeBatchAPI(fail=lambda cid: True, refuse={"chat": 401}) as server:
        with pytest.raises(JudgeUnavailable, match="refused the API key"):
            _run(server, tmp_path)
        time.sleep(0.5)  # an ask still running would be refused meanwhile
        asked = server.refused["chat"]
    assert 1 <= asked <= 4  # only those in flight (concurrency 4) when the first failed
    state = BatchState.load(state_path(tmp_path))
    assert state.batches[0]["failed_requests"] == len(PAIRS)
    assert state.online.get("calls", 0) <= asked


def test_malformed_result_lines_and_answers_are_asked_online(tmp_path):
    with FakeBatchAPI(malformed=3, garbage=2) as server:
        stats, missing = _run(server, tmp_path)
    assert missing == []
    state = BatchState.load(state_path(tmp_path))
    assert state.batches[0]["malformed_lines"] == 3
    # 3 unreadable lines asked again as they were; 2 unparseable answers re-asked with
    # the judge's stricter reminder, as an online answer would be
    reminders = [p for p in server.online if p.endswith(STRICT_REMINDER)]
    assert len(reminders) == 2
    assert sum(server.online.values()) == 5 == stats["batch_online_calls"]
    # the 2 unparseable answers were billed in the batch, and their verdicts came online
    assert stats["batch_verdicts"] == len(server.batch_requests) - 2


def test_a_batch_created_but_not_recorded_is_found_not_created_again(tmp_path):
    class DiesAfterCreate(BatchAPI):
        def create(self, input_file_id: str) -> str:
            super().create(input_file_id)
            raise KeyboardInterrupt  # killed before the id was written down

    with FakeBatchAPI() as server:
        with pytest.raises(KeyboardInterrupt):
            client = ChatJudge(base_url=server.base_url, model="fake", api_key="k").client
            _run(server, tmp_path, api=DiesAfterCreate(client))
        assert len(server.batches) == 1
        stats, missing = _run(server, tmp_path)
    assert missing == []
    assert set(server.submitted.values()) == {1}
    assert BatchState.load(state_path(tmp_path)).batches[0]["id"] == "batch_1"
    assert stats["batch_verdicts"] == len(server.batch_requests)


def test_a_rerun_with_every_verdict_kept_downloads_nothing(tmp_path):
    with FakeBatchAPI() as server:
        _run(server, tmp_path)
        assert server.downloads and set(server.downloads.values()) == {1}
        before = (server.downloads.copy(), server.polls)
        stats, missing = _run(server, tmp_path)
        assert (server.downloads, server.polls) == before
    assert missing == [] and stats["batches"] == 2


def test_verdicts_kept_again_after_a_lost_cache_are_counted_once(tmp_path):
    with FakeBatchAPI() as server:
        first, _ = _run(server, tmp_path)
        # a kill -9 after batches.json was saved and before the cache's flush
        for path in tmp_path.glob("verdicts.sqlite*"):
            path.unlink()
        stats, missing = _run(server, tmp_path)  # kept again from the result files
    assert missing == []
    verdicts = BatchState.load(state_path(tmp_path)).batch_verdicts
    assert len(verdicts) == len(set(verdicts)) == len(server.batch_requests)
    assert stats["batch_verdicts"] == first["batch_verdicts"] == len(server.batch_requests)
    assert sum(server.online.values()) == 0 and set(server.submitted.values()) == {1}


def test_a_record_with_repeated_verdicts_loads_them_once(tmp_path):
    record = {"batches": [], "batch_verdicts": ["a", "b", "a", "c", "b"], "online": {}}
    state_path(tmp_path).write_text(json.dumps(record))
    assert BatchState.load(state_path(tmp_path)).batch_verdicts == ["a", "b", "c"]


def test_the_tokens_of_answers_without_choices_are_booked(tmp_path):
    with FakeBatchAPI(no_choices=3) as server:
        stats, missing = _run(server, tmp_path)
    assert missing == []
    state = BatchState.load(state_path(tmp_path))
    assert state.batches[0]["failed_requests"] == 3  # asked online
    assert sum(server.online.values()) == 3 == stats["batch_online_calls"]
    billed = sum(b["prompt_tokens"] for b in state.batches)
    assert billed == server.billed_prompt_tokens > 0
    assert stats["batch_prompt_tokens"] == billed + state.online["prompt_tokens"]


def test_a_batch_whose_creation_answer_is_lost_is_found_not_created_twice(tmp_path):
    with FakeBatchAPI(lose_create=1) as server:  # made, then answered 500
        stats, missing = _run(server, tmp_path)
    assert missing == []
    state = BatchState.load(state_path(tmp_path))
    first = state.batches[0]
    over_first = [
        b for b in server.batches.values() if b["input_file_id"] == first["input_file_id"]
    ]
    assert len(over_first) == 1 and first["id"] == over_first[0]["id"] == "batch_1"
    assert len(server.batches) == len(state.batches) == 2
    assert set(server.submitted.values()) == {1}
    assert sum(server.online.values()) == 0 == stats["batch_online_calls"]


def test_kill_9_while_the_provider_works_resumes_without_resubmitting(tmp_path):
    hold = threading.Event()
    with FakeBatchAPI(hold=hold) as server:
        results, cache = tmp_path / "r", tmp_path / "c"
        argv = [sys.executable, "-m", "harness", "sweep", str(SWEEP), "--name", "s"]
        argv += ["--results-dir", str(results), "--cache-dir", str(cache), "--trials", "3"]
        argv += ["--batch"]  # the flag for judge.batch = true
        for item in sets(server):
            if not item.startswith("judge.batch="):
                argv += ["--set", item]
        proc = subprocess.Popen(
            argv,
            cwd=ROOT,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            stdout=subprocess.DEVNULL,
            stderr=open(tmp_path / "sweep.log", "w"),  # noqa: SIM115
        )
        ids = results / "s" / "batches.json"
        try:
            deadline = time.monotonic() + 300
            while not (
                ids.is_file() and all(b["id"] for b in json.loads(ids.read_text())["batches"])
            ):
                assert proc.poll() is None, (tmp_path / "sweep.log").read_text()[-2000:]
                assert time.monotonic() < deadline, "no batch id recorded"
                time.sleep(0.1)
            while server.polls < 2:  # the sweep is waiting on the provider
                time.sleep(0.05)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        created = len(server.batches)
        assert created >= 1 and server.uploads == created
        hold.set()
        config = load_experiment(SWEEP, sets(server))
        log = run_sweep(config, cache_dir=cache, resume=results / "s", trials=3)
    assert log.summary.status == "done"
    state = BatchState.load(state_path(results / "s"))
    assert [b["id"] for b in state.batches[:created]] == list(server.batches)[:created]
    assert [b["round"] for b in state.batches] == [1, 2]
    assert set(server.submitted.values()) == {1}  # nothing submitted twice
    assert set(server.batch_requests.values()) == {1}
    assert sum(server.online.values()) == 0
    assert log.summary.stats.batch_verdicts == len(server.batch_requests)


# ---------------------------------------------------------------- provider errors

KEY = "sk-test-" + "k" * 40


@pytest.mark.parametrize(
    ("endpoint", "code", "call"),
    [
        ("upload", 401, lambda api: api.upload(b"{}\n")),
        ("create", 500, lambda api: api.create("file-1")),
        ("get", 404, lambda api: api.get("batch_9")),
        ("get", 500, lambda api: api.get("batch_9")),  # after the SDK's retries
        ("list", 500, lambda api: api.find("file-1")),
        ("content", 404, lambda api: api.content("file-1")),
    ],
)
def test_provider_errors_are_one_line_without_the_key(endpoint, code, call):
    with FakeBatchAPI(refuse={endpoint: code}) as server:
        client = ChatJudge(base_url=server.base_url, model="fake", api_key=KEY).client
        with pytest.raises(HarnessError) as err:
            call(BatchAPI(client))
        assert server.refused[endpoint] == (6 if code == 500 and endpoint != "create" else 1)
    msg = str(err.value)
    assert msg.startswith("batch API: ") and "\n" not in msg
    assert f"answered {code}: refused ({endpoint})" in msg
    assert KEY not in msg and "Bearer ***" in msg  # the fake echoes the key it was sent


def test_a_bad_id_or_no_endpoint_is_one_line(tmp_path):
    with FakeBatchAPI() as server:
        client = ChatJudge(base_url=server.base_url, model="fake", api_key=KEY).client
        with pytest.raises(HarnessError, match=r"^batch API: looking at batch : ValueError"):
            BatchAPI(client).get("")
    # the server is gone: nothing listens on its port any more
    with pytest.raises(HarnessError, match=r"^batch API: uploading .* did not answer"):
        BatchAPI(client, max_retries=0).upload(b"{}\n")


def test_a_refused_upload_stops_the_sweep_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeBatchAPI(refuse={"upload": 401}) as server:
        args = ["sweep", str(SWEEP), "--results-dir", str(tmp_path / "r"), "--trials", "2"]
        args += ["--cache-dir", str(tmp_path / "c"), "--batch"]
        for item in sets(server):
            args += ["--set", item]
        assert main(args) == 2
        assert server.refused["upload"] == 1 and not server.batches
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("harness: error:")]
    assert len(errors) == 1 and "Traceback" not in err and KEY not in err
    assert "batch API: uploading a batch file" in errors[0] and "answered 401" in errors[0]


@pytest.mark.parametrize(
    "extra,kwargs,says",
    [
        (["judge.base_url=", "judge.model="], {}, "OpenAI-compatible endpoint"),  # local judge
        (["judge.mode=listwise"], {}, "listwise judging is not batched"),
        ([], {"workers": 2}, "runs in one process"),
        ([], {"storage": "postgresql://u@127.0.0.1:1/db"}, "runs in one process"),
    ],
)
def test_a_batch_sweep_that_cannot_run_is_refused_before_its_folder(
    tmp_path, monkeypatch, extra, kwargs, says
):
    monkeypatch.delenv("HARNESS_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("HARNESS_JUDGE_MODEL", raising=False)
    with FakeBatchAPI() as server:
        config = load_experiment(SWEEP, [*sets(server), *extra])
        with pytest.raises(HarnessError, match=says):
            run_sweep(config, results_dir=tmp_path / "r", cache_dir=tmp_path / "c", **kwargs)
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())
