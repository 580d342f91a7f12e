"""Fixtures for the DCGM tests (helpers in dcgm_fleet.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from dcgm_fleet import ShapeFleet, write_shape_fleet


@pytest.fixture(scope="session")
def shape_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShapeFleet]:
    """The fleet's DCGM samples in every shape, written once per test run."""
    root = tmp_path_factory.mktemp("dcgm_shapes")
    yield write_shape_fleet(root)
    shutil.rmtree(root, ignore_errors=True)
