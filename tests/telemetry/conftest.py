"""Fixtures for the DCGM tests (helpers in dcgm_fleet.py)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from dcgm_fleet import ShapeFleet, write_shape_fleet


@pytest.fixture(scope="session")
def shape_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShapeFleet]:
    """The fleet's DCGM samples in every shape, written once per test run."""
    root = tmp_path_factory.mktemp("dcgm_shapes")
    yield write_shape_fleet(root)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def samples() -> Path:
    """The shared real sample files (../shared/samples), as tests/ingest finds them."""
    repo = Path(__file__).resolve().parents[2]
    for c in (
        os.environ.get("FLEETLEDGER_SAMPLES"),
        repo / "shared" / "samples",
        repo.parent / "shared" / "samples",
    ):
        if c and Path(c).is_dir():
            return Path(c)
    pytest.skip("shared/samples is not available")
