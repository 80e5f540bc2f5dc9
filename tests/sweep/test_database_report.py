"""A sweep stored in PostgreSQL is read by `harness report` like a folder sweep (#21), on the
real server of tests/postgres.py (skipped without PostgreSQL's binaries)."""

from __future__ import annotations

import json
import re

from harness.cli import main
from harness.config import load_experiment
from harness.log import read_run
from harness.report.html import script_json, sweep_page
from harness.stores.sweeps import SweepDatabase
from harness.sweep import run_sweep
from tests.conftest import DATA, ScriptedJudge
from tests.postgres import PASSWORD

SWEEP = DATA / "sweep.toml"


def page_data(html: str) -> dict:
    """The page's data, as the page embeds it."""
    m = re.search(r'<script type="application/json" id="page-data">(.*?)</script>', html, re.S)
    assert m, "no page data in the page"
    return json.loads(m.group(1))


def test_report_reads_a_postgres_sweep_like_a_folder_sweep(tmp_path, pg_url, capsys):
    results = tmp_path / "r"
    config = load_experiment(SWEEP, ["sweep.trials=3", "judge.concurrency=1"])
    log = run_sweep(
        config,
        results_dir=results,
        cache_dir=tmp_path / "c",
        storage=pg_url,
        name="pg-sweep",
        judge=ScriptedJudge(),
    )
    assert log.summary.status == "done"
    assert not (results / "pg-sweep" / "sweep.json").exists()  # the log is in the database

    out = tmp_path / "page.html"
    code = main(["report", "pg-sweep", "--storage", pg_url, "--out", str(out), "--format", "json"])
    printed = json.loads(capsys.readouterr().out)
    assert code == 0 and printed["kind"] == "sweep" and printed["out"] == str(out)
    html = out.read_text()
    assert PASSWORD not in html

    # The same page as one built from this machine's run folders of the same trials.
    db = SweepDatabase(pg_url)
    try:
        sweep = db.read_sweep("pg-sweep")
    finally:
        db.close()
    on_disk = {
        t.number: read_run(results / "pg-sweep" / "trials" / str(t.number))
        for t in sweep.trials
        if (results / "pg-sweep" / "trials" / str(t.number) / "header.json").is_file()
    }
    assert len(on_disk) == 3
    folder_like = sweep_page(sweep, on_disk)
    from_db = sweep_page(sweep, _runs(pg_url))
    assert script_json(from_db.to_json()) == script_json(folder_like.to_json())
    # the page written holds that data: every trial, and the questions of their runs
    embedded = page_data(html)
    assert "database" in embedded.pop("validation_note")  # labels need the trial folders
    expected = json.loads(script_json(from_db.to_json()))
    expected.pop("validation_note")
    assert embedded == expected
    # every trial, repeats too (a shared sweep's TPE draws its start-up settings from a
    # seed of each worker's own, so two can be the same setting: the repeat is not run)
    assert len(embedded["trials"]) == len(sweep.trials) and embedded["heatmap"]["questions"]
    assert sum(t["state"] != "repeat" for t in embedded["trials"]) == 3

    # Default place: this machine's folder of the sweep.
    assert main(["report", "pg-sweep", "--storage", pg_url, "--results-dir", str(results)]) == 0
    assert (results / "pg-sweep" / "report.html").is_file()


def _runs(url: str) -> dict:
    db = SweepDatabase(url)
    try:
        return db.read_runs("pg-sweep")
    finally:
        db.close()


def test_report_storage_must_be_a_database(tmp_path, capsys):
    code = main(["report", "x", "--storage", f"sqlite:///{tmp_path / 'o.db'}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "postgresql://" in err
