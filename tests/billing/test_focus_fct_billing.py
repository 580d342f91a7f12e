"""Every GCP, FOCUS, Azure and OCI billing sample, landed and built with dbt into fct_billing:
totals per provider, source and billing period equal the files' (csv module, Decimal); the
reporting-currency columns use the configured rates; x_line_key is unique; ServiceProviderName
and ProviderName are kept; a GCP line without cost_at_list takes its ListCost from the Cloud
Catalog list price (fetched from the fake of test_gcp_catalog)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections import defaultdict
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest
from dbt_in_process import pipeline_dbt_args, shared_parse
from test_azure_oci import AZURE_BOM, AZURE_CAD, OCI, csv_dicts, samples
from test_focus_samples import PROVIDERS, focus_sample
from test_gcp_billing_files import CSV_2020, CSV_2022, by_hand, gcp_samples
from test_gcp_catalog import H100, catalog_server, catalog_source

from fleetledger.config import Config
from fleetledger.config_tables import write_config_tables
from ingest.registry import ingest_source
from orchestration.dbt_parse import dbt_working_dir

REPO = Path(__file__).resolve().parents[2]
CAD_RATE = 0.74
H100_PRICE = 11.06095  # the fake catalog's 11 units + 60950000 nanos


def gpu_rows() -> list[dict[str, Any]]:
    """Two H100 hours of a GCP detailed export: one with cost_at_list, one without."""
    base = {
        "billing_account_id": "01A2B3-C4D5E6-F7A8B9",
        "service": {"id": "6F81-5844-456A", "description": "Compute Engine"},
        "sku": {"id": H100, "description": "Nvidia H100 80GB GPU running in Americas"},
        "project": {"id": "fleet-ml-prod", "name": "fleet-ml-prod"},
        "labels": [{"key": "team", "value": "research"}],
        "location": {"region": "us-central1", "zone": "us-central1-a"},
        "cost": 70.0,
        "currency": "USD",
        "currency_conversion_rate": 1.0,
        "usage": {
            "amount": 28800,
            "unit": "seconds",
            "amount_in_pricing_units": 8.0,
            "pricing_unit": "hour",
        },
        "credits": [{"name": "CUD", "amount": -20.0, "type": "COMMITTED_USAGE_DISCOUNT"}],
        "invoice": {"month": "202409"},
        "cost_type": "regular",
    }
    return [
        dict(
            base,
            usage_start_time="2024-09-30T10:00:00Z",
            usage_end_time="2024-09-30T11:00:00Z",
            cost_at_list=99.0,
        ),
        dict(base, usage_start_time="2024-09-30T11:00:00Z", usage_end_time="2024-09-30T12:00:00Z"),
    ]


def dbt_run(home: Path) -> None:
    target, env = shared_parse(home, home / "dbt_target")
    dbt = Path(sys.executable).parent / "dbt"
    cmd = [str(dbt if dbt.exists() else "dbt"), "run", "--select", "+fct_billing"]
    cmd += pipeline_dbt_args(home, target)
    # as the pipeline runs dbt: in the home's build/, the profile the same for every home
    workdir = dbt_working_dir(home)
    workdir.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(
        cmd, env=dict(os.environ, **env), cwd=workdir, capture_output=True, text=True, timeout=600
    )
    assert p.returncode == 0, p.stdout[-6000:] + p.stderr[-3000:]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    home = tmp_path_factory.mktemp("billing_warehouse")
    gpu = home / "gcp-gpu.jsonl"
    gpu.write_text("\n".join(json.dumps(r) for r in gpu_rows()) + "\n")
    with catalog_server() as (_, endpoint):
        cfg = Config.model_validate(
            {
                "reporting_currency": "USD",
                "currency_rates": {"CAD": CAD_RATE},
                "sources": [
                    {
                        "name": "gcp-2020",
                        "kind": "gcp_billing",
                        "location": str(gcp_samples() / CSV_2020),
                    },
                    {
                        "name": "gcp-2022",
                        "kind": "gcp_billing",
                        "location": str(gcp_samples() / CSV_2022),
                    },
                    {"name": "gcp-gpu", "kind": "gcp_billing", "location": str(gpu)},
                    catalog_source(endpoint),
                    {"name": "focus", "kind": "focus", "location": str(focus_sample())},
                    {
                        "name": "azure",
                        "kind": "azure_cost",
                        "location": str(samples() / "azure" / "*.csv"),
                    },
                    {"name": "oci", "kind": "oci_cost", "location": str(samples() / "oci" / OCI)},
                ],
            }
        )
        days = {
            "gcp-2020": [date(2020, 11, 9)],
            "gcp-2022": [date(2022, 8, 1)],
            "gcp-gpu": [date(2024, 9, 30)],
            "gcp-prices": [date(2024, 9, 30)],
            "focus": [date(2024, 9, 30)],
            "azure": [date(2023, 9, 2)],
            "oci": [date(2023, 11, 13)],
        }
        for source in cfg.sources:
            ingest_source(cfg, source, days[source.name], home)
    write_config_tables(cfg, home)
    dbt_run(home)
    return duckdb.connect(str(home / "build" / "warehouse.duckdb"), read_only=True)


def expected_totals() -> dict[tuple[str, str, str, str], tuple[int, Decimal]]:
    """(x_source, provider, period, currency) → rows and BilledCost, from the files."""
    out: dict[tuple[str, str, str, str], list[Any]] = defaultdict(lambda: [0, Decimal(0)])
    for source, name in (("gcp-2020", CSV_2020), ("gcp-2022", CSV_2022)):
        for period, e in by_hand(gcp_samples() / name).items():
            g = out[(source, "gcp", period, "USD")]
            g[0] += e["rows"]
            g[1] += e["cost"] + e["credits"]
    for r in gpu_rows():
        g = out[("gcp-gpu", "gcp", "2024-09", "USD")]
        g[0] += 1
        g[1] += Decimal(str(r["cost"])) + sum(Decimal(str(c["amount"])) for c in r["credits"])
    with focus_sample().open(newline="") as fh:
        for r in csv.DictReader(fh):
            key = (
                "focus",
                PROVIDERS[r["ProviderName"]],
                r["BillingPeriodStart"][:7],
                r["BillingCurrency"],
            )
            out[key][0] += 1
            out[key][1] += Decimal(r["BilledCost"])
    for name, cost, currency in (
        (AZURE_BOM, "Cost", "BillingCurrency"),
        (AZURE_CAD, "CostInBillingCurrency", "BillingCurrencyCode"),
    ):
        for r in csv_dicts(samples() / "azure" / name):
            key = ("azure", "azure", "2023-09", r[currency])
            out[key][0] += 1
            out[key][1] += Decimal(r[cost])
    for r in csv_dicts(samples() / "oci" / OCI):
        key = ("oci", "oci", r["lineItem/intervalUsageStart"][:7], r["cost/currencyCode"])
        out[key][0] += 1
        out[key][1] += Decimal(r["cost/myCost"])
    return {k: (v[0], v[1]) for k, v in out.items()}


def test_fct_billing_totals_equal_the_sources(warehouse: duckdb.DuckDBPyConnection) -> None:
    got = {
        (s, p, period, cur): (n, billed, reporting)
        for s, p, period, cur, n, billed, reporting in warehouse.execute(
            """
            select x_source, x_provider, strftime("BillingPeriodStart", '%Y-%m'),
                   "BillingCurrency", count(*), sum("BilledCost"), sum(x_billed_cost_reporting)
            from fct_billing
            where x_source <> 'rate_card'
            group by all
            """
        ).fetchall()
    }
    expected = expected_totals()
    assert sorted(got) == sorted(expected)
    for key, (rows, billed) in expected.items():
        n, total, reporting = got[key]
        assert n == rows, key
        assert total == pytest.approx(float(billed), abs=1e-9), key
        rate = CAD_RATE if key[3] == "CAD" else 1.0
        assert reporting == pytest.approx(float(billed) * rate, abs=1e-9), key
    # per provider and period, all sources together
    by_provider: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for (_, provider, period, _), (_, billed) in expected.items():
        by_provider[(provider, period)] += billed
    rows = warehouse.execute(
        """select x_provider, strftime("BillingPeriodStart", '%Y-%m'), sum("BilledCost")
           from fct_billing where x_source <> 'rate_card' group by all"""
    ).fetchall()
    assert sorted((p, b) for p, b, _ in rows) == sorted(by_provider)
    for provider, period, total in rows:
        assert total == pytest.approx(float(by_provider[(provider, period)]), abs=1e-9)


def test_fct_billing_keys_and_provider_columns(warehouse: duckdb.DuckDBPyConnection) -> None:
    n, distinct, nulls = warehouse.execute(
        "select count(*), count(distinct x_line_key), count(*) - count(x_line_key) from fct_billing"
    ).fetchone()
    assert n == distinct and nulls == 0
    assert n == sum(rows for rows, _ in expected_totals().values())
    providers = warehouse.execute(
        """select distinct x_provider, "ServiceProviderName", "ProviderName" from fct_billing
           order by 1"""
    ).fetchall()
    assert providers == [
        ("aws", "AWS", "AWS"),
        ("azure", "Microsoft", "Microsoft"),
        ("gcp", "Google Cloud", "Google Cloud"),
        ("oci", "Oracle", "Oracle"),
    ]
    # the GCP project is the sub-account, its labels the tags
    sub, tags = warehouse.execute(
        """select "SubAccountId", "Tags" from fct_billing where x_source = 'gcp-gpu' limit 1"""
    ).fetchone()
    assert (sub, json.loads(tags)) == ("fleet-ml-prod", {"team": "research"})


def test_gcp_list_cost_from_the_catalog(warehouse: duckdb.DuckDBPyConnection) -> None:
    rows = warehouse.execute(
        """select "ChargePeriodStart", "ListCost", "BilledCost", "EffectiveCost"
           from fct_billing where x_source = 'gcp-gpu' order by 1"""
    ).fetchall()
    # with cost_at_list: the export's; without: 8 hours x the catalog's H100 price
    assert [(r[1], r[2], r[3]) for r in rows] == [
        (99.0, 50.0, 50.0),
        (pytest.approx(8 * H100_PRICE), 50.0, 50.0),
    ]
    fetched = warehouse.execute(
        "select count(*), min(fetched_at) is not null from intermediate.int_gcp_list_prices"
    ).fetchone()
    assert fetched == (3, True)  # the three GPU SKUs of the fake, one price version each
