"""The small generated fleet the session fixtures build (conftest.py: `pipeline_home`,
`unlabelled_pipeline_home`), for a test that builds the same fleet again another way."""

from __future__ import annotations

from datetime import date

FLEET_START = date(2026, 10, 2)
FLEET_DAYS = 3
FLEET_SEED = 1
