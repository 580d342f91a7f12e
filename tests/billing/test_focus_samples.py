"""FOCUS files: the official 1000-row FOCUS 1.0 sample (quoted values, literal NULLs, AWS /
Microsoft / Oracle rows), the same rows as Parquet, as FOCUS 1.3 (ServiceProviderName,
HostProviderName) and with snake_case headers; a renamed or missing mandatory column; rows that
break a rule. Expected numbers come from the sample with the csv module."""

from __future__ import annotations

import csv
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
FOCUS_SAMPLE = "focus-sample-data-1.0-focus_sample-1000.csv"
PROVIDERS = {"AWS": "aws", "Microsoft": "azure", "Oracle": "oci"}
DAY = date(2024, 9, 30)


def focus_sample() -> Path:
    for c in (
        os.environ.get("FLEETLEDGER_SAMPLES"),
        REPO / "shared" / "samples",
        REPO.parent / "shared" / "samples",
    ):
        if c and (Path(c) / "focus" / FOCUS_SAMPLE).is_file():
            return Path(c) / "focus" / FOCUS_SAMPLE
    pytest.skip("shared/samples/focus is not available")


def sample_rows() -> tuple[list[str], list[dict[str, str]]]:
    with focus_sample().open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def by_hand(rows: list[dict[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(provider, YYYY-MM of BillingPeriodStart) → rows and Decimal sums of the cost columns."""
    out: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"rows": 0, "billed": Decimal(0), "effective": Decimal(0), "list": Decimal(0)}
    )
    for r in rows:
        g = out[(PROVIDERS[r["ProviderName"]], r["BillingPeriodStart"][:7])]
        g["rows"] += 1
        g["billed"] += Decimal(r["BilledCost"])
        g["effective"] += Decimal(r["EffectiveCost"])
        g["list"] += Decimal(r["ListCost"])
    return dict(out)


def write_csv(path: Path, header: list[str], rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header, quoting=csv.QUOTE_ALL)
        w.writeheader()
        w.writerows(rows)
    # the sample writes NULL unquoted: do the same
    path.write_text(path.read_text().replace('"NULL"', "NULL"))
    return path


def focus_config(location: Path | str, **options: Any) -> Config:
    return Config.model_validate(
        {
            "sources": [
                {"name": "focus", "kind": "focus", "location": str(location), "options": options}
            ]
        }
    )


def landed(home: Path, source: str = "focus") -> pl.DataFrame:
    return pl.read_parquet(home / f"raw/focus_lines/{source}/*/part-0.parquet")


def test_focus_1_0_sample_lands_its_totals(tmp_path: Path) -> None:
    header, rows = sample_rows()
    expected = by_hand(rows)
    assert sorted(expected) == [
        ("aws", "2024-09"),
        ("azure", "2024-09"),
        ("oci", "2024-09"),
        ("oci", "2024-10"),
    ]
    cfg = focus_config(focus_sample())
    report = ingest_source(cfg, cfg.source("focus"), [DAY], tmp_path)
    # 30 September: its Oracle line billed in October lands October too
    assert report.partitions == ["period=2024-09", "period=2024-10"]
    assert (report.rows_landed, report.rows_quarantined) == (1000, 0)
    lines = landed(tmp_path)
    got = {
        (p, b): (n, billed, effective, lst)
        for p, b, n, billed, effective, lst in lines.group_by("x_provider", "x_billing_period")
        .agg(
            pl.len(),
            pl.col("BilledCost").sum(),
            pl.col("EffectiveCost").sum(),
            pl.col("ListCost").sum(),
        )
        .iter_rows()
    }
    assert sorted(got) == sorted(expected)
    for key, e in expected.items():
        n, billed, effective, lst = got[key]
        assert n == e["rows"], key
        assert billed == pytest.approx(float(e["billed"]), abs=1e-9), key
        assert effective == pytest.approx(float(e["effective"]), abs=1e-9), key
        assert lst == pytest.approx(float(e["list"]), abs=1e-9), key
    # literal NULLs are nulls, by hand
    for column in ("AvailabilityZone", "ContractedCost", "ResourceId", "Tags", "ChargeClass"):
        assert lines[column].null_count() == sum(r[column] == "NULL" for r in rows), column
    # empty strings too (PricingCategory is empty on the Oracle rows)
    assert lines["PricingCategory"].null_count() == sum(r["PricingCategory"] == "" for r in rows)
    # the non-FOCUS column Id is kept in x_extra; the version detected is 1.0
    first = lines.filter(pl.col("x_line_number") == 2).row(0, named=True)
    assert first["x_extra"] == '{"Id":"11472"}'
    assert (first["x_focus_version"], first["x_source_format"]) == ("1.0", "focus_csv")
    assert first["ChargePeriodStart"] == datetime(2024, 9, 18, 22, tzinfo=UTC)
    assert first["BillingPeriodEnd"] == datetime(2024, 10, 1, tzinfo=UTC)
    # Usage-based (Oracle's spelling) normalised to the spec's
    assert set(lines["ChargeFrequency"]) == {"Usage-Based", "One-Time"}


def test_focus_1_3_and_snake_case_headers(tmp_path: Path) -> None:
    header, rows = sample_rows()
    expected = by_hand(rows)
    # 1.3: ServiceProviderName and HostProviderName; ProviderName/PublisherName dropped
    header_13 = [
        "ServiceProviderName"
        if c == "ProviderName"
        else "HostProviderName"
        if c == "PublisherName"
        else c
        for c in header
    ]
    rows_13 = [
        {
            (
                "ServiceProviderName"
                if k == "ProviderName"
                else "HostProviderName"
                if k == "PublisherName"
                else k
            ): v
            for k, v in r.items()
        }
        for r in rows
    ]
    f13 = write_csv(tmp_path / "focus-1.3.csv", header_13, rows_13)
    cfg = focus_config(f13)
    ingest_source(cfg, cfg.source("focus"), [DAY], tmp_path / "h13")
    lines = landed(tmp_path / "h13")
    assert set(lines["x_focus_version"]) == {"1.3"}
    assert lines["ProviderName"].null_count() == 1000
    assert sorted(set(lines["ServiceProviderName"])) == ["AWS", "Microsoft", "Oracle"]
    billed = lines.group_by("x_provider", "x_billing_period").agg(pl.col("BilledCost").sum())
    for p, b, total in billed.iter_rows():
        assert total == pytest.approx(float(expected[(p, b)]["billed"]), abs=1e-9)

    # both the 1.3 and the deprecated columns: both kept as delivered
    both = [*header, "ServiceProviderName", "HostProviderName"]
    rows_both = [
        dict(r, ServiceProviderName=f"{r['ProviderName']} (service)", HostProviderName="Host")
        for r in rows[:50]
    ]
    fboth = write_csv(tmp_path / "focus-both.csv", both, rows_both)
    cfg = focus_config(fboth)
    ingest_source(cfg, cfg.source("focus"), [DAY], tmp_path / "hb")
    lines = landed(tmp_path / "hb")
    assert lines.select("ProviderName", "ServiceProviderName", "HostProviderName").row(0) == (
        "AWS",
        "AWS (service)",
        "Host",
    )
    assert set(lines["x_focus_version"]) == {"1.3"}
    # the provider comes from ServiceProviderName: a neocloud-like name is slugged
    assert set(lines["x_provider"]) == {f"{r['ProviderName'].lower()}-service" for r in rows[:50]}

    # snake_case headers (an Athena / warehouse export) map onto the FOCUS names
    snake = [
        "".join("_" + ch.lower() if ch.isupper() and i else ch.lower() for i, ch in enumerate(c))
        for c in header
    ]
    rows_snake = [dict(zip(snake, r.values(), strict=True)) for r in rows]
    fs = write_csv(tmp_path / "focus-snake.csv", snake, rows_snake)
    cfg = focus_config(fs)
    ingest_source(cfg, cfg.source("focus"), [DAY], tmp_path / "hs")
    lines = landed(tmp_path / "hs")
    assert lines.height == 1000
    assert lines["BilledCost"].sum() == pytest.approx(
        float(sum(e["billed"] for e in expected.values())), abs=1e-9
    )
    assert lines.filter(pl.col("x_line_number") == 2)["x_extra"][0] == '{"id":"11472"}'


def test_focus_parquet_lands_the_same_totals(tmp_path: Path) -> None:
    header, rows = sample_rows()
    expected = by_hand(rows)
    csv_frame = pl.read_csv(focus_sample(), infer_schema=False, null_values=["NULL"])
    typed = csv_frame.with_columns(
        *[pl.col(c).cast(pl.Float64) for c in ("BilledCost", "EffectiveCost", "ListCost")],
        *[
            pl.col(c).str.to_datetime("%Y-%m-%d %H:%M:%S")  # naive: taken as UTC
            for c in ("BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart")
        ],
        pl.col("ChargePeriodEnd").str.to_datetime("%Y-%m-%d %H:%M:%S").dt.replace_time_zone("UTC"),
    )
    typed.write_parquet(tmp_path / "focus.parquet")
    cfg = focus_config(tmp_path / "focus.parquet")
    report = ingest_source(cfg, cfg.source("focus"), [DAY], tmp_path / "h")
    assert (report.rows_landed, report.rows_quarantined) == (1000, 0)
    lines = landed(tmp_path / "h")
    assert set(lines["x_source_format"]) == {"focus_parquet"}
    assert sorted(lines["x_line_number"]) == list(range(1, 1001))
    for (p, b), e in expected.items():
        part = lines.filter((pl.col("x_provider") == p) & (pl.col("x_billing_period") == b))
        assert part.height == e["rows"]
        assert part["BilledCost"].sum() == pytest.approx(float(e["billed"]), abs=1e-9)
    totals = pl.read_parquet(tmp_path / "h/raw/billing_source_totals/focus/*/part-0.parquet")
    assert totals["source_rows"].sum() == 1000
    assert totals["source_total"].sum() == pytest.approx(
        float(sum(e["billed"] for e in expected.values())), abs=1e-9
    )


def test_renamed_or_missing_mandatory_column_fails_and_lands_nothing(tmp_path: Path) -> None:
    header, rows = sample_rows()
    folder = tmp_path / "exports"
    folder.mkdir()
    write_csv(folder / "a-good.csv", header, rows[:20])
    renamed = ["BilledCostUSD" if c == "BilledCost" else c for c in header]
    write_csv(
        folder / "b-renamed.csv",
        renamed,
        [{("BilledCostUSD" if k == "BilledCost" else k): v for k, v in r.items()} for r in rows],
    )
    cfg = focus_config(folder / "*.csv")
    home = tmp_path / "home"
    with pytest.raises(IngestError) as err:
        ingest_source(cfg, cfg.source("focus"), [DAY], home)
    assert str(err.value) == (
        f"{folder / 'b-renamed.csv'}, line 1: FOCUS 1.0 file lacks mandatory column BilledCost "
        "(renamed? 'BilledCostUSD' for BilledCost?)"
    )
    assert not (home / "raw/focus_lines/focus").exists()  # not even the good file's rows
    assert not (home / "raw/billing_source_totals/focus").exists()

    # a 1.3 file without HostProviderName
    (folder / "b-renamed.csv").unlink()
    header_13 = [*header, "ServiceProviderName"]
    write_csv(
        folder / "c-13.csv", header_13, [dict(r, ServiceProviderName="AWS") for r in rows[:5]]
    )
    with pytest.raises(IngestError) as err:
        ingest_source(cfg, cfg.source("focus"), [DAY], home)
    assert str(err.value) == (
        f"{folder / 'c-13.csv'}, line 1: FOCUS 1.3 file lacks mandatory column HostProviderName"
    )
    assert not (home / "raw/focus_lines/focus").exists()


def test_rows_that_break_a_rule_are_quarantined(tmp_path: Path) -> None:
    header, rows = sample_rows()
    rows = [dict(r) for r in rows[:10]]
    rows[1]["BilledCost"] = "12,5"
    rows[2]["BillingCurrency"] = "US$"
    rows[3]["ChargePeriodStart"] = "yesterday"
    rows[4]["BillingCurrency"] = "usd"  # normalised, lands
    rows[5]["Tags"] = "{not json"
    f = write_csv(tmp_path / "focus.csv", header, rows)
    cfg = focus_config(f)
    report = ingest_source(cfg, cfg.source("focus"), [DAY], tmp_path / "h")
    assert (report.rows_landed, report.rows_quarantined) == (7, 3)
    assert any(
        "Tags is not a JSON object in 1 rows; landed null (first: line 7)" in w
        for w in report.warnings
    )
    q = pl.read_parquet(tmp_path / "h/raw/quarantine/focus/period=2024-09/part-0.parquet")
    assert q.select("x_line_number", "reason").rows() == [
        (3, "BilledCost is not a number: 12,5"),
        (4, "BillingCurrency is not an ISO 4217 code: US$"),
        (5, "unparseable time in ChargePeriodStart: yesterday"),
    ]
    lines = landed(tmp_path / "h")
    assert lines.filter(pl.col("x_line_number") == 6)["BillingCurrency"][0] == "USD"
    assert lines.filter(pl.col("x_line_number") == 7)["Tags"][0] is None
    totals = pl.read_parquet(
        tmp_path / "h/raw/billing_source_totals/focus/period=2024-09/part-0.parquet"
    )
    # by hand: the quarantined rows' BilledCost as the file has it (line 3's is unreadable)
    quarantined = Decimal(rows[2]["BilledCost"]) + Decimal(rows[3]["BilledCost"])
    readable = sum(Decimal(r["BilledCost"]) for i, r in enumerate(rows) if i != 1)
    by_currency = {r["currency"]: r for r in totals.iter_rows(named=True)}
    assert set(by_currency) == {"USD", "US$"}
    assert by_currency["US$"]["quarantined_total"] == pytest.approx(float(rows[2]["BilledCost"]))
    usd = by_currency["USD"]
    assert (usd["source_rows"], usd["quarantined_rows"], usd["unreadable_rows"]) == (9, 2, 1)
    assert usd["source_total"] + by_currency["US$"]["source_total"] == pytest.approx(
        float(readable)
    )
    assert usd["quarantined_total"] + by_currency["US$"]["quarantined_total"] == pytest.approx(
        float(quarantined)
    )


def test_a_line_needs_a_provider_unless_the_source_names_it(tmp_path: Path) -> None:
    header, rows = sample_rows()
    rows = [dict(r) for r in rows[:5]]
    rows[0]["ProviderName"] = "NULL"
    f = write_csv(tmp_path / "neocloud.csv", header, rows)
    cfg = focus_config(f)
    report = ingest_source(cfg, cfg.source("focus"), [DAY], tmp_path / "a")
    assert (report.rows_landed, report.rows_quarantined) == (4, 1)
    q = pl.read_parquet(tmp_path / "a/raw/quarantine/focus/period=2024-09/part-0.parquet")
    assert q.select("x_line_number", "reason").rows() == [
        (2, "ServiceProviderName and ProviderName are empty")
    ]
    cfg = focus_config(f, provider="coreweave")
    report = ingest_source(cfg, cfg.source("focus"), [DAY], tmp_path / "b")
    assert (report.rows_landed, report.rows_quarantined) == (5, 0)
    assert set(landed(tmp_path / "b")["x_provider"]) == {"coreweave"}
