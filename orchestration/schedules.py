"""The daily job and the schedule that materialises yesterday's partition."""

from datetime import timedelta

from dagster import (
    AssetSelection,
    DefaultScheduleStatus,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    define_asset_job,
    schedule,
)
from dagster._core.definitions.unresolved_asset_job_definition import (
    UnresolvedAssetJobDefinition,
)

DAILY_JOB_NAME = "fleetledger_daily"


def daily_job() -> UnresolvedAssetJobDefinition:
    return define_asset_job(
        DAILY_JOB_NAME,
        selection=AssetSelection.all(),
        description="Ingest every configured source, build and test the warehouse, publish it.",
    )


def daily_schedule(job: UnresolvedAssetJobDefinition) -> ScheduleDefinition:
    @schedule(
        job=job,
        cron_schedule="30 1 * * *",
        execution_timezone="UTC",
        default_status=DefaultScheduleStatus.STOPPED,
        description="Every day at 01:30 UTC, materialise yesterday (UTC).",
    )
    def fleetledger_daily_schedule(context: ScheduleEvaluationContext) -> RunRequest:
        day = (context.scheduled_execution_time - timedelta(days=1)).date().isoformat()
        return RunRequest(run_key=day, partition_key=day)

    return fleetledger_daily_schedule
