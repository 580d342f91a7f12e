"""Fixtures of the browser tests: headless Chromium (the Debian `chromium` package, installed by
.ci/install-system-deps.sh) driven by Playwright, and the directory their screenshots go to.

Screenshots and server logs go to `$FLEETLEDGER_TEST_ARTIFACTS/<test module>/` when that is set
(CI keeps it), else to a pytest temporary directory; the path is printed (`pytest -s` shows it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_app import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="module")
def artifacts(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    name = Path(str(request.node.path)).stem
    root = os.environ.get("FLEETLEDGER_TEST_ARTIFACTS")
    if root:
        path = Path(root).expanduser().resolve() / name
        path.mkdir(parents=True, exist_ok=True)
    else:
        path = tmp_path_factory.mktemp(f"artifacts_{name}")
    print(f"\nbrowser test artifacts (screenshots, server logs): {path}")
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.is_file():
        pytest.skip(f"{CHROMIUM} is not installed (run .ci/install-system-deps.sh)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield chromium
        finally:
            chromium.close()
