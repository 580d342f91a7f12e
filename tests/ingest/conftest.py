"""Fixtures for the ingest tests: where the shared real sample files are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[2]


def _samples_dir() -> Path | None:
    candidates = [
        os.environ.get("FLEETLEDGER_SAMPLES"),
        _REPO / "shared" / "samples",
        _REPO.parent / "shared" / "samples",
        "/work/shared/samples",
    ]
    for c in candidates:
        if c and Path(c).is_dir():
            return Path(c)
    return None


@pytest.fixture(scope="session")
def samples() -> Path:
    d = _samples_dir()
    if d is None:
        pytest.skip("shared/samples is not available")
    return d
