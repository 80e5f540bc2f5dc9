"""The report's pages in a real headless Chromium: loaded from file:// with no console
error, every plot drawn, questions and heatmap cells open to their chunks, and a chunk
holding markup shown as text without running."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.report.html import report_compare, report_run, report_sweep
from tests.report.browser import chrome, console_errors, find_browser, open_page
from tests.report.conftest import Logs

pytestmark = pytest.mark.browser

FOUND = find_browser()
if isinstance(FOUND, str):
    pytest.skip(FOUND, allow_module_level=True)

DRAWN = """
return [...document.querySelectorAll('[data-figure]')].map(e => [
  e.dataset.figure,
  e.querySelectorAll('svg.main-svg').length,
  e.querySelectorAll('g.trace path[d]:not([d=""]), g.hm image').length,
]);
"""


@pytest.fixture(scope="module")
def driver() -> Any:
    with chrome(1200, 900) as drv:
        yield drv


def assert_clean_load(drv: Any, path: Path, figures: int) -> None:
    """Loaded with no console error, and every plot has an SVG with drawn traces."""
    drv.get_log("browser")  # forget the previous page's messages
    open_page(drv, path)
    assert console_errors(drv) == []
    drawn = drv.execute_script(DRAWN)
    assert len(drawn) == figures, drawn
    for name, svgs, marks in drawn:
        assert svgs >= 1 and marks >= 1, f"plot {name} is empty: {drawn}"


def assert_not_run(drv: Any) -> None:
    """The payload's script and onerror handler never ran, and no alert is open."""
    from selenium.common.exceptions import NoAlertPresentException

    assert drv.execute_script("return window.__pwned") is None
    with pytest.raises(NoAlertPresentException):
        drv.switch_to.alert.text  # noqa: B018
    assert drv.execute_script("return document.querySelectorAll('img[src=\"x\"]').length") == 0


def test_run_page_in_a_browser(driver: Any, logs: Logs, tmp_path: Path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    w = report_run(logs.run.run_dir, out=tmp_path / "run.html")
    assert_clean_load(driver, w.out, w.figures)
    details = driver.find_elements(By.CSS_SELECTOR, "#question-list details.q")
    assert len(details) == len(logs.run.questions)
    assert not any(c.is_displayed() for c in driver.find_elements(By.CSS_SELECTOR, ".chunk"))

    # the question whose chunks hold the payload: open it
    target = next(d for d in details if "window.__pwned" in d.get_attribute("textContent"))
    target.find_element(By.TAG_NAME, "summary").click()
    assert target.get_attribute("open") is not None
    chunks = [c for c in target.find_elements(By.CSS_SELECTOR, ".chunk") if c.is_displayed()]
    assert len(chunks) == len(
        next(
            q
            for q in logs.run.questions
            if q.question.question_id == target.get_attribute("data-qid")
        ).hits
    )
    shown = " ".join(c.text for c in chunks)
    assert "<script>window.__pwned = 1; alert(1)</script>" in shown
    assert '"><img src=x onerror="window.__pwned = 2; alert(2)">' in shown
    assert target.find_elements(By.CSS_SELECTOR, ".chunk mark"), "question words marked"
    assert_not_run(driver)

    # the failures filter leaves only the questions without a complete chunk
    Select(driver.find_element(By.ID, "filter-outcome")).select_by_value("miss")
    visible = [d.get_attribute("data-qid") for d in details if d.is_displayed()]
    k = logs.run.header.k
    assert visible == [
        q.question.question_id
        for q in logs.run.questions
        if q.metrics.get(f"hit_rate@{k}") == 0
        and not any(jh.verdict.relevant.value for jh in q.hits)
    ]
    assert "parking" in visible


def test_sweep_page_in_a_browser(driver: Any, logs: Logs, tmp_path: Path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    w = report_sweep(logs.sweep.sweep_dir, out=tmp_path / "sweep.html")
    assert_clean_load(driver, w.out, w.figures)
    # on a narrow window the page does not scroll sideways: a wide table scrolls in its box
    driver.set_window_size(640, 900)
    try:
        open_page(driver, w.out)  # drawn at this width (a resize redraws the plots later)
        wide = "return document.documentElement.scrollWidth - window.innerWidth"
        assert driver.execute_script(wide) <= 0
        assert driver.execute_script(
            "return [...document.querySelectorAll('.wide')].some(b => b.scrollWidth > b.clientWidth)"
        ), "the leaderboard is wider than a narrow window: it scrolls in its box"
    finally:
        driver.set_window_size(1200, 900)
    open_page(driver, w.out)
    names = {row[0] for row in driver.execute_script(DRAWN)}
    assert {"forest", "history", "slice", "parallel", "heatmap"} <= names
    # click the heatmap's first cell (trial 0, first question) as a person would
    plot = driver.find_element(By.ID, "plot-heatmap")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", plot)
    x, y = driver.execute_script(
        """
        const gd = arguments[0], L = gd._fullLayout;
        const r = gd.getBoundingClientRect();
        return [L._size.l + L.xaxis.d2p(L.xaxis._categories[0]) - r.width / 2,
                L._size.t + L.yaxis.d2p(L.yaxis._categories[0]) - r.height / 2];
        """,
        plot,
    )
    ActionChains(driver).move_to_element_with_offset(plot, int(x), int(y)).click().perform()
    panel = driver.find_element(By.ID, "cell-panel")
    first_trial = logs.sweep.trials[0].number
    first_q = driver.execute_script("return window.harnessReport.page.heatmap.questions[0]")
    assert f"trial {first_trial}, question {first_q}" in panel.text
    hits = panel.find_elements(By.CSS_SELECTOR, ".hit .chunk")
    assert hits and all(h.is_displayed() and h.text for h in hits)
    # the cells whose chunks hold the payload show its markup as text
    shown = []
    for t in logs.sweep.trials:
        for qid in driver.execute_script("return window.harnessReport.page.heatmap.questions"):
            driver.execute_script(
                "window.harnessReport.showCell(arguments[0], arguments[1])", t.number, qid
            )
            if "window.__pwned" in panel.text:
                shown.append(panel.text)
    assert shown and all("<script>window.__pwned = 1; alert(1)</script>" in s for s in shown)
    assert_not_run(driver)
    assert console_errors(driver) == []


def test_compare_page_in_a_browser(driver: Any, logs: Logs, tmp_path: Path):
    from selenium.webdriver.common.by import By

    w = report_compare([logs.run.run_dir, logs.run_small.run_dir], out=tmp_path / "compare.html")
    assert_clean_load(driver, w.out, w.figures)
    changes = driver.find_elements(By.CSS_SELECTOR, "#change-list details.q")
    assert changes, "the smaller chunks change some questions"
    changes[0].find_element(By.TAG_NAME, "summary").click()
    columns = changes[0].find_elements(By.CSS_SELECTOR, ".twocol > div")
    assert len(columns) == 2
    for col in columns:
        chunks = col.find_elements(By.CSS_SELECTOR, ".hit .chunk")
        assert chunks and all(c.is_displayed() for c in chunks)
    table = driver.find_element(By.ID, "metrics").text
    assert "hit_rate@" in table and "mrr@" in table
    assert_not_run(driver)
