"""Budgets and alerts as one Dagster asset step (group `alerts`): after the dbt build (and after
`fct_forecast` when the graph has it), before publish. A thin wrapper over
fleetledger/alerts/engine.py: evaluate on the build warehouse, send what is due, record it in
the state store, and write fct_budget_status, fct_alerts and fct_alert_deliveries into the
build warehouse. A failed delivery never fails the step: it is recorded and logged."""

from collections.abc import Iterator, Sequence

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetSpec,
    DailyPartitionsDefinition,
    MaterializeResult,
    multi_asset,
)

from fleetledger.alerts.engine import run_alerts
from fleetledger.alerts.inputs import INTERMEDIATES, MARTS, read_warehouse
from fleetledger.alerts.warehouse import MART_TABLES, write_alert_marts
from fleetledger.publish import build_path
from orchestration.partitions import DAILY, SINGLE_RUN
from orchestration.resources import FleetResource

ALERT_KEYS = tuple(AssetKey(t) for t in MART_TABLES)
FORECAST_KEY = AssetKey("fct_forecast")
#: what the alerts read, when the graph has it
UPSTREAM = (*(AssetKey(m) for m in (*MARTS, *INTERMEDIATES)), FORECAST_KEY)

_DESCRIPTIONS = {
    "fct_budget_status": "Spend to date and the forecast period end per budget and period.",
    "fct_alerts": "Every alert raised (id, rule, subject, period, amount, message), with "
    "first_raised_at and resolved_at, from the state store in $FLEETLEDGER_HOME/alerts.",
    "fct_alert_deliveries": "Every delivery attempt per alert and channel (sent | failed).",
}


def alert_assets(graph_keys: set[AssetKey], partitions: DailyPartitionsDefinition = DAILY) -> list:
    """The alerts step; it depends on the upstream keys `graph_keys` holds (fct_forecast only
    where the forecasts are built)."""
    deps: Sequence[AssetKey] = [k for k in UPSTREAM if k in graph_keys]

    @multi_asset(
        specs=[
            AssetSpec(key, deps=deps, group_name="alerts", description=_DESCRIPTIONS[key.path[-1]])
            for key in ALERT_KEYS
        ],
        name="alerts",
        partitions_def=partitions,
        backfill_policy=SINGLE_RUN,
    )
    def alerts(context: AssetExecutionContext, fleet: FleetResource) -> Iterator[MaterializeResult]:
        home = fleet.home_path
        cfg = fleet.load_config()
        warehouse = build_path(home)
        run = run_alerts(home, read_warehouse(warehouse), cfg)
        write_alert_marts(warehouse, run, context.run.run_id)
        for finding in run.findings:
            context.log.warning(f"alerts: {finding.check}: {finding.message}")
        context.log.info(f"alerts: {run.sent} message(s) sent, {run.failed} failed")
        sizes = {
            "fct_budget_status": run.budget_status.height,
            "fct_alerts": run.alerts.height,
            "fct_alert_deliveries": run.deliveries.height,
        }
        for key in ALERT_KEYS:
            meta = {"rows": sizes[key.path[-1]]}
            if key.path[-1] == "fct_alert_deliveries":
                meta |= {"sent": run.sent, "failed": run.failed}
            yield MaterializeResult(asset_key=key, metadata=meta)

    return [alerts]
