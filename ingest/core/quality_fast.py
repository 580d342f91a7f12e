"""The landing suites' expectations evaluated with polars: the route for large partitions (a day
of DCGM samples is millions of rows; Great Expectations' pandas route takes seconds per 100 k
rows and a copy of the frame in pandas).

Each expectation keeps Great Expectations' semantics (GX 1.x, pandas execution engine):

- `expect_column_to_exist`, `expect_column_values_to_be_of_type` — on the schema (type families
  as `TYPE_FAMILIES` in ingest/core/quality.py: strings, doubles, 64/32-bit integers, UTC
  timestamps, dates, booleans);
- the column map expectations (`..._to_not_be_null`, `..._to_be_unique`, `..._to_be_between`,
  `..._to_be_in_set`) ignore missing values — null, and NaN in a float column, as pandas sees
  them — except `not_be_null`, whose unexpected values are exactly those; a value is unique when
  no other non-missing row holds it; `between` is inclusive unless `strict_max`;
- `expect_compound_columns_to_be_unique` ignores rows whose columns are all missing and counts
  every row of a repeated combination; `expect_column_pair_values_a_to_be_greater_than_b`
  (`or_equal`) ignores rows where either value is missing;
- the unexpected share is of the rows evaluated (not ignored), as GX's `unexpected_percent`;
  the sample is the first unexpected values in row order.

tests/test_quality_routes.py runs both routes over the same good and broken frames of every
suite and checks they agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import polars as pl

#: GX type names (ingest/core/quality.py TYPE_FAMILIES) → whether a polars dtype is of it (a
#: landed partition's text columns are read as categoricals: ingest/core/quality.py
#: `read_partition`)
_TYPE_OK = {
    "str": lambda t: t == pl.String or t == pl.Categorical,
    "float64": lambda t: t == pl.Float64,
    "int64": lambda t: t == pl.Int64,
    "int32": lambda t: t == pl.Int32,
    "Timestamp": lambda t: isinstance(t, pl.Datetime),
    "datetime64": lambda t: t == pl.Date or isinstance(t, pl.Datetime),
    "bool": lambda t: t == pl.Boolean,
}
SAMPLE = 20


class ExpectationLike(Protocol):
    type: str
    kwargs: Mapping[str, Any]


def _missing(column: str, schema: pl.Schema) -> pl.Expr:
    col = pl.col(column)
    if schema[column] in (pl.Float32, pl.Float64):
        return col.is_null() | col.is_nan()
    return col.is_null()


def _rule(e: ExpectationLike, schema: pl.Schema) -> tuple[pl.Expr, pl.Expr, str | None] | str:
    """(unexpected rows, rows evaluated, the column to sample) of a value expectation, or why
    it cannot be evaluated."""
    k = e.kwargs
    columns = list(k.get("column_list") or [c for c in (k.get("column"),) if c]) + [
        c for c in (k.get("column_A"), k.get("column_B")) if c
    ]
    absent = [c for c in columns if c not in schema]
    if absent:
        return f"could not be evaluated: no column {', '.join(absent)}"
    if e.type == "expect_column_values_to_not_be_null":
        missing = _missing(k["column"], schema)
        return missing, missing.is_not_null(), None  # every row is evaluated
    if e.type == "expect_compound_columns_to_be_unique":
        cols = list(k["column_list"])
        evaluated = ~pl.all_horizontal([_missing(c, schema) for c in cols])
        return evaluated & pl.struct(cols).is_duplicated(), evaluated, None
    if e.type == "expect_column_pair_values_a_to_be_greater_than_b":
        a, b = k["column_A"], k["column_B"]
        evaluated = ~(_missing(a, schema) | _missing(b, schema))
        holds = pl.col(a) >= pl.col(b) if k.get("or_equal") else pl.col(a) > pl.col(b)
        return evaluated & ~holds, evaluated, None
    column = k["column"]
    col = pl.col(column)
    evaluated = ~_missing(column, schema)
    if e.type == "expect_column_values_to_be_unique":
        bad = col.is_duplicated()
    elif e.type == "expect_column_values_to_be_in_set":
        bad = ~col.is_in(pl.Series(list(k["value_set"])).implode())
    elif e.type == "expect_column_values_to_be_between":
        low, high = k.get("min_value"), k.get("max_value")
        bad = pl.lit(False)
        if low is not None:
            bad = bad | (col < low)
        if high is not None:
            bad = bad | ((col >= high) if k.get("strict_max") else (col > high))
    else:
        return f"could not be evaluated: no polars rule for {e.type}"
    return evaluated & bad, evaluated, column


def _detail(unexpected: int, evaluated: int, sample: Sequence[Any]) -> str:
    pct = 100.0 * unexpected / evaluated if evaluated else 0.0
    parts = [f"{unexpected} rows ({pct:.3g} %)"]
    if sample:
        parts.append(f"e.g. {', '.join(repr(v) for v in sample[:5])}")
    return "; ".join(parts)


def failed_expectations(
    frame: pl.DataFrame | pl.LazyFrame, expectations: Sequence[ExpectationLike]
) -> tuple[int, dict[int, str]]:
    """Evaluate `expectations` on `frame` in one pass: (rows, {index of a failed expectation:
    what was found}). A lazy frame (`pl.scan_parquet`) reads only the columns the rules use."""
    lf = frame.lazy()
    schema = lf.collect_schema()
    failed: dict[int, str] = {}
    rules: dict[int, tuple[pl.Expr, pl.Expr, str | None]] = {}
    for i, e in enumerate(expectations):
        column = e.kwargs.get("column")
        if e.type == "expect_column_to_exist":
            if column not in schema:
                failed[i] = "the column is missing"
        elif e.type == "expect_column_values_to_be_of_type":
            if column not in schema:
                failed[i] = "could not be evaluated: the column is missing"
            elif not _TYPE_OK[e.kwargs["type_"]](schema[column]):
                failed[i] = f"found {schema[column]!s}"
        else:
            rule = _rule(e, schema)
            if isinstance(rule, str):
                failed[i] = rule
            else:
                rules[i] = rule
    aggs = [pl.len().alias("rows")]
    for i, (bad, evaluated, _) in rules.items():
        aggs += [bad.sum().alias(f"bad_{i}"), evaluated.sum().alias(f"n_{i}")]
    try:
        counts = lf.select(aggs).collect().row(0, named=True)
    except pl.exceptions.PolarsError:
        counts = _one_by_one(lf, rules, failed)
    for i, (bad, _, column) in rules.items():
        unexpected = counts.get(f"bad_{i}") or 0
        if i in failed or not unexpected:
            continue
        sample: list[Any] = []
        if column is not None:
            values = lf.filter(bad).select(pl.col(column)).head(SAMPLE).collect().to_series()
            sample = [v for v in values.to_list() if v is not None]
        failed[i] = _detail(int(unexpected), int(counts[f"n_{i}"]), sample)
    return int(counts["rows"]), dict(sorted(failed.items()))


def _one_by_one(
    lf: pl.LazyFrame, rules: Mapping[int, tuple[pl.Expr, pl.Expr, str | None]], failed: dict
) -> dict[str, Any]:
    """The counts rule by rule, when one of them cannot be evaluated (a value set or bound of
    another type than the column): that one is failed with polars' message."""
    counts: dict[str, Any] = {"rows": lf.select(pl.len()).collect().item()}
    for i, (bad, evaluated, _) in rules.items():
        try:
            row = lf.select(bad.sum().alias("b"), evaluated.sum().alias("n")).collect().row(0)
        except pl.exceptions.PolarsError as err:
            failed[i] = f"could not be evaluated: {str(err).splitlines()[0]}"
            continue
        counts[f"bad_{i}"], counts[f"n_{i}"] = row
    return counts
