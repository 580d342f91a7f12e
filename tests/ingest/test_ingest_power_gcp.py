from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ingest.billing.gcp_billing import read_gcp_billing_jsonl
from ingest.core.errors import IngestError
from ingest.core.landing import polars_schema
from ingest.telemetry.power import read_power_csv

# --------------------------------------------------------------------------- power


def test_power_csv(tmp_path: Path) -> None:
    f = tmp_path / "power-2026-11-02.csv"
    f.write_text(
        "\ufefftimestamp,site,meter,kind,kw\n"
        "2026-11-02T00:00:00Z,dc1,main-feed,facility,412.5\n"
        "2026-11-02T00:00:00Z,dc1,pdu-a,IT,300\n"
        "2026-11-02 01:01:00+01:00,dc1,pdu-b,it,12.25\n"
        "2026-11-02T00:02:00,dc1,ups-1,ups,10\n"
        "2026-11-02T00:03:00Z,dc1,pdu-a,it,-1\n"
        "not a time,dc1,pdu-a,it,1\n"
        "2026-11-02T00:04:00Z,dc1,pdu-a,it,abc\n"
        "2026-11-02T00:05:00Z,,pdu-a,it,1\n"
    )
    r = read_power_csv(f, source="onprem-power")
    assert r.rows.schema == polars_schema("power_readings")
    assert r.rows.select("time", "site", "meter", "kind", "kw", "x_line_number").rows() == [
        (datetime(2026, 11, 2, tzinfo=UTC), "dc1", "main-feed", "facility", 412.5, 2),
        (datetime(2026, 11, 2, tzinfo=UTC), "dc1", "pdu-a", "it", 300.0, 3),
        (datetime(2026, 11, 2, 0, 1, tzinfo=UTC), "dc1", "pdu-b", "it", 12.25, 4),
    ]
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (5, "kind must be facility or it, got ups"),
        (6, "kw is negative"),
        (7, "unparseable timestamp not a time"),
        (8, "kw is not a number: abc"),
        (9, "empty site"),
    ]
    assert r.quarantine["raw"][0] == "2026-11-02T00:02:00,dc1,ups-1,ups,10"


def test_power_csv_timezone_and_bad_header(tmp_path: Path) -> None:
    f = tmp_path / "p.csv"
    f.write_text("timestamp,site,meter,kind,kw\n2026-07-01 12:00:00,dc1,m,facility,1\n")
    r = read_power_csv(f, source="p", options={"timezone": "America/New_York"})
    assert r.rows["time"].to_list() == [datetime(2026, 7, 1, 16, tzinfo=UTC)]
    f.write_text("time,site,kw\n2026-07-01,dc1,1\n")
    with pytest.raises(IngestError, match=r"p\.csv, line 1: power CSV lacks columns"):
        read_power_csv(f, source="p")


# --------------------------------------------------------------------------- GCP billing


def _gcp_row(**over: object) -> dict:
    row = {
        "billing_account_id": "01A2B3-C4D5E6-F7A8B9",
        "service": {"id": "6F81-5844-456A", "description": "Compute Engine"},
        "sku": {"id": "E1B5-1C3D-9F2B", "description": "Nvidia H100 80GB GPU running in Americas"},
        "usage_start_time": "2026-10-31 23:00:00 UTC",
        "usage_end_time": "2026-11-01T00:00:00Z",
        "project": {"id": "fleet-ml-prod", "number": "1234", "name": "Fleet ML"},
        "labels": [{"key": "team", "value": "serving"}, {"key": "env", "value": "prod"}],
        "system_labels": [],
        "location": {"location": "us-central1", "region": "us-central1", "zone": "us-central1-a"},
        "resource": {
            "name": "projects/fleet-ml-prod/instances/gke-ml-a3-pool-6917",
            "global_name": "//compute.googleapis.com/projects/fleet-ml-prod/zones/us-central1-a/"
            "instances/47475703985863",
        },
        "export_time": "2026-11-01T05:12:00.123Z",
        "cost": 88.49,
        "currency": "USD",
        "currency_conversion_rate": 1.0,
        "usage": {
            "amount": 28800.0,
            "unit": "seconds",
            "amount_in_pricing_units": 8.0,
            "pricing_unit": "hour",
        },
        "credits": [
            {"name": "CUD", "amount": -30.5, "full_name": "Committed use", "id": "c1", "type": "X"},
            {"name": "SUD", "amount": -1.25, "type": "SUSTAINED_USAGE_DISCOUNT"},
        ],
        "invoice": {"month": "202610"},
        "cost_type": "regular",
        "cost_at_list": 100.0,
    }
    row.update(over)
    return row


def test_gcp_billing_jsonl(tmp_path: Path) -> None:
    f = tmp_path / "gcp_billing_export_resource_v1_01A2B3_C4D5E6_F7A8B9_2026-11-01.jsonl"
    lines = [
        json.dumps(_gcp_row()),
        json.dumps(
            _gcp_row(
                credits=[],
                labels=[],
                invoice={"month": "202611"},
                cost="0.5",
                usage_start_time="2026-11-01T00:00:00Z",
                resource=None,
            )
        ),
        "{not json",
        json.dumps(_gcp_row(invoice={"month": "2026-11"})),
        "",
        json.dumps(_gcp_row(usage_start_time="yesterday")),
    ]
    f.write_text("\n".join(lines) + "\n")
    r = read_gcp_billing_jsonl(f, source="gcp")
    assert r.rows.schema == polars_schema("gcp_billing_lines")
    assert r.rows.height == 2
    a, b = r.rows.iter_rows(named=True)
    assert a["service_id"] == "6F81-5844-456A"
    assert a["sku_description"] == "Nvidia H100 80GB GPU running in Americas"
    assert a["usage_start_time"] == datetime(2026, 10, 31, 23, tzinfo=UTC)
    assert a["usage_end_time"] == datetime(2026, 11, 1, tzinfo=UTC)
    assert a["export_time"] == datetime(2026, 11, 1, 5, 12, 0, 123000, tzinfo=UTC)
    assert json.loads(a["labels"]) == {"env": "prod", "team": "serving"}
    assert a["credits_amount"] == pytest.approx(-31.75)
    assert [c["name"] for c in json.loads(a["credits"])] == ["CUD", "SUD"]
    assert (a["project_id"], a["project_name"], a["location_region"], a["location_zone"]) == (
        "fleet-ml-prod",
        "Fleet ML",
        "us-central1",
        "us-central1-a",
    )
    assert a["resource_name"] == "projects/fleet-ml-prod/instances/gke-ml-a3-pool-6917"
    assert (a["usage_amount"], a["usage_unit"], a["usage_amount_in_pricing_units"]) == (
        28800.0,
        "seconds",
        8.0,
    )
    assert (a["invoice_month"], a["cost"], a["cost_at_list"], a["cost_type"]) == (
        "202610",
        88.49,
        100.0,
        "regular",
    )
    assert (b["invoice_month"], b["cost"], b["credits_amount"], b["credits"], b["labels"]) == (
        "202611",
        0.5,
        0.0,
        "[]",
        "{}",
    )
    assert b["resource_name"] is None
    assert r.rows["x_line_number"].to_list() == [1, 2]
    reasons = r.quarantine.select("x_line_number", "reason").rows()
    assert [n for n, _ in reasons] == [3, 4, 6]
    assert reasons[0][1].startswith("not valid JSON")
    assert reasons[1][1] == "invoice.month is not YYYYMM: '2026-11'"
    assert reasons[2][1] == "unparseable time in usage_start_time: 'yesterday'"


def test_gcp_billing_not_jsonl(tmp_path: Path) -> None:
    f = tmp_path / "export.csv"
    f.write_text("billing_account_id,service.id\n01A2,6F81\n")
    with pytest.raises(IngestError, match=r"export\.csv, line 1: not JSON lines: not valid JSON"):
        read_gcp_billing_jsonl(f, source="gcp")
