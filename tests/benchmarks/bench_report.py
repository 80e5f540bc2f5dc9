"""Benchmark and screenshots of `harness report`.

    make bench-report    a 20-trial, 40-question sweep of the quick-start: page sizes and
                         the time to write each page (sweep, one trial, a comparison)
    make screenshots     the same, plus the quick-start run (first 12 questions, judged by
                         the local model) and a comparison of it with 400-character
                         chunks; PNGs of the three pages from headless Chromium into
                         tests/screenshots/

The sweep is judged by a stand-in judge (word overlap between question and chunk, with
a probability and a reason), so it runs offline in seconds; page size does not depend on
which judge graded the chunks. The quick-start run uses the configured local judge and
the user's verdict cache (seconds when it has run before, minutes the first time).
"""

from __future__ import annotations

import argparse
import base64
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, print_table, quiet

from harness.config import load_experiment
from harness.judge.protocol import BaseJudge
from harness.log import read_run
from harness.pipeline import run_experiment
from harness.report.html import report_compare, report_run, report_sweep
from harness.report.html.data import question_words
from harness.sweep import run_sweep
from harness.types import ComponentSpec, CriterionVerdict

SHOTS = ROOT / "tests" / "screenshots"
WIDTH = 1200


class OverlapJudge(BaseJudge):
    """Relevant when the chunk holds half of the question's words, complete when it holds
    three quarters; P(yes) is the share held. Deterministic, offline, instant."""

    def __init__(self) -> None:
        self.concurrency = 4
        self.spec = ComponentSpec(name="word-overlap", args={"version": 1})

    def identity(self) -> str:
        """A fixed version string."""
        return "word-overlap-v1"

    def grade(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str
    ) -> CriterionVerdict:
        """The share of the question's words found in the chunk, cut at 0.5 or 0.75."""
        words = question_words(question)
        found = set(re.findall(r"[^\W_]+", chunk_text.lower()))
        share = sum(w in found for w in words) / max(1, len(words))
        cut = 0.5 if criterion == "relevant" else 0.75
        held = ", ".join(w for w in words if w in found) or "none"
        return CriterionVerdict(
            criterion=criterion,
            value=share >= cut,
            p_yes=round(share, 3),
            reason=f"{share:.0%} of the question's words in the passage ({held})",
            raw="yes" if share >= cut else "no",
            calls=1,
        )


def sweep_logs(tmp: Path, trials: int) -> Path:
    """A quick-start sweep of `trials` trials over all 40 questions; its folder. (k up to
    5: 24 settings, so 20 trials stay TPE's; the file's 18 would run as a grid of 18.)"""
    config = load_experiment(
        ROOT / "experiments" / "quickstart-sweep.toml", ["sweep.space.k=[2, 3, 4, 5]"]
    )
    log = run_sweep(
        config,
        results_dir=tmp / "results",
        cache_dir=tmp / "cache",
        trials=trials,
        judge=OverlapJudge(),
    )
    return log.sweep_dir


def quickstart_runs(tmp: Path) -> tuple[Path, Path]:
    """The quick-start run on its first 12 questions with the local judge, and the same
    with 400-character chunks (the user's verdict cache: paid once)."""
    dirs = []
    for extra in ([], ["chunking.chunk_size=400"]):
        config = load_experiment(
            ROOT / "experiments" / "quickstart.toml", ["questions.limit=12", *extra]
        )
        dirs.append(run_experiment(config, results_dir=tmp / "quickstart").run_dir)
    return dirs[0], dirs[1]


def screenshot(pages: list[tuple[str, Path, str]]) -> list[tuple[str, int]]:
    """PNGs of the pages' tops in headless Chromium, `open` naming what to expand first."""
    sys.path.insert(0, str(ROOT))
    from tests.report.browser import chrome, console_errors, open_page

    out = []
    SHOTS.mkdir(parents=True, exist_ok=True)
    with chrome(WIDTH, 900) as drv:
        for name, page, prepare in pages:
            drv.get_log("browser")
            open_page(drv, page)
            top, height = drv.execute_script(prepare) or (0, 1600)
            errors = console_errors(drv)
            if errors:
                raise SystemExit(f"{page}: console errors: {errors}")
            shot = drv.execute_cdp_cmd(
                "Page.captureScreenshot",
                {
                    "format": "png",
                    "captureBeyondViewport": True,
                    "clip": {"x": 0, "y": top, "width": WIDTH, "height": height, "scale": 1},
                },
            )
            path = SHOTS / f"{name}.png"
            optimise(base64.b64decode(shot["data"]), path)
            out.append((str(path.relative_to(ROOT)), path.stat().st_size))
    return out


def optimise(png: bytes, path: Path, colours: int = 96) -> None:
    """Write a screenshot as a palette PNG (a page is a few flat colours): a third of the
    size of the browser's own."""
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    image.quantize(colors=colours, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        path, optimize=True
    )


# What each screenshot shows: scroll to a section, open something, return the clip.
SHOW_RUN = """
const q = [...document.querySelectorAll('#question-list details.q')]
  .find(d => d.dataset.outcome !== 'complete') || document.querySelector('#question-list details.q');
q.open = true;
const end = q.getBoundingClientRect().bottom + window.scrollY + 10;
return [0, Math.min(2600, end)];
"""
SHOW_SWEEP = """
const h = document.getElementById('plot-heatmap');
return [0, Math.min(2600, h.getBoundingClientRect().bottom + window.scrollY + 10)];
"""
SHOW_COMPARE = """
const c = document.querySelector('#change-list details.q');
c.open = true;
return [0, Math.min(2600, c.getBoundingClientRect().bottom + window.scrollY + 10)];
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--screenshots", action="store_true", help="also make the PNGs")
    parser.add_argument("--keep", metavar="DIR", help="keep the logs and pages in DIR")
    args = parser.parse_args()
    quiet()
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="harness-bench-report-"))
    try:
        t0 = time.perf_counter()
        sweep_dir = sweep_logs(tmp, args.trials)
        made = time.perf_counter() - t0
        trials = sorted((sweep_dir / "trials").iterdir(), key=lambda p: int(p.name))
        n_q = len(read_run(trials[0]).questions)
        written = [
            ("sweep", report_sweep(sweep_dir, out=tmp / "sweep.html")),
            ("one trial", report_run(trials[0], out=tmp / "trial.html")),
            ("compare 2 trials", report_compare(trials[:2], out=tmp / "compare.html")),
        ]
        pages = {}
        if args.screenshots:
            qs, qs400 = quickstart_runs(tmp)
            written += [
                ("quick-start run", report_run(qs, out=tmp / "quickstart.html")),
                ("quick-start compare", report_compare([qs, qs400], out=tmp / "qs-compare.html")),
            ]
        pages = dict(written)
        print_table(
            f"report benchmark: a {args.trials}-trial sweep of the quick-start, {n_q} questions "
            f"({made:.0f} s to make with a stand-in judge); plotly.js inlined once per page",
            ("page", "MB", "write s", "plots"),
            [
                (name, f"{w.size_bytes / 1e6:.2f}", f"{w.seconds:.2f}", w.figures)
                for name, w in written
            ],
        )
        if args.screenshots:
            shots = screenshot(
                [
                    ("report-run", pages["quick-start run"].out, SHOW_RUN),
                    ("report-sweep", pages["sweep"].out, SHOW_SWEEP),
                    ("report-compare", pages["quick-start compare"].out, SHOW_COMPARE),
                ]
            )
            print_table("screenshots", ("file", "bytes"), shots)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
