"""The dbt project's SQL runs on DuckDB and on Spark (docs/scaling.md): engine-specific SQL lives
only in adapter-dispatched macros (`duckdb__x` / `default__x` beside a `spark__x`), never in a
model, a singular test, a shared macro or a unit test's fixture rows. A static scan, no engine:
each rule below is a construct one of the two engines lacks (or reads differently)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

PROJECT = Path(__file__).resolve().parents[1] / "dbt_project"

#: (pattern, why it is not portable); matched case-insensitively on SQL with comments, Jinja and
#: string literals removed
RULES: tuple[tuple[str, str], ...] = (
    (r"\blist_[a-z_]+\s*\(", "DuckDB list function (Spark: array_* functions)"),
    (r"\blist_value\s*\(|\[\s*\]", "DuckDB list literal (Spark: array(...))"),
    (r"\bstruct_pack\s*\(", "DuckDB struct_pack (Spark: named_struct)"),
    (r"\bepoch(_ms|_us|_ns)?\s*\(", "DuckDB epoch() (macro to_epoch)"),
    (r"\bto_timestamp\s*\(", "to_timestamp(seconds) is DuckDB's (macro from_epoch)"),
    (r"\bmake_timestamp(tz)?\s*\(", "DuckDB make_timestamp"),
    (r"\bdate_?diff\s*\(\s*'", "date_diff('unit', a, b) in DuckDB's order (dbt.datediff)"),
    (r"\bstrftime\s*\(|\bstrptime\s*\(", "DuckDB strftime/strptime (date_format/to_timestamp)"),
    (r"\bregexp_(full_)?matches\s*\(", "DuckDB regexp_matches (macro regex_match)"),
    (r"\bregexp_extract\s*\(", "regexp_extract's default group differs (macro regex_extract)"),
    (r"\bstring_agg\s*\(", "DuckDB string_agg (macro string_agg_sorted)"),
    (r"\bstring_split\s*\(|\bstr_split\s*\(", "DuckDB string_split (Spark: split)"),
    (r"\bstarts_with\s*\(", "DuckDB starts_with (use like 'x%')"),
    (r"\bread_(parquet|csv|csv_auto|json)\s*\(", "DuckDB table function (a dbt source)"),
    (r"\brange\s*\(|\bgenerate_series\s*\(", "DuckDB range() (models int_integers / int_hours)"),
    (r"\bunnest\s*\(", "unnest (macro unnest_list)"),
    (r"\bquantile(_cont|_disc)?\s*\(", "DuckDB quantile (macro percentile_cont)"),
    (r"\bjson_extract(_string)?\s*\(|->>", "DuckDB JSON access (macro json_text)"),
    (r"\barg_(max|min)\s*\(", "DuckDB arg_max/arg_min (Spark: max_by/min_by)"),
    (r"::", "`::` cast (cast(x as type))"),
    (r"\bvarchar\b", "varchar without a length is no Spark type (cast as string)"),
    (r"\btimestamptz\b|\bwith\s+time\s+zone\b", "timestamptz (Spark: timestamp)"),
    (r"\b(hugeint|ubigint|uinteger|usmallint|utinyint)\b", "DuckDB-only integer type"),
    (r"\bexclude\s*\(|\bcolumns\s*\(", "DuckDB star expression (name the columns)"),
    (r"\bqualify\b", "QUALIFY (Spark 3.5 has none: filter a row_number() in a CTE)"),
    (r"\bpivot\b|\bunpivot\b|\basof\b|\bpositional\b", "DuckDB-only join / pivot syntax"),
    (r'"[A-Za-z_][A-Za-z0-9_]*"', 'a "quoted" identifier is a string in Spark (adapter.quote)'),
    (r"\blateral\s+view\b|\bexplode\s*\(", "Spark-only generator (macro explode_list)"),
    (
        r"/\s*\d+\.\d+|\*\s*1\.0\b",
        "division by a decimal literal: Spark divides integers and decimals by it as decimals "
        "rounded to 6 places, DuckDB in doubles (divide by an integer, or cast(x as double))",
    ),
)

_DISPATCHED_IMPL = re.compile(
    r"{%-?\s*macro\s+(duckdb|default|spark)__\w+.*?{%-?\s*endmacro\s*-?%}", re.DOTALL
)
_IMPL_NAME = re.compile(r"{%-?\s*macro\s+(duckdb|default|spark)__(\w+)\s*\(")
_JINJA = re.compile(r"{#.*?#}|{%.*?%}|{{.*?}}", re.DOTALL)
_LINE_COMMENT = re.compile(r"--[^\n]*")
_STRING = re.compile(r"'(?:[^']|'')*'")


def strip_sql(text: str) -> str:
    """SQL without Jinja, comments and string literals (what a rule may match); newlines kept
    so that a finding names its line."""

    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    text = _JINJA.sub(blank, text)
    text = _LINE_COMMENT.sub(blank, text)
    return _STRING.sub(blank, text)


def findings(text: str) -> list[tuple[int, str, str]]:
    """(line, matched text, why) for each non-portable construct in a SQL text."""
    sql = strip_sql(text)
    out = []
    for pattern, why in RULES:
        for m in re.finditer(pattern, sql, flags=re.IGNORECASE):
            out.append((sql.count("\n", 0, m.start()) + 1, m.group(0), why))
    return sorted(out)


def _macro_text(path: Path) -> str:
    """A macro file less the bodies of its engine implementations (`duckdb__`, `spark__`,
    `default__`: the only place engine-specific SQL may be)."""
    text = path.read_text()
    return _DISPATCHED_IMPL.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def sql_texts() -> Iterator[tuple[str, str]]:
    """(where, SQL) for every model, singular test and macro file of the project."""
    for path in sorted(PROJECT.glob("models/**/*.sql")):
        yield str(path.relative_to(PROJECT)), path.read_text()
    for path in sorted(PROJECT.glob("tests/**/*.sql")):
        yield str(path.relative_to(PROJECT)), path.read_text()
    for path in sorted(PROJECT.glob("macros/**/*.sql")):
        yield str(path.relative_to(PROJECT)), _macro_text(path)


def fixture_texts() -> Iterator[tuple[str, str]]:
    """(where, SQL) for every unit test's `format: sql` given / expect rows (dbt renders them
    with Jinja, so they use the macros too). Dict rows hold values dbt casts, not SQL."""
    for path in sorted(PROJECT.glob("models/**/*.yml")):
        doc = yaml.safe_load(path.read_text()) or {}
        for test in doc.get("unit_tests") or []:
            parts = [(f"given {g.get('input')}", g) for g in test.get("given") or []]
            parts.append(("expect", test.get("expect") or {}))
            for label, part in parts:
                if isinstance(part.get("rows"), str):
                    yield f"{path.relative_to(PROJECT)} {test['name']} {label}", part["rows"]


def test_the_rules_catch_duckdb_sql() -> None:
    # one construct per rule family, as a model might write it
    sql = """
        select epoch(t), list_contains(hosts, h), x::int, cast(y as varchar),
               string_agg(a, ', '), to_timestamp(60), "BilledCost"
        from read_parquet('x/*.parquet') qualify row_number() over () = 1
    """
    found = {why.split(" ")[0] for _line, _text, why in findings(sql)}
    assert len(findings(sql)) == 9, findings(sql)
    assert "DuckDB" in found
    # comments, Jinja and strings are not SQL: nothing there counts
    quiet = """
        -- epoch(t) and list_contains() in a comment
        {# read_parquet() in a Jinja comment #}
        select {{ to_epoch('t') }}, 'epoch(x) :: "Quoted"' as message
        {% for i in range(3) %}{% endfor %}
    """
    assert findings(quiet) == []
    # a division by a decimal literal is Spark's decimal division (6 places): by an integer, both
    # engines divide in doubles
    assert [
        why.split(":")[0] for _l, _t, why in findings("select held_s / 3600.0, x * 1.0 / n")
    ] == ["division by a decimal literal"] * 2
    assert findings("select held_s / 3600, cast(n as double) / 7, 1.0 - x, x * 1.05") == []


def test_dispatched_duckdb_implementations_are_exempt() -> None:
    text = (
        "{% macro duckdb__to_epoch(ts) -%}epoch({{ ts }}){%- endmacro %}\n"
        "{% macro spark__to_epoch(ts) -%}unix_micros({{ ts }}){%- endmacro %}\n"
        "{% macro shared(ts) -%}epoch({{ ts }}){%- endmacro %}\n"
    )
    path = PROJECT.parent / "tests" / "fixtures" / "_portability_probe.sql"
    try:
        path.write_text(text)
        # the engines' bodies are exempt, a shared (undispatched) macro is checked
        assert [line for line, _t, _w in findings(_macro_text(path))] == [3]
    finally:
        path.unlink(missing_ok=True)


@pytest.mark.parametrize("where,text", list(sql_texts()), ids=lambda v: str(v)[:60])
def test_project_sql_is_portable(where: str, text: str) -> None:
    problems = [f"{where}:{line}: {found!r}: {why}" for line, found, why in findings(text)]
    assert problems == []


def test_every_duckdb_macro_has_a_spark_implementation() -> None:
    impls: dict[str, set[str]] = {}
    for path in PROJECT.glob("macros/**/*.sql"):
        for engine, name in _IMPL_NAME.findall(path.read_text()):
            impls.setdefault(name, set()).add(engine)
    assert len(impls) >= 10, sorted(impls)  # the scan found the dispatched macros
    missing = sorted(n for n, engines in impls.items() if "spark" not in engines)
    assert missing == []


def test_unit_test_fixtures_are_portable() -> None:
    problems = [
        f"{where}: {found!r}: {why}"
        for where, text in fixture_texts()
        for _line, found, why in findings(text)
    ]
    assert problems == []
    # the scan did see the fixtures (a yml layout change must not make it vacuous)
    assert sum(1 for _ in fixture_texts()) >= 10
