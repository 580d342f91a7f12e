"""Issue 11, finding 9 (billing numbers): a FOCUS CSV that quotes every field lands its empty
optional numbers as null instead of quarantining the line; NaN / inf in a money or quantity
field is quarantined naming the field; a negative usage quantity is quarantined only where the
format says it is impossible (CUR usage lines, GCP regular rows), while credits, refunds and
corrections keep their negative costs and quantities."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import polars as pl

from ingest.billing.aws_cur import ledger_of
from ingest.billing.aws_cur_files import normalise
from ingest.billing.focus import MANDATORY_1_0, read_focus_file
from ingest.billing.gcp_billing import read_gcp_billing_csv
from ingest.billing.totals import LEDGER_SCHEMA

FOCUS_BASE = {
    "BillingAccountId": "123",
    "BillingAccountName": "acme",
    "BillingCurrency": "USD",
    "BillingPeriodStart": "2026-11-01 00:00:00",
    "BillingPeriodEnd": "2026-12-01 00:00:00",
    "ChargeCategory": "Usage",
    "ChargeClass": "",
    "ChargeDescription": "p5.48xlarge",
    "ChargePeriodStart": "2026-11-29 00:00:00",
    "ChargePeriodEnd": "2026-11-29 01:00:00",
    "InvoiceIssuerName": "AWS",
    "PricingUnit": "Hours",
    "ProviderName": "AWS",
    "PublisherName": "AWS",
    "ServiceCategory": "Compute",
    "ServiceName": "EC2",
}
COLUMNS = [*MANDATORY_1_0, "ContractedUnitPrice", "ConsumedQuantity"]


def _focus_file(path: Path, rows: list[dict[str, str]]) -> Path:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=COLUMNS, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: "" for c in COLUMNS} | FOCUS_BASE | r)
    path.write_text(out.getvalue())
    return path


def _costs(billed: str, qty: str = "1", **extra: str) -> dict[str, str]:
    return {
        "BilledCost": billed,
        "EffectiveCost": billed,
        "ContractedCost": billed,
        "ListCost": billed,
        "PricingQuantity": qty,
        **extra,
    }


def test_fully_quoted_focus_file_lands_empty_optionals_as_null(tmp_path: Path) -> None:
    f = _focus_file(
        tmp_path / "focus.csv",
        [
            # line 2: ContractedUnitPrice and ConsumedQuantity are "" (empty, quoted)
            _costs("98.32"),
            # line 3: a credit: negative cost and negative quantity land
            _costs("-3.00", "-1", ChargeCategory="Credit", ConsumedQuantity="-1"),
            # line 4: a correction with a price
            _costs("0.5", "2", ContractedUnitPrice="0.25"),
        ],
    )
    text = f.read_text()
    assert '"ContractedUnitPrice"' in text and ',"",' in text  # every field quoted
    r = read_focus_file(f, source="focus")
    assert r.quarantine.height == 0
    # 98.32 - 3.00 + 0.50 = 95.82
    assert round(r.rows["BilledCost"].sum(), 9) == 95.82
    assert r.rows["ContractedUnitPrice"].to_list() == [None, None, 0.25]
    assert r.rows["ConsumedQuantity"].to_list() == [None, -1.0, None]
    assert r.rows["PricingQuantity"].to_list() == [1.0, -1.0, 2.0]


def test_nan_and_inf_are_quarantined_naming_the_field(tmp_path: Path) -> None:
    f = _focus_file(
        tmp_path / "focus.csv",
        [
            _costs("10.00"),
            _costs("NaN"),
            _costs("1.75", ListCost="inf"),
            _costs("2.00", "-Infinity"),
        ],
    )
    r = read_focus_file(f, source="focus")
    assert r.rows["BilledCost"].to_list() == [10.0]
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (3, "BilledCost is not a finite number: NaN"),
        (4, "ListCost is not a finite number: inf"),
        (5, "PricingQuantity is not a finite number: -Infinity"),
    ]


def test_cur_nan_cost_and_negative_usage_on_usage_lines() -> None:
    raw = pl.DataFrame(
        {
            "line_item_line_item_type": ["Usage", "Usage", "Refund", "Usage", "Credit"],
            "line_item_usage_amount": ["1", "-2", "-2", "", ""],
            "line_item_unblended_cost": ["4.5", "-9", "-9", "nan", "-1"],
            "line_item_currency_code": ["USD"] * 5,
        }
    )
    out = normalise(raw, True, {})
    assert out["_reject"].to_list() == [
        None,
        "negative line_item_usage_amount on a Usage line: -2.0",
        None,  # a refund may give usage back
        "line_item_unblended_cost is not a finite number",
        None,
    ]
    # the source totals count the NaN row as unreadable instead of summing to NaN
    ledger = ledger_of(raw, "cur.csv", "2026-11")
    assert ledger.schema == pl.Schema(LEDGER_SCHEMA)
    assert ledger["amount"].to_list() == [4.5, -9.0, -9.0, None, -1.0]
    assert ledger["amount"].sum() == 4.5 - 9 - 9 - 1


def test_gcp_inf_cost_and_negative_regular_usage(tmp_path: Path) -> None:
    header = "cost,currency,invoice.month,cost_type,usage.amount,usage.unit"
    f = tmp_path / "gcp.csv"
    f.write_text(
        "\n".join(
            [
                header,
                '"1.25","USD","202611","regular","3600",""',  # line 2: good, quoted
                '"2.5","USD","202611","regular","-3600","seconds"',  # 3: impossible
                '"-2.5","USD","202611","adjustment","-3600","seconds"',  # 4: a correction
                '"inf","USD","202611","regular","1","seconds"',  # 5
                '"1","USD","202611","regular","1","seconds"',  # 6
            ]
        )
        + "\n"
    )
    r = read_gcp_billing_csv(f, source="gcp")
    assert r.rows["x_line_number"].to_list() == [2, 4, 6]
    # 1.25 - 2.5 + 1 = -0.25
    assert r.rows["cost"].sum() == -0.25
    assert r.rows["usage_unit"].to_list() == [None, "seconds", "seconds"]
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (3, "negative usage.amount on a regular row: -3600.0"),
        (5, "cost is not a finite number: 'inf'"),
    ]


def test_focus_csv_with_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    """Issue 11, finding 9c: invalid bytes were replaced silently (polars utf8-lossy). Now the
    row on such a line is quarantined naming the line, with the bytes escaped; the option
    `encoding` reads a file written in another encoding."""
    f = _focus_file(
        tmp_path / "focus.csv",
        [_costs("10.00"), _costs("5.00", ChargeDescription="CAFE"), _costs("1.25")],
    )
    f.write_bytes(f.read_bytes().replace(b"CAFE", b"caf\xe9"))  # Latin-1 on line 3
    r = read_focus_file(f, source="focus")
    assert r.rows["BilledCost"].to_list() == [10.0, 1.25]
    assert r.quarantine.select("x_source_file", "x_line_number", "reason").rows() == [
        (str(f), 3, "line 3: invalid UTF-8 bytes \\xe9 in the line")
    ]
    assert "caf\\\\xe9" in r.quarantine["raw"][0]  # the JSON of the row, bytes escaped
    r = read_focus_file(f, source="focus", options={"encoding": "latin-1"})
    assert r.quarantine.height == 0
    # 10.00 + 5.00 + 1.25 = 16.25
    assert r.rows["BilledCost"].sum() == 16.25
    assert r.rows["ChargeDescription"].to_list()[1] == "café"


def test_gcp_csv_with_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    f = tmp_path / "gcp.csv"
    f.write_bytes(
        b"cost,currency,invoice.month,sku.description\n"
        b"1.5,USD,202611,GPU\n"
        b'2.5,USD,202611,"multi\nline \xff"\n'  # one row on lines 3-4, the bad byte on line 4
        b"4,USD,202611,CPU\n"
    )
    r = read_gcp_billing_csv(f, source="gcp")
    assert r.rows["x_line_number"].to_list() == [2, 5]
    assert r.rows["cost"].sum() == 5.5  # 1.5 + 4
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (3, "line 4: invalid UTF-8 bytes \\xff in the line")
    ]
