"""A pipeline run in progress never breaks a page: while `fleetledger run` re-ingests one feed
for one day on a copy of the session fleet's home (and rebuilds and publishes the warehouse),
headless Chromium reloads every page of the app in a loop. Zero failed page loads: each one
answered HTTP 200, rendered its title and showed no exception or error box, before, during and
after the new snapshot was published.

One app server for this module, on the copied home (the pipeline writes there); the run is the
cheapest the CLI has (one feed, one day: `--source onprem-power`), on the already built fleet.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_app import NO_SAVE_PICKER, AppServer, app_server, fleetledger_command, load, nav_urls

pytestmark = pytest.mark.warehouse

RUN_TIMEOUT_S = 600
PAUSE_WHILE_RUNNING_S = 1.0
AFTER_PUBLISH_ROUNDS = 1  # full rounds over every page once the new snapshot is published


@pytest.fixture(scope="module")
def run_home(pipeline_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("browse_while_running") / "home"
    shutil.copytree(pipeline_home, home, symlinks=True)
    return home


@pytest.fixture(scope="module")
def server(run_home: Path, artifacts: Path) -> Iterator[AppServer]:
    with app_server(run_home, artifacts) as srv:
        yield srv


@pytest.fixture(scope="module")
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(NO_SAVE_PICKER)
    pg = context.new_page()
    try:
        yield pg
    finally:
        context.close()


def test_pages_keep_loading_while_the_pipeline_runs(
    page: Any, server: AppServer, run_home: Path, artifacts: Path
) -> None:
    pages = nav_urls(page, server.url)
    published = run_home / "warehouse.duckdb"
    before = published.stat().st_mtime_ns
    log = artifacts / "pipeline-run.log"
    with log.open("wb") as out:
        run = subprocess.Popen(
            [
                *fleetledger_command(),
                "run",
                "--home",
                str(run_home),
                "--date",
                "2026-10-03",
                "--source",
                "onprem-power",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "FLEETLEDGER_HOME": str(run_home)},
            start_new_session=True,
        )
    loads = []
    rounds_after = 0
    deadline = time.monotonic() + RUN_TIMEOUT_S
    try:
        while rounds_after < AFTER_PUBLISH_ROUNDS:
            assert time.monotonic() < deadline, "the pipeline run did not finish in time"
            finished = run.poll() is not None
            for url in pages:
                shown = load(page, url)
                loads.append((run.poll() is None, shown))
                if loads[-1][0] and len(loads) > len(pages):
                    # after a first round, a page a second while the run works: the browser
                    # and the app would otherwise take the CPU the run needs
                    time.sleep(PAUSE_WHILE_RUNNING_S)
            if finished:
                rounds_after += 1
    finally:
        if run.poll() is None:
            run.kill()
        run.wait(timeout=60)
    assert run.returncode == 0, log.read_text(errors="replace")[-4000:]
    assert published.stat().st_mtime_ns > before, "the run published no new snapshot"
    page.screenshot(path=str(artifacts / "after-publish.png"), full_page=True)
    during = sum(1 for running, _ in loads if running)
    failed = [shown for _, shown in loads if not shown.ok]
    print(f"{len(loads)} page loads, {during} while the pipeline ran, {len(failed)} failed")
    assert failed == [], f"{failed}\nserver log:\n{server.log_tail()}"
    assert during >= len(pages), "the browser did not load every page while the pipeline ran"
