"""Sweeps on tests/data with a scripted judge: seeded runs, resume, pruning, failures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from harness.cli import main
from harness.config import load_experiment
from harness.log import read_run, read_sweep
from harness.stores import VerdictCache, verdict_key
from harness.sweep import SearchSpace, run_sweep
from tests.conftest import DATA, ScriptedJudge

SWEEP = DATA / "sweep.toml"
ROOT = Path(__file__).resolve().parents[2]


def params_of(log):
    return [(t.number, t.state, t.params) for t in log.trials]


def ran(log):
    """The trials that count against the budget: all but repeats (a complete trial's
    settings proposed again, not run)."""
    return [t for t in log.trials if t.state != "repeat"]


def test_seeded_sweep_writes_its_log_and_is_reproducible(tmp_path):
    config = load_experiment(SWEEP)
    judge = ScriptedJudge()
    log = run_sweep(config, results_dir=tmp_path / "a", cache_dir=tmp_path / "cache", judge=judge)
    s = log.summary.to_dict()
    assert s["status"] == "done"
    assert s["objective"] == ["mrr@k"] and s["directions"] == ["maximize"]
    assert len(ran(log)) == 5
    assert all(t.state in ("complete", "pruned") for t in ran(log))
    # trial 0 is the experiment's own settings
    assert log.trials[0].params == {
        "chunk_size": 200,
        "chunk_overlap": 20,
        "k": 3,
        "reranker": "none",
        "embedder": "local-minilm",
    }
    for t in log.trials:
        assert t.params["chunk_overlap"] < t.params["chunk_size"]
        run_dir = Path(t.run_dir)
        assert (run_dir / "header.json").is_file() and run_dir.parent.name == "trials"
        header = json.loads((run_dir / "header.json").read_text())
        assert header["config"]["chunking"]["chunk_size"] == t.params["chunk_size"]
        assert header["ks"][-1] == t.params["k"]
        if t.state == "complete":
            assert t.values == [header["metrics"][f"mrr@{t.params['k']}"]]
    best = s["best"][0]
    complete = [t for t in log.trials if t.state == "complete"]
    assert best["values"][0] == max(t.values[0] for t in complete)
    st = s["stats"]
    assert st["judge_calls"] == len(judge.calls)
    assert st["distinct_verdicts"] <= st["judge_calls"] + st["judge_cache_hits"]
    assert st["judge_calls"] <= st["distinct_verdicts"]  # never paid twice for one verdict
    assert st["naive_calls"] > st["judge_calls"]
    assert (log.sweep_dir / "optuna.db").is_file()

    # Same seed, fresh folder, warm cache: the same trials, and nothing paid.
    judge2 = ScriptedJudge()
    again = run_sweep(
        config, results_dir=tmp_path / "b", cache_dir=tmp_path / "cache", judge=judge2
    )
    assert params_of(again) == params_of(log)
    assert judge2.calls == []
    assert again.summary.to_dict()["stats"]["judge_calls"] == 0


def test_conditional_overlap_never_reaches_chunk_size():
    config = load_experiment(
        SWEEP,
        [
            "sweep.space.chunk_size=[40, 60, 100]",
            "sweep.space.chunk_overlap={low=0, high=200, step=30}",
        ],
    )
    for sampler in (optuna.samplers.TPESampler(seed=1), optuna.samplers.BruteForceSampler(seed=1)):
        study = optuna.create_study(sampler=sampler)
        seen: list[tuple[int, int]] = []

        def objective(trial, seen=seen):
            p = SearchSpace(config).suggest(trial)
            seen.append((p["chunk_size"], p["chunk_overlap"]))
            return 0.0

        study.optimize(objective, n_trials=60)
        assert seen and all(0 <= o < size and o % 30 == 0 for size, o in seen)
        assert {size for size, _ in seen} == {40, 60, 100}
    assert (100, 90) in seen  # the grid reaches the top of each size's range


def test_failed_trials_are_recorded_and_the_sweep_goes_on(tmp_path):
    class FailsOnBigChunks(ScriptedJudge):
        def grade(self, question, chunk_text, criterion, criterion_text):
            if len(chunk_text) > 200:
                raise RuntimeError("judge fell over on a long chunk")
            return super().grade(question, chunk_text, criterion, criterion_text)

    config = load_experiment(SWEEP, ["sweep.trials=6", "sweep.space.chunk_size=[120, 300]"])
    log = run_sweep(
        config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=FailsOnBigChunks()
    )
    failed = [t for t in log.trials if t.state == "failed"]
    ok = [t for t in log.trials if t.state in ("complete", "pruned")]
    assert failed and ok
    assert all(t.params["chunk_size"] == 300 for t in failed)
    assert all("judge fell over" in t.error for t in failed)
    assert log.summary.to_dict()["status"] == "done" and log.summary.to_dict()["counts"][
        "failed"
    ] == len(failed)


def test_tpe_does_not_run_a_setting_twice_nor_count_its_repeats(tmp_path, capsys):
    """TPE proposes settings it has tried (4 to 5 of 20 trials on spaces a few times
    larger than the budget, median over seeds). Such a proposal is not run: it is logged
    as a repeat pointing at its twin, the sampler is told the twin's values, and it does
    not count against the budget, so the sweep tries as many settings as it was asked
    for. Before, each repeat ran again and the recommendation listed it as a trial that
    cannot be told apart from its own twin."""
    from harness.log import read_trials

    # 24 settings for 12 trials: TPE (a space no larger than the trials runs as a grid)
    config = load_experiment(SWEEP, ["sweep.trials=12", "sweep.pruner=none"])
    log = run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge())
    trials = read_trials(log.sweep_dir)
    complete = {t.number: t for t in trials if t.state == "complete"}
    repeats = [t for t in trials if t.state == "repeat"]
    assert len(complete) == 12
    assert len({json.dumps(t.params, sort_keys=True) for t in complete.values()}) == 12
    assert len(repeats) >= 2, "seed 7's TPE proposes tried settings on this space"
    for r in repeats:
        twin = next(t for t in complete.values() if t.params == r.params)
        assert r.run_dir == twin.run_dir and r.values == twin.values
        assert r.error == f"trial {twin.number}'s settings: not run again"
        assert not (log.sweep_dir / "trials" / str(r.number)).exists()  # nothing ran
    summary = log.summary.to_dict()
    assert summary["counts"]["repeats"] == len(repeats)
    repeat_numbers = {r.number for r in repeats}
    for best in log.summary.best:
        assert best.number in complete
        assert not repeat_numbers & set(best.indistinguishable or [])
    assert main(["show", str(log.sweep_dir)]) == 0
    out = capsys.readouterr().out
    assert f"{len(repeats)} repeats not run" in out and "  repeat  " in out
    # a repeat's number leads to the trial that ran its settings
    r = repeats[0]
    twin = Path(r.run_dir).name
    assert main(["show", f"{log.sweep_dir}:{r.number}"]) == 2
    err = capsys.readouterr().err
    assert f"trial {r.number} is a repeat" in err and f"ran as {log.sweep_dir}:{twin}" in err
    from harness.sweep.export import choose_trial

    chosen, why = choose_trial(read_sweep(log.sweep_dir), r.number)
    assert str(chosen.number) == twin and f"trial {r.number} repeats" in why


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_a_sampler_that_proposes_only_tried_settings_still_ends(tmp_path, monkeypatch):
    """Repeats are free up to as many as the budget: a sampler stuck on one setting runs
    it once and stops after `trials` repeats."""
    from harness.sweep import study

    fixed = {"chunk_size": 200, "chunk_overlap": 20, "k": 3}
    monkeypatch.setattr(
        study,
        "_sampler",
        lambda config, parallel=False: optuna.samplers.PartialFixedSampler(
            fixed, optuna.samplers.RandomSampler(seed=0)
        ),
    )
    config = load_experiment(SWEEP, ["sweep.trials=4", "sweep.pruner=none"])
    log = run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge())
    states = [t.state for t in log.trials]
    assert states == ["complete"] + ["repeat"] * 4


def test_shared_budget_counts_repeats_only_past_the_budget():
    from harness.sweep.shared import REPEAT_ATTR, budget_used

    dist = {"k": optuna.distributions.CategoricalDistribution([2, 3])}

    def trial(state, repeat=False):
        return optuna.trial.create_trial(
            state=state,
            value=0.5 if state == optuna.trial.TrialState.COMPLETE else None,
            params={"k": 2},
            distributions=dist,
            user_attrs={REPEAT_ATTR: 0} if repeat else {},
        )

    done = optuna.trial.TrialState.COMPLETE
    two = [trial(done), trial(optuna.trial.TrialState.PRUNED)]
    assert budget_used(two, 3) == 2
    assert budget_used([*two, trial(done, repeat=True)], 3) == 2
    assert budget_used([*two, *[trial(done, repeat=True)] * 5], 3) == 4  # 2 past the budget


def test_pruning_stops_a_hopeless_setting_early(tmp_path):
    # chunk_size 25 or 30 cuts every answer apart: no chunk is ever complete, mrr is 0.
    # (12 settings for 8 trials: TPE; a space no larger than the trials runs as a grid)
    config = load_experiment(
        SWEEP,
        [
            "sweep.trials=8",
            "sweep.space.chunk_size=[25, 30, 200, 300]",
            "sweep.space.k=[2, 3, 4]",
            "sweep.space.chunk_overlap={low=0, high=0, step=1}",
            "sweep.batches=[0.34, 0.67, 1.0]",
        ],
    )
    log = run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge())
    pruned = [t for t in log.trials if t.state == "pruned"]
    assert pruned, params_of(log)
    assert all(t.params["chunk_size"] < 100 for t in pruned)
    assert all(t.questions_done < 6 for t in pruned)  # stopped before the last batch
    header = json.loads((Path(pruned[0].run_dir) / "header.json").read_text())
    assert header["status"] == "pruned"
    lines = (Path(pruned[0].run_dir) / "questions.jsonl").read_text().splitlines()
    assert len(lines) == pruned[0].questions_done  # the questions it did finish are kept
    # a pruned trial's settings proposed again are a repeat, pruned as its twin was
    ran = {t.number: t for t in log.trials if t.state in ("complete", "pruned")}
    assert len({json.dumps(t.params, sort_keys=True) for t in ran.values()}) == len(ran)
    again = [t for t in log.trials if t.state == "repeat" and t.values is None]
    assert again, params_of(log)
    for r in again:
        twin = next(t for t in ran.values() if t.params == r.params)
        assert twin.state == "pruned" and r.run_dir == twin.run_dir
        assert r.error == f"trial {twin.number}'s settings: pruned, not run again"
        assert not (log.sweep_dir / "trials" / str(r.number)).exists()


def test_two_objectives_give_a_pareto_front(tmp_path):
    config = load_experiment(
        SWEEP, ["sweep.objective=['mrr@k', 'context_chars@k']", "sweep.trials=6"]
    )
    log = run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge())
    s = log.summary.to_dict()
    assert s["directions"] == ["maximize", "minimize"]
    front = s["best"]
    assert front
    complete = [t for t in log.trials if t.state == "complete"]
    for f in front:  # nothing complete dominates a front member
        for t in complete:
            better_or_equal = t.values[0] >= f["values"][0] and t.values[1] <= f["values"][1]
            assert not (better_or_equal and t.values != f["values"])


class InterruptAfter(ScriptedJudge):
    """Raises KeyboardInterrupt (as Ctrl-C would) on the n-th grade call."""

    def __init__(self, n):
        super().__init__()
        self.n = n
        self.paid = []

    def grade(self, question, chunk_text, criterion, criterion_text):
        if len(self.paid) + 1 >= self.n:
            raise KeyboardInterrupt
        verdict = super().grade(question, chunk_text, criterion, criterion_text)
        self.paid.append((question, chunk_text, criterion))
        return verdict


def test_resume_after_ctrl_c_loses_nothing_and_pays_nothing_twice(tmp_path):
    # Complete judging: the call counts below are those of every chunk judged.
    config = load_experiment(SWEEP, ["judge.concurrency=1", "sweep.trials=4", "judge.lazy=false"])
    first = InterruptAfter(40)  # trials 0 and 1 pay 27 calls, trial 2 pays 25 more
    with pytest.raises(KeyboardInterrupt):
        run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=first)
    (sweep_dir,) = tmp_path.glob("tiny-sweep-sweep-*")
    before = read_sweep(sweep_dir)
    assert before.summary.to_dict()["status"] == "interrupted"
    finished = [t for t in before.trials if t.state in ("complete", "pruned")]
    cut = [t for t in before.trials if t.state == "interrupted"]
    assert finished and len(cut) == 1

    second = ScriptedJudge()
    after = run_sweep(config, cache_dir=tmp_path / "c", resume=sweep_dir, judge=second)
    assert after.summary.to_dict()["status"] == "done"
    # Finished trials are kept as they were.
    by_number = {t.number: t for t in after.trials}
    for t in finished:
        assert by_number[t.number] == t
    assert sum(1 for t in after.trials if t.state in ("complete", "pruned")) == 4
    # The cut-short trial's settings ran again as a new trial.
    assert any(
        t.params == cut[0].params and t.number > cut[0].number
        for t in after.trials
        if t.state in ("complete", "pruned")
    )
    # No verdict paid twice.
    assert not set(first.paid) & set(second.calls)


KILL_SCRIPT = """
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from tests.conftest import ScriptedJudge
from harness.config import load_experiment
from harness.sweep import run_sweep

# Pays verdicts until a trial is logged, then two more, and hangs: the test kills the
# process mid-trial, whatever the machine's speed.
class Slow(ScriptedJudge):
    later = 0
    def grade(self, *a):
        if any(p.read_text().strip() for p in Path({results!r}).glob("*/trials.jsonl")):
            Slow.later += 1
            if Slow.later > 2:
                Path({marker!r}).touch()
                time.sleep(600)
        return super().grade(*a)

config = load_experiment({sweep!r}, ["judge.concurrency=1", "sweep.trials=4"])
run_sweep(config, results_dir={results!r}, cache_dir={cache!r}, judge=Slow())
"""


def test_resume_after_kill_9(tmp_path):
    results, cache, marker = tmp_path / "r", tmp_path / "c", tmp_path / "hanging"
    script = KILL_SCRIPT.format(
        root=str(ROOT),
        sweep=str(SWEEP),
        results=str(results),
        cache=str(cache),
        marker=str(marker),
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if marker.exists():  # a trial is logged and a later one is mid-way: kill -9
                break
            assert proc.poll() is None, "the sweep ended before it could be killed"
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    (sweep_dir,) = results.iterdir()
    before = read_sweep(sweep_dir)
    assert before.summary.to_dict()["status"] == "running"  # it never got to say otherwise
    finished = [t for t in before.trials if t.state in ("complete", "pruned")]
    assert finished
    vc = VerdictCache(cache / "verdicts.sqlite")
    paid_before = len(vc)
    assert paid_before > 0

    judge = ScriptedJudge()
    after = run_sweep(
        load_experiment(SWEEP, ["judge.concurrency=1", "sweep.trials=4"]),
        cache_dir=cache,
        resume=sweep_dir,
        judge=judge,
    )
    assert after.summary.to_dict()["status"] == "done"
    by_number = {t.number: t for t in after.trials}
    for t in finished:
        assert by_number[t.number] == t
    assert sum(1 for t in after.trials if t.state in ("complete", "pruned")) == 4
    # Every verdict the killed process paid for came from the cache, not the judge again.
    for q, chunk, crit in judge.calls:
        criteria = load_experiment(SWEEP).judge.criteria
        assert vc.get(verdict_key(judge.identity(), getattr(criteria, crit), q, chunk)) is not None
    assert len(vc) == paid_before + len(set(judge.calls))


def test_list_compare_and_show_read_what_sweep_wrote(tmp_path, capsys):
    config = load_experiment(SWEEP, ["sweep.trials=3", "sweep.pruner=none"])
    log = run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge())
    assert main(["list", str(tmp_path), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["kind"] == "sweep" and rows[0]["counts"]["complete"] == 3
    assert rows[0]["best_trial"] == log.summary.to_dict()["best"][0]["number"]

    a, b = (str(Path(t.run_dir)) for t in log.trials[:2])
    assert main(["compare", a, f"{log.sweep_dir}:1", "--format", "json"]) == 0
    comp = json.loads(capsys.readouterr().out)
    assert comp["shared_questions"] == 6
    assert {d["metric"] for d in comp["differences"]} >= {
        f"mrr@{comp['k']}",
        f"hit_rate@{comp['k']}",
    }
    assert main(["compare", a, b]) == 0
    out = capsys.readouterr().out
    assert "paired bootstrap" in out and "[1]-[0]" in out
    # one column for the values, however long a metric's name; counts as whole numbers
    k = comp["k"]
    table = out.split("\n\n")[0].splitlines()
    rows = [line for line in table if line.split(" ", 1)[0].endswith(f"@{k}")]
    assert any(r.startswith(f"relevancy_mrr_found@{k}") for r in rows)
    # no row of dashes for a metric only an extractive judge or source spans give
    assert not any(r.startswith(("relevant_share@", "source_")) for r in rows)
    assert len({len(r) for r in rows}) == 1  # cells are right-aligned: equal rows
    failures = next(r for r in rows if r.startswith(f"failures@{k}")).split()[1:]
    assert all(v.isdigit() for v in failures), failures
    chars = next(x for x in out.splitlines() if x.startswith(f"[1]-[0] context_chars@{k}"))
    assert "." not in chars, chars  # a difference in characters, in whole characters

    assert main(["show", str(log.sweep_dir)]) == 0
    assert "best: trial" in capsys.readouterr().out
    assert main(["show", b, "--question", "hive"]) == 0
    assert "[hive]" in capsys.readouterr().out
    assert main(["list", str(tmp_path)]) == 0
    assert "sweep" in capsys.readouterr().out


def test_sweep_dry_run_bounds_what_the_sweep_pays(tmp_path, capsys):
    """A grid over the whole space against an endpoint that says yes to everything pays
    exactly the bound: every open pair once, "complete" included."""
    from harness.sweep import SearchSpace, estimate_sweep
    from harness.testing import FakeOpenAI

    with FakeOpenAI() as server:
        overrides = [
            f"judge.base_url={server.base_url}",
            "judge.model=fake",
            "judge.price_prompt_per_mtok=1",
            "sweep.sampler=grid",
            "sweep.pruner=none",
            "sweep.baseline=false",
            "judge.lazy=false",  # the complete bound; tests/judge/test_lazy.py has the lazy one
        ]
        config = load_experiment(SWEEP, overrides)
        space = SearchSpace(config).enumerate()
        assert len(space) == 3 * 4 * 2  # sizes x overlaps 0..60 (all below 120) x k
        cache = tmp_path / "cache"
        est = estimate_sweep(config, cache_dir=cache, trials=len(space))
        assert server.requests == 0 and est["exact_pairs"]
        assert est["settings_in_space"] == len(space)
        assert est["judge_calls_max"] < est["no_cache_calls_max"]
        assert est["one_trial_calls_max"] == 2 * 6 * 3  # 6 questions x k=3, both criteria
        assert est["cost_usd_max"] > 0
        log = run_sweep(config, results_dir=tmp_path, cache_dir=cache, trials=len(space))
        visited = [t.params for t in log.trials]
        assert sorted(map(str, visited)) == sorted(map(str, space))  # the grid is the space
        assert (
            log.summary.to_dict()["stats"]["judge_calls"]
            == est["judge_calls_max"]
            == server.requests
        )
        # Fewer trials: the costliest settings bound it; afterwards nothing is left to pay.
        assert estimate_sweep(config, cache_dir=cache, trials=2)["judge_calls_max"] == 0
        args = ["sweep", str(SWEEP), "--dry-run", "--cache-dir", str(cache)]
        for o in overrides:
            args += ["--set", o]
        assert main(args) == 0
        out = capsys.readouterr().out
        assert "judge calls: at most 0" in out and "chunk_size=120" in out
    fresh = estimate_sweep(config, cache_dir=tmp_path / "other", trials=2)
    assert fresh["judge_calls_max"] == 2 * 36  # the two costliest settings, nothing cached


def test_lazy_sweep_pays_within_its_dry_run_bound_and_less_than_complete(tmp_path):
    """A lazy grid sweep (the sweep default for mrr@k) pays at most the dry run's lazy
    bound, and no more than the complete bound."""
    from harness.sweep import SearchSpace, estimate_sweep
    from harness.testing import FakeOpenAI

    with FakeOpenAI() as server:
        config = load_experiment(
            SWEEP,
            [
                f"judge.base_url={server.base_url}",
                "judge.model=fake",
                "sweep.sampler=grid",
                "sweep.pruner=none",
                "sweep.baseline=false",
            ],
        )
        n = len(SearchSpace(config).enumerate())
        est = estimate_sweep(config, cache_dir=tmp_path / "cache", trials=n)
        assert est["lazy"] is True
        assert est["lazy_judge_calls_max"] <= est["judge_calls_max"]
        log = run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "cache", trials=n)
        paid = log.summary.to_dict()["stats"]["judge_calls"]
        assert paid == server.requests
        assert 0 < paid <= est["lazy_judge_calls_max"]
        # the fake endpoint says yes: every question settles at rank 1, one pair each
        assert paid < est["judge_calls_max"]


def test_a_bad_calibration_stops_a_sweep_before_its_folder(tmp_path):
    """judge.calibration is read before the sweep folder is made: one line, exit 2."""
    from tests.cli.test_cli import assert_user_error, harness

    path = tmp_path / "cal.json"
    path.write_text(
        '{"calibration_version": 2, "criteria": {"complete": {"a": "2", "b": 0, "n": 9, "positives": 3}}}'
    )
    results = tmp_path / "results"
    proc = harness(
        "sweep",
        str(SWEEP),
        "--set",
        f"judge.calibration={path}",
        "--set",
        "judge.base_url=http://127.0.0.1:9/v1",
        "--set",
        "judge.model=fake",
        "--results-dir",
        str(results),
        "--cache-dir",
        str(tmp_path / "c"),
    )
    assert proc.returncode == 2
    assert_user_error(proc, str(path), "criteria.complete.a")
    assert not results.exists() or not any(results.iterdir())


def test_a_shared_worker_lets_the_next_sample_only_once_its_trial_has_settings(
    tmp_path, monkeypatch
):
    """The slot lock is released after the trial's settings are in the study. A worker
    sampling while another's running trial had none yet could take the same grid point
    (a shared grid of 12 once finished with 11 settings)."""
    from harness.sweep import shared, study

    config = load_experiment(SWEEP, ["sweep.sampler=grid", "sweep.trials=4"])
    running_at_release: list[list[dict]] = []

    class WatchedLock(shared.SlotLock):
        def __init__(self, url: str, name: str, sweep_dir: Path) -> None:
            super().__init__(url, name, sweep_dir)
            self.name, self.storage = name, shared.journal_storage(sweep_dir)

        def release(self) -> None:
            if self._held:
                s = optuna.load_study(
                    study_name=self.name,
                    storage=shared.optuna_storage(
                        self.storage, heartbeat_s=60, on_stale=lambda *_: None
                    ),
                )
                running = s.get_trials(states=(optuna.trial.TrialState.RUNNING,))
                running_at_release.append([t.params for t in running])
            super().release()

    def one_worker_here(sweep, worker_argv, workers, remaining):
        run_sweep(
            config,
            results_dir=tmp_path,
            cache_dir=tmp_path / "cache",
            join=sweep.dir.name,
            judge=ScriptedJudge(),
        )

    monkeypatch.setattr(shared, "SlotLock", WatchedLock)
    monkeypatch.setattr(study, "_run_local_workers", one_worker_here)
    log = run_sweep(
        config,
        results_dir=tmp_path,
        cache_dir=tmp_path / "cache",
        workers=2,
        worker_argv=lambda name: [],
        judge=ScriptedJudge(),
    )
    assert log.summary.status == "done"
    # each trial's start let the lock go with the trial running, and its settings chosen
    # (the last release ends the budget's count, with nothing running)
    assert running_at_release[-1] == []
    assert len(running_at_release[:-1]) == 4
    assert all(len(r) == 1 and r[0] for r in running_at_release[:-1])
    finished = [json.dumps(t.params, sort_keys=True) for t in log.trials]
    assert len(finished) == len(set(finished)) == 4


def test_resume_after_a_kill_between_a_trials_line_and_the_studys_tell(tmp_path):
    # kill -9 after trials.jsonl logged trial 1 complete, before Optuna stored its end:
    # the study still says RUNNING. The folder's line is the truth, and resume tells it.
    import sqlite3

    config = load_experiment(SWEEP, ["judge.concurrency=1", "sweep.trials=2"])
    run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge())
    (sweep_dir,) = tmp_path.glob("tiny-sweep-sweep-*")
    logged = {t.number: t for t in read_sweep(sweep_dir).trials}
    assert logged[1].state == "complete"
    with sqlite3.connect(sweep_dir / "optuna.db") as db:
        (trial_id,) = db.execute("SELECT trial_id FROM trials WHERE number = 1").fetchone()
        db.execute("DELETE FROM trial_values WHERE trial_id = ?", (trial_id,))
        db.execute(
            "UPDATE trials SET state = 'RUNNING', datetime_complete = NULL WHERE trial_id = ?",
            (trial_id,),
        )
    more = load_experiment(SWEEP, ["judge.concurrency=1", "sweep.trials=3"])
    after = run_sweep(more, cache_dir=tmp_path / "c", resume=sweep_dir, judge=ScriptedJudge())
    assert after.summary.to_dict()["status"] == "done"
    by_number = {t.number: t for t in after.trials}
    assert by_number[1] == logged[1]  # kept as logged, not run again
    study = optuna.load_study(
        study_name=sweep_dir.name, storage=f"sqlite:///{sweep_dir / 'optuna.db'}"
    )
    told = study.trials[1]
    assert told.state == optuna.trial.TrialState.COMPLETE
    assert told.values == logged[1].values


def test_a_sweeps_end_warning_is_in_sweep_json_show_and_the_report(tmp_path, capsys, monkeypatch):
    # the warning itself (source labels and the judge pick different winners) is tested in
    # tests/generate; here: once raised, it outlives the log line
    from harness.report.html import page_figures, render_page, sweep_page
    from harness.sweep import book

    said = "source metrics pick trial 0 but the judge picks trial 1"
    monkeypatch.setattr(book, "source_judge_disagreement", lambda trials: said)
    config = load_experiment(SWEEP, ["sweep.trials=2", "sweep.pruner=none"])
    log = run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge())
    assert log.summary.warnings == [said]
    assert json.loads((log.sweep_dir / "sweep.json").read_text())["warnings"] == [said]
    assert main(["show", str(log.sweep_dir)]) == 0
    assert f"warning: {said}" in capsys.readouterr().out
    runs = {t.number: read_run(t.run_dir) for t in log.trials}
    page = sweep_page(log, runs)
    assert f"warning: {said}" in render_page(page, page_figures(page), "")


def test_a_sweep_without_warnings_writes_none(tmp_path):
    config = load_experiment(SWEEP, ["sweep.trials=1", "sweep.pruner=none"])
    log = run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge())
    assert log.summary.warnings == []
    assert "warnings" not in json.loads((log.sweep_dir / "sweep.json").read_text())


def test_a_space_no_larger_than_the_trials_runs_as_a_grid_each_setting_once(tmp_path, capsys):
    """TPE repeats settings on a small space (20 trials of 8 settings) and may miss some: the
    sweep runs the grid instead, says why in sweep.json, show and the dry run, and a resume
    asking for more trials runs nothing again."""
    overrides = [
        "sweep.space.chunk_size=[120, 200]",
        "sweep.space.chunk_overlap={low=0, high=20, step=20}",
        "sweep.trials=20",
        "sweep.pruner=none",
    ]
    config = load_experiment(SWEEP, overrides)
    assert config.sweep.sampler == "tpe"
    space = SearchSpace(config).enumerate()
    assert len(space) == 2 * 2 * 2  # sizes x overlaps x k
    cache = tmp_path / "cache"
    log = run_sweep(config, results_dir=tmp_path, cache_dir=cache, judge=ScriptedJudge())
    visited = [t.params for t in log.trials]
    assert sorted(map(str, visited)) == sorted(map(str, space))  # each setting exactly once
    s = log.summary.to_dict()
    assert s["sampler"]["name"] == "grid" and "holds 8 settings" in s["sampler"]["reason"]
    assert s["n_trials_requested"] == 8 and s["status"] == "done"
    assert main(["show", str(log.sweep_dir)]) == 0
    out = capsys.readouterr().out
    assert "sampler grid" in out and "grid: the space holds 8 settings" in out
    assert main(["report", str(log.sweep_dir)]) == 0
    capsys.readouterr()
    page = (log.sweep_dir / "report.html").read_text()
    assert "grid: the space holds 8 settings" in page
    again = run_sweep(
        config,
        results_dir=tmp_path,
        cache_dir=cache,
        trials=30,
        resume=log.sweep_dir,
        judge=ScriptedJudge(),
    )
    assert len(again.trials) == 8 and again.summary.sampler.name == "grid"
    # the dry run says the same; a larger space than the trials stays TPE
    args = ["sweep", str(SWEEP), "--dry-run", "--cache-dir", str(cache)]
    assert main([*args, *[a for o in overrides for a in ("--set", o)]]) == 0
    out = capsys.readouterr().out
    assert out.startswith("dry run: 8 trials (grid) over 8 settings\n  grid: the space holds 8")
    assert main([*args, "--trials", "5"]) == 0
    assert capsys.readouterr().out.startswith("dry run: 5 trials (tpe) over 24 settings\n")


def test_a_sweep_continues_only_with_the_search_it_started_with(tmp_path, capsys):
    """Resumed or joined with an experiment file, a sweep keeps its space, objective and
    sampler: another is refused in one line naming sweep.json (Optuna would fail every
    trial whose choices changed); the same file, read back as sweep.json records it
    (lists, not tuples), and the file without --set, continue."""
    from harness.sweep.study import _check_same_sweep

    config = load_experiment(SWEEP, ["sweep.trials=2"])
    log = run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge())
    recorded = read_sweep(log.sweep_dir).summary
    _check_same_sweep(recorded, config, "x", "hint")  # the same file passes
    common = ["--cache-dir", str(tmp_path / "c"), "--trials", "3"]
    for change in ("sweep.space.k=[2, 3, 4]", 'sweep.objective=["hit_rate@k"]'):
        code = main(["sweep", str(SWEEP), "--resume", str(log.sweep_dir), "--set", change, *common])
        assert code == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert f"{log.sweep_dir / 'sweep.json'}: sweep " in err
        assert "searched another space, objective or sampler" in err
        assert "resume it without an experiment file" in err
    assert len(read_sweep(log.sweep_dir).trials) == 2  # nothing ran
    again = run_sweep(
        config,
        results_dir=tmp_path,
        cache_dir=tmp_path / "c",
        trials=3,
        resume=log.sweep_dir,
        judge=ScriptedJudge(),
    )
    assert len(ran(again)) == 3
