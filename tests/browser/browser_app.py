"""Helpers of the browser tests: `fleetledger app` as a real server on 127.0.0.1, and what a
page must look like in headless Chromium (the Debian package, driven by Playwright through
`executable_path`) to count as loaded.

A page counts as loaded when the HTTP response is 200, Streamlit finished running its script
(no running indicator), the main area rendered a title, and it shows no Streamlit exception
element (`stException`) and no `st.error` box.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking"]
START_TIMEOUT_S = 90.0  # the server's first start imports streamlit, pandas, duckdb
PAGE_TIMEOUT_MS = 90_000  # a page's first run on a fresh server queries the snapshot
EXCEPTION = '[data-testid="stException"]'
ERROR_BOX = '[data-testid="stAlertContentError"], [data-testid="stAlertContainer"].stError'
RUNNING = '[data-testid="stStatusWidgetRunningIcon"], [data-testid="stStatusWidgetRunningManIcon"]'
NAV_LINKS = '[data-testid="stSidebarNav"] a, [data-testid="stTopNav"] a'
TITLE = '[data-testid="stMain"] h1'
# Streamlit marks its root with the script's state: initial, running, notRunning
SCRIPT_DONE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
# the dataframe toolbar's CSV export uses the File System Access API when the browser has it
# (a save dialog headless Chromium cannot answer); without it, it falls back to a download
NO_SAVE_PICKER = "delete window.showSaveFilePicker; window.showSaveFilePicker = undefined;"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fleetledger_command() -> list[str]:
    """The `fleetledger` console script of this interpreter's environment, else the module."""
    script = Path(sys.executable).with_name("fleetledger")
    if script.is_file():
        return [str(script)]
    found = shutil.which("fleetledger")
    return [found] if found else [sys.executable, "-m", "fleetledger.cli"]


@dataclass
class AppServer:
    """A running `fleetledger app`: its base URL, process and log file."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def _serving(url: str) -> bool:
    try:
        with urllib.request.urlopen(urljoin(url, "_stcore/health"), timeout=2) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def app_server(home: Path, log_dir: Path) -> Iterator[AppServer]:
    """Start `fleetledger app --home HOME` on a free port of 127.0.0.1, wait until it serves,
    and stop it (its whole process group) afterwards, leaving no process behind."""
    port = free_port()
    log = log_dir / f"streamlit-{port}.log"
    cmd = [
        *fleetledger_command(),
        "app",
        "--home",
        str(home),
        "--",
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--server.address",
        "127.0.0.1",
        "--server.fileWatcherType",
        "none",
        "--browser.gatherUsageStats",
        "false",
    ]
    env = {**os.environ, "FLEETLEDGER_HOME": str(home)}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    server = AppServer(url=f"http://127.0.0.1:{port}/", process=proc, log=log)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _serving(server.url):
            if proc.poll() is not None:
                raise RuntimeError(
                    f"fleetledger app exited ({proc.returncode}):\n{server.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"fleetledger app did not serve in time:\n{server.log_tail()}")
            time.sleep(0.5)
        yield server
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, SIGKILL it after 15 s; reap the process."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
    try:  # anything the server started in its group
        os.killpg(proc.pid, 0)
    except (ProcessLookupError, PermissionError):
        return
    os.killpg(proc.pid, signal.SIGKILL)


@dataclass(frozen=True)
class Load:
    """What one page load showed."""

    url: str
    status: int | None
    title: str
    exceptions: list[str]
    errors: list[str]

    @property
    def ok(self) -> bool:
        return self.status == 200 and bool(self.title) and not self.exceptions and not self.errors


def wait_rendered(page: Any, timeout_ms: int = PAGE_TIMEOUT_MS) -> None:
    """Wait until the main area shows a title and the script run finished."""
    page.wait_for_selector(TITLE, timeout=timeout_ms)
    page.wait_for_selector(SCRIPT_DONE, state="attached", timeout=timeout_ms)
    page.wait_for_function("sel => !document.querySelector(sel)", arg=RUNNING, timeout=timeout_ms)
    # an exception shows after the script stops; give the last deltas a moment to paint
    page.wait_for_timeout(300)


def inspect(page: Any, url: str, status: int | None) -> Load:
    title = page.locator(TITLE).first.inner_text() if page.locator(TITLE).count() else ""
    return Load(
        url=url,
        status=status,
        title=title.strip(),
        exceptions=[t.strip() for t in page.locator(EXCEPTION).all_inner_texts()],
        errors=[t.strip() for t in page.locator(ERROR_BOX).all_inner_texts()],
    )


def load(page: Any, url: str, timeout_ms: int = PAGE_TIMEOUT_MS) -> Load:
    """Open `url` (a full page load, HTTP status checked) and wait until it rendered."""
    response = page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms)
    status = response.status if response is not None else None
    wait_rendered(page, timeout_ms)
    return inspect(page, url, status)


def nav_urls(page: Any, base: str) -> list[str]:
    """Every page registered in the app's navigation, as absolute URLs, in the sidebar's order.

    Read from the rendered navigation links, so pages added to `st.navigation` are found without
    naming them; an app with one page shows no navigation: then just `base`.
    """
    load(page, base)
    hrefs = page.locator(NAV_LINKS).evaluate_all("links => links.map(a => a.href)")
    urls: list[str] = []
    for href in hrefs:
        parts = urlsplit(urljoin(base, href))
        clean = f"{parts.scheme}://{parts.netloc}{parts.path}"
        if clean not in urls:
            urls.append(clean)
    return urls or [base]


def page_slug(url: str) -> str:
    path = urlsplit(url).path.strip("/")
    return path.replace("/", "_") or "default"


def csv_rows(text: str) -> list[list[str]]:
    """A CSV file's rows (header first), BOM and trailing blank lines dropped."""
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))
    while rows and not any(cell.strip() for cell in rows[-1]):
        rows.pop()
    return rows


def download(page: Any, click: Any, timeout_ms: int = 60_000) -> str:
    """Run `click()` and return the text of the file the browser downloads."""
    with page.expect_download(timeout=timeout_ms) as info:
        click()
    path = info.value.path()
    return Path(path).read_text(encoding="utf-8")


def table_csv(page: Any, frame: Any) -> str:
    """The CSV a dataframe's own toolbar exports: exactly the rows and columns it shows."""
    # the middle of the viewport: at its top, the app's sticky header covers the toolbar
    frame.evaluate("el => el.scrollIntoView({block: 'center'})")
    frame.hover()
    button = frame.locator(
        '[data-testid="stElementToolbarButton"]:has([aria-label="Download as CSV"]), '
        '[data-testid="stElementToolbarButton"] button[aria-label="Download as CSV"]'
    ).first
    button.wait_for(state="visible")
    # a DOM click on the button itself: the grid's scroller and the header intercept pointer
    # clicks at its position while the toolbar fades in
    return download(
        page, lambda: button.evaluate("el => (el.querySelector('button') || el).click()")
    )
