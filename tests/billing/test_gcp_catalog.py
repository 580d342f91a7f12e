"""Cloud Catalog list prices with the real google-cloud-billing CloudCatalogClient (REST
transport, anonymous credentials) pointed at a local HTTP fake of `services.skus.list`: GPU SKUs
kept, prices `units + nanos / 1e9` per tier, pages followed, the fetch cached in the landing zone
with its fetch time."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import polars as pl
import pytest

from fleetledger.config import Config
from ingest.registry import ingest_source

COMPUTE = "6F81-5844-456A"
H100 = "0D9B-F2E4-AB12"


def _sku(
    sku_id: str,
    description: str,
    group: str,
    usage_type: str,
    regions: list[str],
    tiers: list[tuple[float, str, int]],
) -> dict[str, Any]:
    return {
        "name": f"services/{COMPUTE}/skus/{sku_id}",
        "skuId": sku_id,
        "description": description,
        "category": {
            "serviceDisplayName": "Compute Engine",
            "resourceFamily": "Compute",
            "resourceGroup": group,
            "usageType": usage_type,
        },
        "serviceRegions": regions,
        "pricingInfo": [
            {
                "effectiveTime": "2026-09-01T00:00:00Z",
                "pricingExpression": {
                    "usageUnit": "h",
                    "usageUnitDescription": "hour",
                    "baseUnit": "s",
                    "baseUnitConversionFactor": 3600,
                    "displayQuantity": 1,
                    "tieredRates": [
                        {
                            "startUsageAmount": start,
                            "unitPrice": {"currencyCode": "USD", "units": units, "nanos": nanos},
                        }
                        for start, units, nanos in tiers
                    ],
                },
                "currencyConversionRate": 1,
            }
        ],
        "serviceProviderName": "Google",
    }


SKUS = [
    _sku(
        H100,
        "Nvidia H100 80GB GPU running in Americas",
        "GPU",
        "OnDemand",
        ["us-central1", "us-east4"],
        [(0, "11", 60950000)],
    ),
    _sku(
        "4A1C-77B0-3D21",
        "A3 Instance Core running in Americas",
        "CPU",
        "OnDemand",
        ["us-central1"],
        [(0, "0", 31611000)],
    ),
    _sku(
        "1B2C-3D4E-5F60",
        "Spot Preemptible Nvidia L4 GPU running in Belgium",
        "GPU",
        "Preemptible",
        ["europe-west1"],
        [(0, "0", 223600000), (720, "0", 200000000)],
    ),
    _sku(
        "7F7F-0A0A-1B1B",
        "Nvidia A100 80GB GPU attached to Spot Preemptible VMs running in Americas",
        "",
        "Preemptible",
        ["us-central1"],
        [(0, "1", 500000000)],
    ),
]


@contextmanager
def catalog_server(skus: list[dict[str, Any]] = SKUS) -> Iterator[tuple[list[str], str]]:
    """A fake Cloud Billing API serving `skus` for Compute Engine, two per page; yields the
    request log and the endpoint URL."""
    log: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            url = urlparse(self.path)
            q = parse_qs(url.query)
            log.append(self.path)
            if url.path != f"/v1/services/{COMPUTE}/skus":
                body = json.dumps({"error": {"code": 404, "message": "no such service"}}).encode()
                self.send_response(404)
            else:
                start = int(q.get("pageToken", ["0"])[0])
                page: dict[str, Any] = {"skus": skus[start : start + 2]}
                if start + 2 < len(skus):
                    page["nextPageToken"] = str(start + 2)
                body = json.dumps(page).encode()
                self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield log, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def catalog_source(endpoint: str, **options: Any) -> dict[str, Any]:
    return {
        "name": "gcp-prices",
        "kind": "gcp_catalog",
        "location": endpoint,
        "options": {"anonymous": True, **options},
    }


def test_gpu_list_prices_are_fetched_and_cached(tmp_path: Path) -> None:
    with catalog_server() as (log, endpoint):
        cfg = Config.model_validate({"sources": [catalog_source(endpoint)]})
        before = datetime.now(UTC)
        report = ingest_source(cfg, cfg.source("gcp-prices"), [date(2026, 10, 2)], tmp_path)
        assert len(log) == 2  # two pages
        assert all("currencyCode=USD" in r for r in log)
        assert "pageToken=2" in log[1]
        today = datetime.now(UTC).date()
        assert report.partitions == [f"date={today}"]
        rows = pl.read_parquet(
            tmp_path / f"raw/gcp_catalog_skus/gcp-prices/date={today}/part-0.parquet"
        ).sort("sku_id", "tier_start_usage_amount")
        # the CPU SKU is not kept; the A100 has no resource group but an Nvidia description
        assert rows.select("sku_id", "tier_start_usage_amount", "unit_price").rows() == [
            (H100, 0.0, 11.06095),
            ("1B2C-3D4E-5F60", 0.0, 0.2236),
            ("1B2C-3D4E-5F60", 720.0, 0.2),
            ("7F7F-0A0A-1B1B", 0.0, 1.5),
        ]
        h100 = rows.row(0, named=True)
        assert json.loads(h100["service_regions"]) == ["us-central1", "us-east4"]
        assert (h100["usage_unit"], h100["currency_code"], h100["usage_type"]) == (
            "h",
            "USD",
            "OnDemand",
        )
        assert h100["effective_time"] == datetime(2026, 9, 1, tzinfo=UTC)
        assert before <= h100["fetched_at"] <= datetime.now(UTC)
        assert h100["x_source_file"] == f"{endpoint}/v1/services/{COMPUTE}/skus"

        # a second run within max_age_hours reuses the landed fetch
        report = ingest_source(cfg, cfg.source("gcp-prices"), [date(2026, 10, 3)], tmp_path)
        assert len(log) == 2
        assert report.partitions == []
        assert any("reused, the API was not called" in w for w in report.warnings)
        # max_age_hours 0: fetched again
        cfg = Config.model_validate({"sources": [catalog_source(endpoint, max_age_hours=0)]})
        ingest_source(cfg, cfg.source("gcp-prices"), [date(2026, 10, 3)], tmp_path)
        assert len(log) == 4


def test_unknown_service_fails_naming_it(tmp_path: Path) -> None:
    from ingest.core.errors import IngestError

    with catalog_server() as (_, endpoint):
        cfg = Config.model_validate(
            {"sources": [catalog_source(endpoint, services=["0000-1111-2222"])]}
        )
        with pytest.raises(IngestError, match=r"list_skus\(services/0000-1111-2222\) failed"):
            ingest_source(cfg, cfg.source("gcp-prices"), [date(2026, 10, 2)], tmp_path)
        assert not (tmp_path / "raw/gcp_catalog_skus/gcp-prices").exists()
