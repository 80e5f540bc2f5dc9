"""A headless Chromium for the report's tests and screenshots, driven by selenium.

Debian's `chromium` and `chromium-driver` (the Makefile installs them). The driver is
given by path, so selenium-manager never looks for one on the network.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
DRIVERS = ("chromedriver",)


def find_browser() -> tuple[str, str] | str:
    """(browser, driver) paths, or why there are none (the skip reason)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    browser = next((p for name in BROWSERS if (p := shutil.which(name))), None)
    driver = next((p for name in DRIVERS if (p := shutil.which(name))), None)
    if browser is None or driver is None:
        missing = [n for n, p in (("chromium", browser), ("chromium-driver", driver)) if p is None]
        return (
            f"no headless browser: {' and '.join(missing)} not found "
            "(apt-get install chromium chromium-driver; `make install` does it as root)"
        )
    return browser, driver


@contextmanager
def chrome(width: int = 1200, height: int = 900) -> Iterator[Any]:
    """A headless Chromium (a fresh profile, no network but file://), quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    found = find_browser()
    if isinstance(found, str):
        raise RuntimeError(found)
    browser, driver = found
    profile = tempfile.mkdtemp(prefix="harness-chrome-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for arg in (
        "--headless=new",
        "--no-sandbox",  # root in a container has no user namespaces for the sandbox
        "--disable-dev-shm-usage",
        "--disable-extensions",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        # plotly's parallel coordinates draw with WebGL; headless has it only in software.
        "--enable-unsafe-swiftshader",
        "--use-angle=swiftshader",
        f"--window-size={width},{height}",
        f"--user-data-dir={profile}",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=driver)
    drv = webdriver.Chrome(service=service, options=opts)
    try:
        yield drv
    finally:
        drv.quit()
        shutil.rmtree(profile, ignore_errors=True)


def open_page(drv: Any, path: Path, timeout_s: float = 60) -> None:
    """Load a page from file:// and wait until its script has run and its plots are drawn."""
    from selenium.webdriver.support.ui import WebDriverWait

    drv.get(path.resolve().as_uri())
    WebDriverWait(drv, timeout_s).until(
        lambda d: d.execute_script("return document.body && document.body.dataset.ready === '1'")
    )
    WebDriverWait(drv, timeout_s).until(
        lambda d: d.execute_script(
            "return [...document.querySelectorAll('[data-figure]')]"
            ".every(e => e.classList.contains('js-plotly-plot'))"
        )
    )


def console_errors(drv: Any) -> list[str]:
    """The browser console's errors (SEVERE) since the last call."""
    return [e["message"] for e in drv.get_log("browser") if e["level"] == "SEVERE"]
