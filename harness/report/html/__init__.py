"""`harness report`: one self-contained, offline HTML page per run, sweep or comparison.

    data.py     pure functions: log records -> the page's data (what the page shows)
    figures.py  plotly figures from that data (Optuna's visualization for the search)
    render.py   the HTML document: escaped markup, inlined plotly.js, data as safe JSON
    assets.py   the page's style sheet and script

`report_run`, `report_sweep` and `report_compare` read the logs (through harness.log;
`report_database_sweep` a sweep in PostgreSQL, through harness.stores.sweeps),
build the page and write it, by default beside the log.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.log import HEADER, RunHeader, RunLog, SweepLog, read_run, read_sweep
from harness.report.html.data import Page, compare_page, run_page, sweep_page
from harness.report.html.figures import page_figures
from harness.report.html.render import render_page, script_json, write_page
from harness.secrets import redact_url, remember_url

REPORT_FILE = "report.html"
"""The page's name beside a run's or a sweep's log."""
COMPARE_FILE = "compare.html"
"""The page's name, in the first run's folder, for a comparison."""

__all__ = [
    "COMPARE_FILE",
    "REPORT_FILE",
    "WrittenReport",
    "compare_page",
    "page_figures",
    "render_page",
    "report_compare",
    "report_database_sweep",
    "report_run",
    "report_sweep",
    "run_page",
    "script_json",
    "sweep_page",
]


@dataclass(frozen=True)
class WrittenReport:
    """A page written: where, what of, how big and how long it took."""

    out: Path
    kind: str
    """run, sweep or compare."""
    size_bytes: int
    seconds: float
    """Wall time from reading the logs to the file on disk."""
    figures: int
    """Plots on the page."""
    validation: str
    """"included", or why the judge-against-labels section is empty."""

    def to_dict(self) -> dict[str, Any]:
        """Its JSON object (what `harness report --format json` prints)."""
        return {
            "out": str(self.out),
            "kind": self.kind,
            "size_bytes": self.size_bytes,
            "seconds": round(self.seconds, 3),
            "figures": self.figures,
            "validation": self.validation,
        }


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())


def _write(page: Page, out: Path, kind: str, started: float, note: str) -> WrittenReport:
    figures = page_figures(page)
    size = write_page(out, render_page(page, figures, _plotly_js()))
    return WrittenReport(out, kind, size, time.perf_counter() - started, len(figures), note)


def _qrels_for(qrels: str | os.PathLike[str] | None, header: RunHeader | None) -> Any:
    """(labels or None, note): the labels named on the command line (an error if they
    cannot be read) or in the experiment (a note if they are gone), as a function of a
    run: chunk labels apply only to runs cut as they were (`labels_for`)."""
    from harness.analysis.validate import labels_file

    path = qrels
    if path is None:
        path = header.data.get("qrels_file") if header is not None else None
        if not path:
            return None, "no labels given (harness report --qrels FILE, or questions.qrels)"
        if not Path(path).is_file():
            return None, f"the experiment's labels {path} are not on this machine"
    return labels_file(path), ""


def report_run(
    run_dir: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    qrels: str | os.PathLike[str] | None = None,
) -> WrittenReport:
    """Write the page of one run (default: report.html in its folder). With labels (`qrels`,
    or the experiment's questions.qrels) it holds `harness validate`'s agreement."""
    from harness.analysis import validate_run

    started = time.perf_counter()
    run = read_run(run_dir)
    labels, note = _qrels_for(qrels, run.header)
    validation = None
    if labels is not None:
        try:
            validation = validate_run(run, labels(run))
        except HarnessError as exc:
            note = str(exc)
    page = run_page(run, validation=validation, validation_note=note or None)
    target = Path(out) if out is not None else Path(run_dir) / REPORT_FILE
    return _write(page, target, "run", started, "included" if validation else note)


def _trial_runs(sweep: SweepLog) -> dict[int, RunLog]:
    """The run of every trial of a folder sweep whose run folder is on this machine."""
    runs: dict[int, RunLog] = {}
    for t in sweep.trials:
        # The recorded folder, or the trial's place in this sweep folder if it was moved.
        for folder in (
            Path(t.run_dir) if t.run_dir else None,
            sweep.sweep_dir / "trials" / str(t.number),
        ):
            if folder is not None and (folder / HEADER).is_file():
                runs[t.number] = read_run(folder)
                break
    return runs


def report_sweep(
    sweep_dir: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    qrels: str | os.PathLike[str] | None = None,
) -> WrittenReport:
    """Write the page of a sweep (default: report.html in its folder), reading every
    trial's run folder; with labels it holds `harness validate`'s ranking comparison."""
    from harness.analysis import validate_sweep

    started = time.perf_counter()
    sweep = read_sweep(sweep_dir)
    runs = _trial_runs(sweep)
    first = next(iter(runs.values())).header if runs else None
    labels, note = _qrels_for(qrels, first)
    validation = None
    if labels is not None:
        try:
            validation = validate_sweep(sweep_dir, labels)
        except HarnessError as exc:
            note = str(exc)
    page = sweep_page(sweep, runs, validation=validation, validation_note=note or None)
    target = Path(out) if out is not None else Path(sweep_dir) / REPORT_FILE
    return _write(page, target, "sweep", started, "included" if validation else note)


def report_database_sweep(
    storage: str,
    name: str,
    *,
    out: str | os.PathLike[str] | None = None,
    results_dir: str | os.PathLike[str] = "results",
) -> WrittenReport:
    """Write the page of sweep `name` stored in the PostgreSQL database `storage`, as
    `report_sweep` writes a folder sweep's: the summary, the trials and their run logs
    all come from the database, whichever machines ran them (default page:
    RESULTS_DIR/NAME/report.html, this machine's folder of the sweep)."""
    from harness.stores.postgres import is_postgres
    from harness.stores.sweeps import SweepDatabase

    if not is_postgres(storage):
        raise HarnessError(f"--storage: expected a postgresql:// URL, got {redact_url(storage)}")
    started = time.perf_counter()
    remember_url(storage)
    db = SweepDatabase(storage)
    try:
        sweep, runs = db.read_sweep(name), db.read_runs(name)
    finally:
        db.close()
    note = "the judge against labels reads trial folders: not shown for a sweep in a database"
    page = sweep_page(sweep, runs, validation=None, validation_note=note)
    target = Path(out) if out is not None else Path(results_dir) / name / REPORT_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    return _write(page, target, "sweep", started, note)


def report_compare(
    run_dirs: Sequence[str | os.PathLike[str]],
    *,
    out: str | os.PathLike[str] | None = None,
    k: int | None = None,
    metric: str | None = None,
) -> WrittenReport:
    """Write the page of a comparison (default: compare.html in the first run's folder):
    what `harness compare` prints, with every graded chunk before and after. The changed
    questions are read on `metric` (default: the first run's objective, as `compare`)."""
    from harness.analysis import compare_runs

    started = time.perf_counter()
    runs = [read_run(d) for d in run_dirs]
    comp = compare_runs(runs, k=k, change_metric=metric)
    page = compare_page(runs, comp, change_metric=comp.change_metric)
    target = Path(out) if out is not None else Path(run_dirs[0]) / COMPARE_FILE
    return _write(page, target, "compare", started, "not shown for a comparison")
