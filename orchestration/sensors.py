"""Sensors that start runs when billing files land.

`aws_cur_manifests`: for every `aws_cur` source, list its CUR manifests (CUR 2.0
`metadata/BILLING_PERIOD=…/…-Manifest.json`, legacy `<YYYYMMDD-YYYYMMDD>/…-Manifest.json`, on S3 or
in a local folder). The cursor remembers each manifest's version (S3 ETag and LastModified; size and
mtime locally). A manifest that is new or whose version changed means its billing period was
(re)delivered: the sensor requests one run of the daily job over the days of that period (clipped
to the partitions that exist), for that source's ingest asset and everything downstream (dbt and
publish), so the restated period is landed whole and every day of it is rebuilt. On the first
tick every manifest is new, so every delivered period is requested once; run keys
(`aws_cur:<source>:<period>:<version hash>`) keep a delivery from being requested twice.

A source that cannot be listed (credentials, bucket) is logged and keeps its cursor; the others
are still evaluated.
"""

from __future__ import annotations

import calendar
import hashlib
import json
from collections.abc import Sequence
from datetime import date

from dagster import (
    AssetKey,
    AssetsDefinition,
    DailyPartitionsDefinition,
    DefaultSensorStatus,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

from fleetledger.config import Config, Source
from ingest.billing.aws_cur import CurExport
from ingest.core.errors import IngestError
from orchestration.ingest_assets import raw_asset_key
from orchestration.partitions import DAILY, first_day, partitions_for
from orchestration.resources import FleetResource

AWS_CUR_SENSOR = "aws_cur_manifests"
CURSOR_VERSION = 1


def period_days(period: str) -> tuple[date, date]:
    """First and last day of a `YYYY-MM` billing period."""
    year, month = (int(p) for p in period.split("-"))
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def partition_range(
    period: str, partitions: DailyPartitionsDefinition = DAILY
) -> tuple[str, str] | None:
    """The daily partition keys a billing period covers, clipped to the partitions that exist
    (none before the first partition, none after the last one); None when nothing is left."""
    first, last = period_days(period)
    first = max(first, first_day(partitions))
    last_key = partitions.get_last_partition_key()
    if last_key is not None:
        last = min(last, date.fromisoformat(last_key))
    if last < first:
        return None
    return first.isoformat(), last.isoformat()


def _load_cursor(raw: str | None) -> dict[str, dict[str, str]]:
    if not raw:
        return {}
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError:
        return {}
    sources = doc.get("sources") if isinstance(doc, dict) else None
    if not isinstance(sources, dict):
        return {}
    return {
        str(name): {str(k): str(v) for k, v in seen.items()}
        for name, seen in sources.items()
        if isinstance(seen, dict)
    }


def _dump_cursor(state: dict[str, dict[str, str]]) -> str:
    return json.dumps({"v": CURSOR_VERSION, "sources": state}, sort_keys=True)


def list_manifests(cfg: Config, source: Source) -> dict[str, tuple[str, str]]:
    """Manifest key → (billing period, version) for one aws_cur source."""
    export = CurExport(cfg.resolve(source.location), dict(source.options))
    return {m.key: (m.period, m.version) for m in export.manifests()}


def aws_cur_sensor(
    sources: Sequence[str],
    job_name: str,
    selection: dict[str, list[AssetKey]],
    partitions: DailyPartitionsDefinition = DAILY,
) -> SensorDefinition:
    """The manifest sensor for the named aws_cur sources; `selection[source]` is the assets a
    run for that source materialises."""

    @sensor(
        name=AWS_CUR_SENSOR,
        job_name=job_name,
        minimum_interval_seconds=900,
        default_status=DefaultSensorStatus.STOPPED,
        description=(
            "Starts a run over a billing period's days when an AWS CUR manifest of an aws_cur "
            "source is new or changed (a delivery or restatement of that period)."
        ),
    )
    def aws_cur_manifests(context: SensorEvaluationContext, fleet: FleetResource) -> SensorResult:
        cfg = fleet.load_config()
        previous = _load_cursor(context.cursor)
        state: dict[str, dict[str, str]] = {}
        requests: list[RunRequest] = []
        problems: list[str] = []
        for name in sources:
            try:
                source = cfg.source(name)
                found = list_manifests(cfg, source)
            except (IngestError, KeyError) as err:
                problems.append(f"{name}: {err}")
                context.log.error(f"aws_cur source {name}: cannot list manifests: {err}")
                if name in previous:
                    state[name] = previous[name]
                continue
            seen = previous.get(name, {})
            state[name] = {key: version for key, (_, version) in found.items()}
            changed: dict[str, list[str]] = {}
            for key, (period, version) in sorted(found.items()):
                if seen.get(key) != version:
                    changed.setdefault(period, []).append(f"{key}={version}")
            for period, versions in sorted(changed.items()):
                keys = partition_range(period, partitions)
                if keys is None:
                    context.log.info(
                        f"{name}: manifest for {period} changed, but no daily partition covers it"
                    )
                    continue
                digest = hashlib.sha1("|".join(versions).encode()).hexdigest()[:12]
                context.log.info(f"{name}: {period} delivered ({', '.join(versions)})")
                requests.append(
                    RunRequest(
                        run_key=f"aws_cur:{name}:{period}:{digest}",
                        job_name=job_name,
                        asset_selection=selection[name],
                        tags={
                            ASSET_PARTITION_RANGE_START_TAG: keys[0],
                            ASSET_PARTITION_RANGE_END_TAG: keys[1],
                            "fleetledger/trigger": AWS_CUR_SENSOR,
                            "fleetledger/source": name,
                            "fleetledger/billing_period": period,
                        },
                    )
                )
        cursor = _dump_cursor(state)
        if requests:
            return SensorResult(run_requests=requests, cursor=cursor)
        reason = "no new or changed CUR manifests"
        if problems:
            reason += "; " + "; ".join(problems)
        return SensorResult(skip_reason=reason, cursor=cursor)

    return aws_cur_manifests


def billing_sensors(
    cfg: Config | None, assets: Sequence[AssetsDefinition], job_name: str
) -> list[SensorDefinition]:
    """The billing sensors the config calls for (none without an aws_cur source). A run for a
    source materialises its ingest asset and every asset that is not another source's ingest
    asset (config tables, dbt models, publish), as `fleetledger run --source` does."""
    if cfg is None:
        return []
    names = [s.name for s in cfg.sources if s.kind == "aws_cur"]
    if not names:
        return []
    source_keys = {raw_asset_key(s.name) for s in cfg.sources}
    downstream = sorted(
        {k for a in assets for k in a.keys if k not in source_keys},
        key=lambda k: k.to_user_string(),
    )
    selection = {n: [raw_asset_key(n), *downstream] for n in names}
    return [aws_cur_sensor(names, job_name, selection, partitions_for(cfg))]
