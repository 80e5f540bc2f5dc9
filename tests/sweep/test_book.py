"""A sweep's bookkeeping is linear: a trial's end reads no earlier trial's log."""

from __future__ import annotations

from harness.config import load_experiment
from harness.log import read_run as real_read_run
from harness.sweep import book, logs, run_sweep
from tests.conftest import DATA, ScriptedJudge

SWEEP = DATA / "sweep.toml"


def test_no_trial_end_rereads_earlier_trials(tmp_path, monkeypatch):
    reads: list[str] = []

    def counting_read_run(folder):
        reads.append(str(folder))
        return real_read_run(folder)

    monkeypatch.setattr(logs, "read_run", counting_read_run)
    monkeypatch.setattr(book, "read_run", counting_read_run)
    config = load_experiment(SWEEP, ["sweep.trials=8", "sweep.pruner=none"])
    log = run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge())
    assert len([t for t in log.trials if t.state != "repeat"]) == 8  # repeats are free
    # the runs come back from run_experiment in memory: nothing is read again
    assert len(reads) <= len([t for t in log.trials if t.state not in ("complete", "pruned")])
    s = log.summary
    assert s.best and s.best[0].indistinguishable is not None
    assert s.stats.judge_calls > 0 and s.stats.distinct_verdicts >= s.stats.judge_calls


def test_resume_reads_each_earlier_trial_once(tmp_path, monkeypatch):
    config = load_experiment(SWEEP, ["sweep.trials=3", "sweep.pruner=none"])
    first = run_sweep(config, results_dir=tmp_path, cache_dir=tmp_path / "c", judge=ScriptedJudge())
    reads: list[str] = []

    def counting_read_run(folder):
        reads.append(str(folder))
        return real_read_run(folder)

    monkeypatch.setattr(book, "read_run", counting_read_run)
    again = run_sweep(
        config,
        cache_dir=tmp_path / "c",
        trials=5,
        resume=first.sweep_dir,
        judge=ScriptedJudge(),
    )
    # a resumed TPE draws its random start-up settings from the same seed again: those
    # are repeats, not run and not counted
    assert len([t for t in again.trials if t.state != "repeat"]) == 5
    assert sorted(reads) == sorted({t.run_dir for t in first.trials})
    # the summary over all five agrees with one computed from scratch
    fresh = book.SweepBook(tuple(config.sweep.objective))
    fresh.add_from_disk(again.trials)
    assert fresh.best() == again.summary.best
    assert fresh.sweep_stats() == again.summary.stats
