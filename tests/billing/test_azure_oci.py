"""Azure EA cost exports (one with a UTF-8 byte-order mark, `M/D/YYYY` and `MM/DD/YYYY` dates,
brace-less Tags) and an OCI cost report (times without seconds, `tags/*` columns, 18-decimal
costs), mapped to FOCUS in `focus_lines`. Expected numbers come from the files (csv module)."""

from __future__ import annotations

import csv
import json
import os
from collections import defaultdict
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from fleetledger.config import Config
from ingest.core.errors import IngestError
from ingest.registry import ingest_source

REPO = Path(__file__).resolve().parents[2]
AZURE_BOM = "finops-toolkit-EA_ActualCost_Small.csv"
AZURE_CAD = "focus-converters-sample-anonymous-azure-ea-export.csv"
OCI = "focus-converters-oci-reports-cost-csv.csv"


def samples() -> Path:
    for c in (
        os.environ.get("FLEETLEDGER_SAMPLES"),
        REPO / "shared" / "samples",
        REPO.parent / "shared" / "samples",
    ):
        if c and (Path(c) / "azure").is_dir() and (Path(c) / "oci").is_dir():
            return Path(c)
    pytest.skip("shared/samples/azure and oci are not available")


def csv_dicts(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh))


def config(name: str, kind: str, location: Path | str) -> Config:
    return Config.model_validate(
        {"sources": [{"name": name, "kind": kind, "location": str(location)}]}
    )


def landed(home: Path, source: str) -> pl.DataFrame:
    return pl.read_parquet(home / f"raw/focus_lines/{source}/*/part-0.parquet")


def test_azure_ea_exports(tmp_path: Path) -> None:
    bom, cad = samples() / "azure" / AZURE_BOM, samples() / "azure" / AZURE_CAD
    assert bom.read_bytes()[:3] == b"\xef\xbb\xbf"
    expected: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"rows": 0, "cost": Decimal(0)}
    )
    for path, cost_col, currency_col in (
        (bom, "Cost", "BillingCurrency"),
        (cad, "CostInBillingCurrency", "BillingCurrencyCode"),
    ):
        for r in csv_dicts(path):
            e = expected[(path.name, r[currency_col])]
            e["rows"] += 1
            e["cost"] += Decimal(r[cost_col])
    assert sorted(expected) == [(AZURE_BOM, "USD"), (AZURE_CAD, "CAD")]

    cfg = config("azure-ea", "azure_cost", samples() / "azure" / "*.csv")
    report = ingest_source(cfg, cfg.source("azure-ea"), [date(2023, 9, 2)], tmp_path)
    assert report.partitions == ["period=2023-09"]
    assert (report.rows_landed, report.rows_quarantined) == (38, 0)
    lines = landed(tmp_path, "azure-ea")
    for (name, currency), e in expected.items():
        part = lines.filter(
            pl.col("x_source_file").str.ends_with(name) & (pl.col("BillingCurrency") == currency)
        )
        assert part.height == e["rows"]
        assert part["BilledCost"].sum() == pytest.approx(float(e["cost"]), abs=1e-12)
        assert part["EffectiveCost"].sum() == pytest.approx(float(e["cost"]), abs=1e-12)
    assert set(lines["x_provider"]) == {"azure"}
    assert set(lines["ServiceProviderName"]) == {"Microsoft"}

    # the byte-order-marked first column is read; MM/DD/YYYY dates; the reservation purchase
    purchase = lines.filter(pl.col("ChargeCategory") == "Purchase").row(0, named=True)
    assert purchase["BillingAccountId"] == "8611537"
    assert purchase["ChargePeriodStart"] == datetime(2023, 9, 21, tzinfo=UTC)
    assert purchase["ChargePeriodEnd"] == datetime(2023, 9, 22, tzinfo=UTC)
    assert (purchase["BillingPeriodStart"], purchase["BillingPeriodEnd"]) == (
        datetime(2023, 9, 1, tzinfo=UTC),
        datetime(2023, 10, 1, tzinfo=UTC),  # 09/30/2023 is the last day: exclusive end
    )
    assert (purchase["PricingCategory"], purchase["CommitmentDiscountType"]) == (
        "Committed",
        "Reservation",
    )
    assert purchase["CommitmentDiscountName"] == "VM_RI_06-21-2023_18-56"
    # M/D/YYYY dates, brace-less Tags, ListCost from PayGPrice x Quantity
    first = lines.filter(
        pl.col("x_source_file").str.ends_with(AZURE_CAD) & (pl.col("x_line_number") == 2)
    ).row(0, named=True)
    row = csv_dicts(cad)[0]
    assert first["ChargePeriodStart"] == datetime(2023, 9, 2, tzinfo=UTC)
    assert json.loads(first["Tags"]) == {"tagA": "valueA", "tagB": "valueB", "tagC": "valueC"}
    assert first["ListCost"] == pytest.approx(
        float(Decimal(row["PayGPrice"]) * Decimal(row["Quantity"]))
    )
    assert first["ContractedCost"] == pytest.approx(
        float(Decimal(row["UnitPrice"]) * Decimal(row["Quantity"]))
    )
    assert (first["RegionId"], first["SubAccountId"], first["SkuId"]) == (
        "centralus",
        row["SubscriptionId"],
        row["MeterId"],
    )
    assert json.loads(first["x_extra"])["AdditionalInfo"] == row["AdditionalInfo"]
    spot = lines.filter(
        pl.col("x_source_file").str.ends_with(AZURE_CAD) & (pl.col("PricingCategory") == "Dynamic")
    )
    assert spot.height == sum(r["PricingModel"] == "Spot" for r in csv_dicts(cad))


def test_azure_export_without_a_cost_column_fails(tmp_path: Path) -> None:
    rows = csv_dicts(samples() / "azure" / AZURE_CAD)
    header = [c for c in rows[0] if c != "CostInBillingCurrency"]
    f = tmp_path / "export.csv"
    with f.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    cfg = config("azure-ea", "azure_cost", f)
    with pytest.raises(IngestError) as err:
        ingest_source(cfg, cfg.source("azure-ea"), [date(2023, 9, 2)], tmp_path / "h")
    assert str(err.value).startswith(
        f"{f}, line 1: Azure cost export lacks columns: CostInBillingCurrency or Cost or PreTaxCost"
    )
    assert not (tmp_path / "h/raw/focus_lines/azure-ea").exists()


def test_oci_cost_report(tmp_path: Path) -> None:
    path = samples() / "oci" / OCI
    rows = csv_dicts(path)
    total = sum(Decimal(r["cost/myCost"]) for r in rows)
    cfg = config("oci", "oci_cost", path)
    report = ingest_source(cfg, cfg.source("oci"), [date(2023, 11, 13)], tmp_path)
    assert report.partitions == ["period=2023-11"]
    assert (report.rows_landed, report.rows_quarantined) == (len(rows), 0) == (506, 0)
    lines = landed(tmp_path, "oci")
    assert lines["BilledCost"].sum() == pytest.approx(float(total), abs=1e-12)
    assert set(lines["BillingCurrency"]) == {"USD"}
    assert set(lines["x_provider"]) == {"oci"}
    first = lines.filter(pl.col("x_line_number") == 2).row(0, named=True)
    assert first["ChargePeriodStart"] == datetime(2023, 11, 13, 10, tzinfo=UTC)  # "10:00Z"
    assert first["ChargePeriodEnd"] == datetime(2023, 11, 13, 11, tzinfo=UTC)
    assert (first["ServiceName"], first["ServiceCategory"], first["SkuId"]) == (
        "DATABASE",
        "Databases",
        "B92911",
    )
    tags = {k.removeprefix("tags/"): v for k, v in rows[0].items() if k.startswith("tags/") and v}
    assert json.loads(first["Tags"]) == tags
    assert json.loads(first["x_extra"])["lineItem/referenceNo"] == rows[0]["lineItem/referenceNo"]
    # a tag key with a backslash survives as a JSON key
    keyed = lines.filter(pl.col("Tags").str.contains("DevRel", literal=True))
    expected = sum(1 for r in rows if r["tags/DevRel\\redbull-analytics-hol-4cb4.release"])
    assert keyed.height == expected
    totals = pl.read_parquet(
        tmp_path / "raw/billing_source_totals/oci/period=2023-11/part-0.parquet"
    )
    assert totals.select("total_basis", "source_rows").rows() == [("cost/myCost", 506)]
    assert totals["source_total"][0] == pytest.approx(float(total), abs=1e-12)


def test_oci_report_without_my_cost_fails(tmp_path: Path) -> None:
    path = samples() / "oci" / OCI
    f = tmp_path / "report.csv"
    f.write_text(path.read_text().replace("cost/myCost,", "cost/ourCost,", 1))
    cfg = config("oci", "oci_cost", f)
    with pytest.raises(
        IngestError,
        match=r"report\.csv, line 1: OCI cost report lacks columns "
        r"cost/myCost",
    ):
        ingest_source(cfg, cfg.source("oci"), [date(2023, 11, 13)], tmp_path / "h")
    assert not (tmp_path / "h/raw/focus_lines/oci").exists()
