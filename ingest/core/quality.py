"""Great Expectations suites for the landing tables, validated one landed partition at a time.

A suite is a `Suite`: a small declaration per landing table (columns and their types, keys that
must not be null, unique keys, currency-code columns, value ranges and sets, and how the
partition bounds its period or time columns). `register_suite` adds one: the billing suites
are in ingest/billing/suites.py, the telemetry and scheduler ones in
ingest/core/quality_landed.py, e.g.

    register_suite(Suite(
        table="power_readings",
        columns={"time": "timestamp", "site": "string", "meter": "string", "kind": "string",
                 "kw": "float"},
        not_null=("time", "site", "meter", "kind", "kw"),
        value_sets={"kind": ("facility", "it")},
        ranges={"kw": (0, None)},
        within=(Within("time"),),
    ))

`validate_frame(df, table, partition)` builds an ephemeral GX context (once per process) and
an ExpectationSuite from the declaration for that partition, validates the frame (polars, via
Arrow, or pandas) and returns a `QualityResult` (pass/fail and, per failed expectation, the
column and what was found). `validate_partition(home, table, source, partition)` reads a landed
partition first. Column types are checked on the frame as pandas sees it (Arrow types mapped:
strings `str`, doubles `float64`, integers `int64`/`int32`, UTC timestamps `Timestamp`).

Great Expectations is imported on first use only (its import takes seconds).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl

from ingest.core.errors import IngestError

#: type families a suite can declare, and the scalar type GX finds in pandas for each
TYPE_FAMILIES: dict[str, str | None] = {
    "string": "str",
    "float": "float64",
    "int": "int64",
    "int32": "int32",
    "timestamp": "Timestamp",
    "date": "datetime64",
    "bool": "bool",
    "list": None,  # existence only (pandas holds lists as objects)
}

#: ISO 4217 currency codes (active, funds and a few recently withdrawn that old bills carry)
ISO_4217 = frozenset(
    """AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD
    BTN BWP BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUC CUP CVE CZK DJF DKK DOP DZD
    EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HRK HTG HUF IDR ILS INR IQD
    IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA
    MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP
    PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN SVC SYP
    SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV WST
    XAF XAG XAU XBA XBB XBC XBD XCD XCG XDR XOF XPD XPF XPT XSU XUA YER ZAR ZMW ZWG ZWL""".split()
)


# --------------------------------------------------------------------------- declarations


@dataclass(frozen=True)
class Within:
    """A timestamp column whose values lie in the partition's window (a `date=` day or a
    `period=` month), widened by `slack` on both sides."""

    column: str
    slack: timedelta = timedelta(0)


@dataclass(frozen=True)
class Equals:
    """A text column equal to the partition's start written with `fmt` (`%Y%m`, `%Y-%m`)."""

    column: str
    fmt: str


@dataclass(frozen=True)
class Suite:
    table: str
    columns: Mapping[str, str]  # column → type family (TYPE_FAMILIES)
    not_null: Sequence[str] = ()
    unique: Sequence[Sequence[str]] = ()  # keys, one or more columns each
    currency: Sequence[str] = ()  # ISO 4217 code columns
    ranges: Mapping[str, tuple[float | None, float | None]] = field(default_factory=dict)
    value_sets: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    ordered: Sequence[tuple[str, str]] = ()  # (a, b): a >= b where both are set
    within: Sequence[Within] = ()
    equals: Sequence[Equals] = ()
    #: more GX expectations for a partition: f(partition) → list of expectation objects
    extra: Callable[[str], list[Any]] | None = None

    def __post_init__(self) -> None:
        bad = {c: t for c, t in self.columns.items() if t not in TYPE_FAMILIES}
        if bad:
            raise ValueError(f"suite {self.table}: unknown type families {bad}")


SUITES: dict[str, Suite] = {}


def register_suite(suite: Suite) -> Suite:
    """Add (or replace) the suite of a landing table."""
    SUITES[suite.table] = suite
    return suite


def suite_for(table: str) -> Suite:
    try:
        return SUITES[table]
    except KeyError:
        raise IngestError(f"no quality suite for landing table {table!r}") from None


# --------------------------------------------------------------------------- partitions


def partition_window(partition: str) -> tuple[datetime, datetime]:
    """`date=YYYY-MM-DD` → that UTC day; `period=YYYY-MM` → that month, as [start, end)."""
    kind, _, value = partition.partition("=")
    try:
        if kind == "date":
            start = datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
            return start, start + timedelta(days=1)
        if kind == "period":
            start = datetime.strptime(value, "%Y-%m").replace(tzinfo=UTC)
            return start, (start + timedelta(days=32)).replace(day=1)
    except ValueError:
        pass
    raise IngestError(f"not a partition (date=YYYY-MM-DD or period=YYYY-MM): {partition!r}")


# --------------------------------------------------------------------------- results


@dataclass
class Failure:
    expectation: str
    column: str | None
    detail: str

    def __str__(self) -> str:
        where = f"{self.column}: " if self.column else ""
        return f"{where}{self.expectation} — {self.detail}"


@dataclass
class QualityResult:
    table: str
    partition: str | None
    rows: int
    expectations: int
    failures: list[Failure] = field(default_factory=list)
    source: str | None = None

    @property
    def passed(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        where = " ".join(x for x in (self.table, self.source, self.partition) if x)
        if self.passed:
            return f"{where}: {self.expectations} expectations met on {self.rows} rows"
        shown = "; ".join(str(f) for f in self.failures[:5])
        more = f" (+{len(self.failures) - 5} more)" if len(self.failures) > 5 else ""
        return (
            f"{where}: {len(self.failures)} of {self.expectations} expectations failed on "
            f"{self.rows} rows: {shown}{more}"
        )


# --------------------------------------------------------------------------- GX


@cache
def _gx() -> tuple[Any, Any, Any]:
    """(great_expectations, the expectations module, an ephemeral context without progress
    bars), imported and built once per process."""
    import great_expectations as gx
    import great_expectations.expectations as gxe
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    return gx, gxe, context


@cache
def _datasource() -> Any:
    """The pandas data source every landing table is an asset of (one per process)."""
    _, _, context = _gx()
    return context.data_sources.add_pandas("fleetledger_landing")


@cache
def _batch_definition(table: str) -> Any:
    """A whole-dataframe batch definition of the table's asset (created once per process)."""
    asset = _datasource().add_dataframe_asset(table)
    return asset.add_batch_definition_whole_dataframe("whole")


def build_expectations(suite: Suite, partition: str | None) -> list[Any]:
    """The GX expectation objects of `suite` for one partition."""
    _, gxe, _ = _gx()
    out: list[Any] = []
    for column, family in suite.columns.items():
        out.append(gxe.ExpectColumnToExist(column=column))
        gx_type = TYPE_FAMILIES[family]
        if gx_type is not None:
            out.append(gxe.ExpectColumnValuesToBeOfType(column=column, type_=gx_type))
    for column in suite.not_null:
        out.append(gxe.ExpectColumnValuesToNotBeNull(column=column))
    for key in suite.unique:
        if len(key) == 1:
            out.append(gxe.ExpectColumnValuesToBeUnique(column=key[0]))
        else:
            out.append(gxe.ExpectCompoundColumnsToBeUnique(column_list=list(key)))
    for column in suite.currency:
        out.append(gxe.ExpectColumnValuesToBeInSet(column=column, value_set=sorted(ISO_4217)))
    for column, (low, high) in suite.ranges.items():
        out.append(gxe.ExpectColumnValuesToBeBetween(column=column, min_value=low, max_value=high))
    for column, values in suite.value_sets.items():
        out.append(gxe.ExpectColumnValuesToBeInSet(column=column, value_set=list(values)))
    for a, b in suite.ordered:
        out.append(
            gxe.ExpectColumnPairValuesAToBeGreaterThanB(
                column_A=a, column_B=b, or_equal=True, ignore_row_if="either_value_is_missing"
            )
        )
    if partition is not None:
        start, end = partition_window(partition)
        for w in suite.within:
            out.append(
                gxe.ExpectColumnValuesToBeBetween(
                    column=w.column,
                    min_value=start - w.slack,
                    max_value=end + w.slack,
                    strict_max=True,
                )
            )
        for e in suite.equals:
            out.append(
                gxe.ExpectColumnValuesToBeInSet(column=e.column, value_set=[start.strftime(e.fmt)])
            )
        if suite.extra is not None:
            out.extend(suite.extra(partition))
    return out


def to_pandas(df: Any) -> Any:
    """A polars frame as pandas the way the suites expect it (nullable integers stay integers);
    a pandas frame as it is."""
    if not isinstance(df, pl.DataFrame):
        return df
    import pandas as pd
    import pyarrow as pa

    # strings as pandas' string dtype (pandas 2 would make them `object`, and a type
    # expectation then lists every row instead of naming the column's type)
    types = {
        pa.int64(): pd.Int64Dtype(),
        pa.int32(): pd.Int32Dtype(),
        pa.string(): pd.StringDtype(),
        pa.large_string(): pd.StringDtype(),
    }
    return df.to_arrow().to_pandas(types_mapper=types.get, date_as_object=False)


def _detail(result: Any) -> str:
    info = result.exception_info or {}
    if info.get("raised_exception"):
        return f"could not be evaluated: {info.get('exception_message')}"
    r = result.result or {}
    parts = []
    if "unexpected_count" in r and r.get("unexpected_count") is not None:
        pct = r.get("unexpected_percent")
        count = f"{r['unexpected_count']} rows"
        parts.append(f"{count} ({pct:.3g} %)" if isinstance(pct, int | float) else count)
        sample = [
            v
            for v in r.get("partial_unexpected_list") or []
            if v is not None
            and not (isinstance(v, float) and math.isnan(v))
            and type(v).__name__ not in ("NAType", "NaTType")
        ]
        if sample:
            parts.append(f"e.g. {', '.join(repr(v) for v in sample[:5])}")
    if "observed_value" in r:
        parts.append(f"found {r['observed_value']!r}")
    return "; ".join(parts) or "failed"


def _kwargs_text(kwargs: Mapping[str, Any]) -> str:
    shown = {
        k: v
        for k, v in kwargs.items()
        if k in ("type_", "min_value", "max_value", "value_set", "column_list", "column_B")
    }
    if "value_set" in shown and len(shown["value_set"]) > 5:
        shown["value_set"] = f"{len(shown['value_set'])} values"
    return ", ".join(f"{k}={v}" for k, v in shown.items())


def validate_frame(
    df: Any, table: str | Suite, partition: str | None = None, *, source: str | None = None
) -> QualityResult:
    """Validate a frame (polars or pandas) against the suite of `table` for `partition`."""
    suite = table if isinstance(table, Suite) else suite_for(table)
    gx, _, _ = _gx()
    expectations = build_expectations(suite, partition)
    gx_suite = gx.ExpectationSuite(
        name=f"{suite.table}:{source or '-'}:{partition or '-'}", expectations=expectations
    )
    frame = to_pandas(df)
    batch = _batch_definition(suite.table).get_batch(batch_parameters={"dataframe": frame})
    with warnings.catch_warnings():
        # GX compares tz-aware columns through Series.values (a pandas 3.1 deprecation)
        warnings.filterwarnings("ignore", message="Series.values returning an ndarray")
        validation = batch.validate(gx_suite, result_format="SUMMARY")
    missing = {
        r.expectation_config.kwargs.get("column")
        for r in validation.results
        if not r.success and r.expectation_config.type == "expect_column_to_exist"
    }
    failures = []
    for r in validation.results:
        if r.success:
            continue
        cfg = r.expectation_config
        kwargs = dict(cfg.kwargs)
        column = kwargs.get("column") or (
            ",".join(kwargs["column_list"]) if kwargs.get("column_list") else kwargs.get("column_A")
        )
        what = cfg.type
        if column in missing and what != "expect_column_to_exist":
            continue  # reported once, as the missing column
        extra = _kwargs_text(kwargs)
        failures.append(Failure(f"{what}({extra})" if extra else what, column, _detail(r)))
    return QualityResult(
        table=suite.table,
        partition=partition,
        rows=len(frame),
        expectations=len(expectations),
        failures=failures,
        source=source,
    )


def partition_file(home: Path, table: str, source: str, partition: str) -> Path:
    return Path(home) / "raw" / table / source / partition / "part-0.parquet"


def validate_partition(home: Path, table: str, source: str, partition: str) -> QualityResult:
    """Validate the landed partition `raw/<table>/<source>/<partition>/`."""
    path = partition_file(home, table, source, partition)
    if not path.exists():
        raise IngestError(f"no landed partition {partition} of {source} in {table}", file=path)
    return validate_frame(pl.read_parquet(path), table, partition, source=source)
