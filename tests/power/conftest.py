"""Fixtures for the power reader tests: where the shared real sample files are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def samples() -> Path:
    for c in (
        os.environ.get("FLEETLEDGER_SAMPLES"),
        _REPO / "shared" / "samples",
        _REPO.parent / "shared" / "samples",
    ):
        if c and Path(c).is_dir():
            return Path(c)
    pytest.skip("shared/samples is not available")
