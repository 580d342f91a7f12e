"""The small generated fleet the session fixtures build (conftest.py: `pipeline_home`,
`unlabelled_pipeline_home`), for a test that builds the same fleet again another way."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from fleetledger.generator import generate

FLEET_START = date(2026, 10, 2)
FLEET_DAYS = 3
FLEET_SEED = 1


def generate_unlabelled_fleet(home: Path) -> None:
    """The small fleet's sources in `home`, the AWS site's DCGM exporter adding no `hpc_job`
    labels (its partial-node runs are then mapped `estimated`)."""
    generate(
        home,
        days=FLEET_DAYS,
        seed=FLEET_SEED,
        start=FLEET_START,
        scrape_interval_s=60,
        hpc_job_labels=False,
    )
