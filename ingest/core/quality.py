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
import os
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any, Literal

import polars as pl

from ingest.core.errors import IngestError
from ingest.core.quality_fast import failed_expectations

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


@dataclass(frozen=True)
class Expectation:
    """One expectation of a suite: GX's expectation type (`expect_column_values_to_be_between`)
    and its keyword arguments. Both validation routes read this list: GX builds its objects
    from it, the polars route (ingest/core/quality_fast.py) evaluates the same rules."""

    type: str
    kwargs: Mapping[str, Any]

    def gx_class_name(self) -> str:
        return "".join(word.capitalize() for word in self.type.split("_"))


def expectation_specs(suite: Suite, partition: str | None) -> list[Expectation]:
    """The declared expectations of `suite` for one partition, in validation order (the
    suite's `extra` expectations, GX objects, are not part of it)."""
    out: list[Expectation] = []

    def add(kind: str, **kwargs: Any) -> None:
        out.append(Expectation(kind, kwargs))

    for column, family in suite.columns.items():
        add("expect_column_to_exist", column=column)
        gx_type = TYPE_FAMILIES[family]
        if gx_type is not None:
            add("expect_column_values_to_be_of_type", column=column, type_=gx_type)
    for column in suite.not_null:
        add("expect_column_values_to_not_be_null", column=column)
    for key in suite.unique:
        if len(key) == 1:
            add("expect_column_values_to_be_unique", column=key[0])
        else:
            add("expect_compound_columns_to_be_unique", column_list=list(key))
    for column in suite.currency:
        add("expect_column_values_to_be_in_set", column=column, value_set=sorted(ISO_4217))
    for column, (low, high) in suite.ranges.items():
        add("expect_column_values_to_be_between", column=column, min_value=low, max_value=high)
    for column, values in suite.value_sets.items():
        add("expect_column_values_to_be_in_set", column=column, value_set=list(values))
    for a, b in suite.ordered:
        add(
            "expect_column_pair_values_a_to_be_greater_than_b",
            column_A=a,
            column_B=b,
            or_equal=True,
            ignore_row_if="either_value_is_missing",
        )
    if partition is not None:
        start, end = partition_window(partition)
        for w in suite.within:
            add(
                "expect_column_values_to_be_between",
                column=w.column,
                min_value=start - w.slack,
                max_value=end + w.slack,
                strict_max=True,
            )
        for e in suite.equals:
            add(
                "expect_column_values_to_be_in_set",
                column=e.column,
                value_set=[start.strftime(e.fmt)],
            )
    return out


def build_expectations(suite: Suite, partition: str | None) -> list[Any]:
    """The GX expectation objects of `suite` for one partition."""
    _, gxe, _ = _gx()
    out = [getattr(gxe, e.gx_class_name())(**e.kwargs) for e in expectation_specs(suite, partition)]
    if partition is not None and suite.extra is not None:
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
    # as GX keeps an expectation's arguments: unset bounds dropped, numeric bounds as floats
    shown = {
        k: float(v)
        if isinstance(v, int) and not isinstance(v, bool) and k.endswith("_value")
        else v
        for k, v in kwargs.items()
        if k in ("type_", "min_value", "max_value", "value_set", "column_list", "column_B")
        and v is not None
    }
    if "value_set" in shown and len(shown["value_set"]) > 5:
        shown["value_set"] = f"{len(shown['value_set'])} values"
    return ", ".join(f"{k}={v}" for k, v in shown.items())


#: partitions of at least this many rows are validated by the polars route
#: (ingest/core/quality_fast.py, the same expectations) instead of Great Expectations' pandas one
GX_MAX_ROWS_ENV = "FLEETLEDGER_QUALITY_GX_MAX_ROWS"
DEFAULT_GX_MAX_ROWS = 50_000
Route = Literal["auto", "gx", "polars"]


def gx_max_rows() -> int:
    """The largest partition Great Expectations validates itself (FLEETLEDGER_QUALITY_GX_MAX_ROWS,
    default 50,000 rows); larger ones take the polars route."""
    try:
        return max(0, int(os.environ.get(GX_MAX_ROWS_ENV, DEFAULT_GX_MAX_ROWS)))
    except ValueError:
        return DEFAULT_GX_MAX_ROWS


def pick_route(suite: Suite, rows: int, route: Route = "auto") -> Route:
    """`gx` or `polars` for a partition of `rows` rows (a suite with GX-only `extra`
    expectations always takes GX)."""
    if route != "auto":
        return route
    return "polars" if suite.extra is None and rows > gx_max_rows() else "gx"


def _failure(kind: str, kwargs: Mapping[str, Any], detail: str) -> tuple[str | None, Failure]:
    column = kwargs.get("column") or (
        ",".join(kwargs["column_list"]) if kwargs.get("column_list") else kwargs.get("column_A")
    )
    extra = _kwargs_text(kwargs)
    return column, Failure(f"{kind}({extra})" if extra else kind, column, detail)


def _without_missing_columns(found: list[tuple[str, str | None, Failure]]) -> list[Failure]:
    """The failures, each missing column reported once (as the missing column)."""
    missing = {column for kind, column, _ in found if kind == "expect_column_to_exist"}
    return [
        f for kind, column, f in found if kind == "expect_column_to_exist" or column not in missing
    ]


def validate_frame(
    df: Any,
    table: str | Suite,
    partition: str | None = None,
    *,
    source: str | None = None,
    route: Route = "auto",
) -> QualityResult:
    """Validate a frame (polars, lazy polars or pandas) against the suite of `table` for
    `partition`: with Great Expectations up to `gx_max_rows()` rows, with the polars route
    above (`route` forces one)."""
    suite = table if isinstance(table, Suite) else suite_for(table)
    if isinstance(df, pl.LazyFrame):
        if route == "auto":
            route = "gx" if suite.extra is not None else "polars"
        df = df if route == "polars" else df.collect()
    if pick_route(suite, len(df) if not isinstance(df, pl.LazyFrame) else 0, route) == "polars":
        return _validate_polars(df, suite, partition, source)
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
        # whether every expectation holds first (`BOOLEAN_ONLY`: GX skips the counts and
        # samples of unexpected values: about 40 % of its time on a small partition); only a
        # partition that fails is validated again for what the failures' details say
        validation = batch.validate(gx_suite, result_format="BOOLEAN_ONLY")
        if not validation.success:
            validation = batch.validate(gx_suite, result_format="SUMMARY")
    found = []
    for r in validation.results:
        if not r.success:
            cfg = r.expectation_config
            found.append((cfg.type, *_failure(cfg.type, dict(cfg.kwargs), _detail(r))))
    return QualityResult(
        table=suite.table,
        partition=partition,
        rows=len(frame),
        expectations=len(expectations),
        failures=_without_missing_columns(found),
        source=source,
    )


def _validate_polars(
    df: Any, suite: Suite, partition: str | None, source: str | None
) -> QualityResult:
    if suite.extra is not None:
        raise IngestError(f"suite {suite.table}: GX-only extra expectations need route 'gx'")
    frame = df if isinstance(df, pl.DataFrame | pl.LazyFrame) else pl.from_pandas(df)
    specs = expectation_specs(suite, partition)
    rows, failed = failed_expectations(frame, specs)
    found = [
        (specs[i].type, *_failure(specs[i].type, specs[i].kwargs, d)) for i, d in failed.items()
    ]
    return QualityResult(
        table=suite.table,
        partition=partition,
        rows=rows,
        expectations=len(specs),
        failures=_without_missing_columns(found),
        source=source,
    )


def partition_file(home: Path, table: str, source: str, partition: str) -> Path:
    return Path(home) / "raw" / table / source / partition / "part-0.parquet"


def validate_partition(home: Path, table: str, source: str, partition: str) -> QualityResult:
    """Validate the landed partition `raw/<table>/<source>/<partition>/`."""
    path = partition_file(home, table, source, partition)
    if not path.exists():
        raise IngestError(f"no landed partition {partition} of {source} in {table}", file=path)
    return validate_frame(read_partition(path, suite_for(table)), table, partition, source=source)


def read_partition(path: Path, suite: Suite, read: Collection[str] | None = None) -> pl.DataFrame:
    """A landed partition file. For the polars route its text columns are read as
    categoricals, in batches (polars' streaming engine): a day of DCGM samples then holds about
    a fifth of the memory, and the rules read the same values (a null stays null; a value set,
    a uniqueness and the samples of a failure compare the text).

    `read`: the columns the suite's rules read values of (`rule_columns`); on the polars route
    every other column of the file is a column of nulls of the file's own type, so that the
    rules on the schema (a column exists, its type) still see the file as it is, without its
    values being read (a day of DCGM samples: 1.8 instead of 2.2 CPU s). None: every column."""
    import pyarrow.parquet as pq

    if pick_route(suite, pq.read_metadata(path).num_rows) == "gx":
        return pl.read_parquet(path)
    scan = pl.scan_parquet(path)
    if read is not None:
        schema = scan.collect_schema()
        scan = scan.select(
            pl.col(c) if c in read else pl.lit(None, dtype=t).alias(c) for c, t in schema.items()
        )
    scan = scan.with_columns(pl.col(pl.String).cast(pl.Categorical))
    return scan.collect(engine="streaming")


def rule_columns(suite: Suite, partition: str | None) -> set[str]:
    """The columns the suite's rules read values of: every expectation's but those on the
    schema (a column exists, its type)."""
    out: set[str] = set()
    for e in expectation_specs(suite, partition):
        if e.type in ("expect_column_to_exist", "expect_column_values_to_be_of_type"):
            continue
        k = e.kwargs
        out.update(k.get("column_list") or ())
        out.update(k[key] for key in ("column", "column_A", "column_B") if k.get(key))
    return out
