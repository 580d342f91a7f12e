"""GCP Cloud Catalog list prices of GPU SKUs → `gcp_catalog_skus` (google-cloud-billing).

Source: `kind: gcp_catalog`, `location`: the Cloud Billing API endpoint
(`https://cloudbilling.googleapis.com`; another URL for an emulator or a test fake). Options:

- `services` (default `["6F81-5844-456A"]`, Compute Engine): the service ids whose SKUs are
  listed with `CloudCatalogClient.list_skus(parent="services/<id>")` over the REST transport.
- `resource_groups` (default `["GPU"]`) and `description_regex` (default
  `(?i)\\bgpu\\b|nvidia`): a SKU is kept when its `category.resource_group` is one of the groups
  or its description matches.
- `currency_code` (default `USD`): the currency the prices are listed in.
- `max_age_hours` (default 24): the prices are cached in the landing zone; a fetch younger than
  this (for the same services and currency) is reused instead of calling the API again.
- `credentials_file` (a service-account key; default Application Default Credentials) or
  `anonymous: true`.

One row per SKU, pricing tier and fetch: `unit_price = units + nanos / 1e9` per `usage_unit`
(the SKU's pricing unit, the unit of the export's `usage.amount_in_pricing_units`), regions as a
JSON array, `fetched_at`. The partition is `date=<UTC day of the fetch>`; older fetches stay, so
the warehouse keeps the price history (`stg_gcp_catalog__skus`).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from ingest.billing.google_auth import google_credentials
from ingest.core.errors import IngestError
from ingest.core.landing import land, landed_partitions, partition_dir, polars_schema
from ingest.core.spec import LandContext

if TYPE_CHECKING:
    from fleetledger.config import Source
    from ingest.core.report import IngestReport

TABLE = "gcp_catalog_skus"
COMPUTE_ENGINE = "6F81-5844-456A"
OPTIONS = (
    "services",
    "resource_groups",
    "description_regex",
    "currency_code",
    "max_age_hours",
    "credentials_file",
    "anonymous",
)
DEFAULT_REGEX = r"(?i)\bgpu\b|nvidia"
_SERVICE = re.compile(r"^[A-Za-z0-9-]+$")


def _options(options: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise IngestError(f"unknown options {', '.join(unknown)} (known: {', '.join(OPTIONS)})")
    services = options.get("services", [COMPUTE_ENGINE])
    if isinstance(services, str):
        services = [services]
    if not services or not all(isinstance(s, str) and _SERVICE.match(s) for s in services):
        raise IngestError(f"option services must be a list of service ids, got {services!r}")
    groups = options.get("resource_groups", ["GPU"])
    if isinstance(groups, str):
        groups = [groups]
    try:
        regex = re.compile(str(options.get("description_regex", DEFAULT_REGEX)))
    except re.error as err:
        raise IngestError(f"option description_regex is not a regular expression: {err}") from None
    max_age = options.get("max_age_hours", 24)
    if isinstance(max_age, bool) or not isinstance(max_age, int | float) or max_age < 0:
        raise IngestError(f"option max_age_hours must be a number >= 0, got {max_age!r}")
    return {
        "services": [s.removeprefix("services/") for s in services],
        "groups": {str(g) for g in groups},
        "regex": regex,
        "currency": str(options.get("currency_code", "USD")).upper(),
        "max_age": float(max_age),
    }


def make_client(endpoint: str, options: dict[str, Any]) -> Any:
    """A CloudCatalogClient over REST for `endpoint`."""
    from google.cloud import billing_v1

    kwargs: dict[str, Any] = {"transport": "rest"}
    credentials = google_credentials(options)
    if credentials is not None:
        kwargs["credentials"] = credentials
    if endpoint:
        kwargs["client_options"] = {"api_endpoint": endpoint.rstrip("/")}
    return billing_v1.CloudCatalogClient(**kwargs)


def _ts(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return None


def fetch_skus(
    endpoint: str, *, source: str, options: dict[str, Any], now: datetime | None = None
) -> pl.DataFrame:
    """List the configured services' SKUs and keep the GPU ones, as `gcp_catalog_skus` rows."""
    import requests
    from google.api_core import exceptions as gexc

    opts = _options(options)
    client = make_client(endpoint, options)
    fetched_at = now or datetime.now(UTC)
    rows: list[dict[str, Any]] = []
    for service in opts["services"]:
        parent = f"services/{service}"
        file = f"{endpoint.rstrip('/')}/v1/{parent}/skus"
        try:
            skus = list(
                client.list_skus(request={"parent": parent, "currency_code": opts["currency"]})
            )
        except gexc.GoogleAPIError as err:
            raise IngestError(f"list_skus({parent}) failed: {err}", file=file) from None
        except requests.RequestException as err:
            # the REST transport raises requests' errors when the endpoint cannot be reached
            raise IngestError(
                f"source {source}: cannot reach the Cloud Billing Catalog at {endpoint}: "
                f"{type(err).__name__}",
                file=file,
            ) from None
        for ordinal, sku in enumerate(skus, start=1):
            category = sku.category
            keep = category.resource_group in opts["groups"] or bool(
                opts["regex"].search(sku.description or "")
            )
            if not keep:
                continue
            for info in sku.pricing_info:
                expr = info.pricing_expression
                for tier in expr.tiered_rates:
                    price = tier.unit_price
                    rows.append(
                        {
                            "service_id": service,
                            "service_display_name": category.service_display_name or None,
                            "sku_id": sku.sku_id,
                            "sku_name": sku.name or None,
                            "description": sku.description or None,
                            "resource_family": category.resource_family or None,
                            "resource_group": category.resource_group or None,
                            "usage_type": category.usage_type or None,
                            "service_regions": json.dumps(list(sku.service_regions)),
                            "usage_unit": expr.usage_unit or None,
                            "usage_unit_description": expr.usage_unit_description or None,
                            "base_unit": expr.base_unit or None,
                            "base_unit_conversion_factor": float(expr.base_unit_conversion_factor),
                            "display_quantity": float(expr.display_quantity),
                            "tier_start_usage_amount": float(tier.start_usage_amount),
                            "unit_price": int(price.units) + price.nanos / 1e9,
                            "currency_code": price.currency_code or opts["currency"],
                            "effective_time": _ts(info.effective_time),
                            "fetched_at": fetched_at,
                            "x_source": source,
                            "x_source_file": file,
                            "x_line_number": ordinal,
                        }
                    )
    schema = polars_schema(TABLE)
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def latest_fetch(home: Path, source: str) -> tuple[str, pl.DataFrame] | None:
    """The newest landed fetch of a catalog source: (partition, rows)."""
    parts = landed_partitions(home, TABLE, source)
    if not parts:
        return None
    return parts[-1], pl.read_parquet(
        partition_dir(home, TABLE, source, parts[-1]) / "part-0.parquet"
    )


def ingest_catalog(source: Source, location: str, home: Path, report: IngestReport) -> None:
    """Land a fresh fetch of the GPU list prices, unless a fetch younger than `max_age_hours`
    of the same services and currency is already landed."""
    opts = _options(dict(source.options))
    now = datetime.now(UTC)
    cached = latest_fetch(home, source.name)
    if cached is not None and cached[1].height:
        partition, rows = cached
        fetched = rows["fetched_at"].max()
        same = set(rows["service_id"].unique().to_list()) == set(opts["services"]) and set(
            rows["currency_code"].unique().to_list()
        ) == {opts["currency"]}
        if (
            same
            and isinstance(fetched, datetime)
            and now - fetched < timedelta(hours=opts["max_age"])
        ):
            report.warnings.append(
                f"list prices fetched at {fetched.isoformat()} ({partition}) are less than "
                f"{opts['max_age']:g} h old: reused, the API was not called"
            )
            return
    endpoint = location if "://" in location else f"https://{location}"
    rows = fetch_skus(endpoint, source=source.name, options=dict(source.options), now=now)
    partition = f"date={now.date().isoformat()}"
    if not rows.height:
        report.warnings.append(
            f"no GPU SKUs in services {', '.join(opts['services'])}: landed an empty partition"
        )
    land(home, TABLE, source.name, partition, rows)
    report.partitions.append(partition)
    report.rows_landed += rows.height
    report.files_read.extend(sorted(set(rows["x_source_file"].to_list())))


def land_catalog(ctx: LandContext) -> None:
    """The gcp_catalog strategy: a fresh fetch of the list prices, or none (`ingest_catalog`)."""
    ingest_catalog(ctx.source, ctx.location, ctx.home, ctx.report)
