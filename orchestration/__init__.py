"""Dagster orchestration for fleetledger: thin assets over `ingest/`, the dbt project and publish.

`orchestration.definitions` holds the one `Definitions` object that `dagster dev` and `dg dev`
load; `orchestration.build.build_definitions(home)` builds it for any `FLEETLEDGER_HOME`.
"""

import warnings

from dagster import BetaWarning, PreviewWarning

# single-run backfill policies and dbt asset checks are beta in Dagster 1.13; we rely on them
warnings.filterwarnings("ignore", category=BetaWarning)
warnings.filterwarnings("ignore", category=PreviewWarning)
