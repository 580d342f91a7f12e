"""Keep the marts of the test fleets, and compare two such snapshots value by value.

    python .ci/mart_snapshots.py run OUT_DIR          # generate the fleets, run the pipeline
    python .ci/mart_snapshots.py compare BEFORE AFTER # every fct_* / dim_* mart of each fleet

`run` generates the same three fleets as .ci/mart_hashes.py (the test suite's small fleet, the
MIG fleet and the unlabelled fleet), runs each through `run_pipeline` and keeps its published
warehouse as OUT_DIR/<fleet>.duckdb. `compare` checks, for every mart of every fleet, the
column names, order and types, the row count, and the values: text, integer, date and time
columns exactly, floating-point columns to a relative 1e-9. The build is not bit-for-bit
reproducible (DuckDB sums doubles in parallel, in whatever order its threads finish: two
builds of the same code and data differ in the last bits of some sums), so a content hash of
the float columns cannot prove a refactor changed no number; this comparison can. Rows are
matched after sorting on every column, floats rounded to 9 significant digits. Run-dependent
columns (the run id and time of the data-health history) are left out, as in mart_hashes.py,
and the temporary home a fleet was generated in is left out of lineage paths (`x_source_file`,
`x_line_key`).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mart_hashes import FLEETS, RUN_COLUMNS, START  # noqa: E402

REL_TOL = 1e-9
FLOAT_TYPES = ("DOUBLE", "FLOAT", "REAL")
# each fleet is generated into a fresh temporary home, whose path lineage columns carry
HOME = re.compile(re.escape(tempfile.gettempdir()) + r"/tmp\w+/")


def run(out: Path) -> None:
    import shutil

    from fleetledger.generator import generate
    from fleetledger.pipeline import run_pipeline

    out.mkdir(parents=True, exist_ok=True)
    for name, shape in FLEETS.items():
        shape = dict(shape)
        days = shape.pop("days")
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            generate(home, days=days, start=START, scrape_interval_s=60, **shape)
            run_pipeline(home, START, START + timedelta(days=days - 1))
            shutil.copyfile(home / "warehouse.duckdb", out / f"{name}.duckdb")
        print(f"{name}: {out / f'{name}.duckdb'}", file=sys.stderr)


def _marts(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str]]]:
    rows = con.execute(
        "select table_schema || '.' || table_name, column_name, data_type "
        "from information_schema.columns "
        "where table_name like 'fct\\_%' escape '\\' or table_name like 'dim\\_%' escape '\\' "
        "order by table_schema, table_name, ordinal_position"
    ).fetchall()
    out: dict[str, list[tuple[str, str]]] = {}
    for table, column, dtype in rows:
        out.setdefault(table, []).append((column, dtype))
    return out


def _rows(con: duckdb.DuckDBPyConnection, table: str, columns: list[tuple[str, str]]) -> list:
    kept = [(c, t) for c, t in columns if c not in RUN_COLUMNS]
    select = ", ".join(
        f'"{c}"' if t in FLOAT_TYPES else f'cast("{c}" as varchar) as "{c}"' for c, t in kept
    )
    schema, name = table.split(".", 1)
    rows = [
        tuple(HOME.sub("<home>/", v) if isinstance(v, str) else v for v in row)
        for row in con.execute(f'select {select} from "{schema}"."{name}"').fetchall()
    ]

    def key(value: object) -> tuple:
        if value is None:
            return (1, "")
        return (0, float(f"{value:.9g}") if isinstance(value, float) else value)

    return sorted(rows, key=lambda row: tuple(key(v) for v in row))


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)
    return a == b


def compare(before: Path, after: Path) -> int:
    problems: list[str] = []
    checked = differing = 0
    max_rel = max_abs = 0.0
    for fleet in FLEETS:
        a = duckdb.connect(str(before / f"{fleet}.duckdb"), read_only=True)
        b = duckdb.connect(str(after / f"{fleet}.duckdb"), read_only=True)
        try:
            ma, mb = _marts(a), _marts(b)
            for table in sorted(set(ma) | set(mb)):
                if ma.get(table) != mb.get(table):
                    problems.append(f"{fleet}.{table}: columns {ma.get(table)} -> {mb.get(table)}")
                    continue
                ra, rb = _rows(a, table, ma[table]), _rows(b, table, mb[table])
                checked += 1
                if len(ra) != len(rb):
                    problems.append(f"{fleet}.{table}: {len(ra)} rows -> {len(rb)} rows")
                    continue
                for x, y in zip(ra, rb, strict=True):
                    for u, v in zip(x, y, strict=True):
                        if isinstance(u, float) and isinstance(v, float) and u != v:
                            differing += 1
                            if max(abs(u), abs(v)) > 1e-6:
                                max_rel = max(max_rel, abs(u - v) / max(abs(u), abs(v)))
                            else:
                                max_abs = max(max_abs, abs(u - v))
                    if not all(_same(u, v) for u, v in zip(x, y, strict=True)):
                        problems.append(f"{fleet}.{table}: row {x} -> {y}")
                        break
        finally:
            a.close()
            b.close()
    if problems:
        print("\n".join(problems))
        return 1
    print(
        f"equal: {checked} marts over {len(FLEETS)} fleets (floats to a relative {REL_TOL:g}: "
        f"{differing} float values differ in their last bits, by at most {max_rel:.2g} relative, "
        f"{max_abs:.2g} absolute near zero)"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("run").add_argument("out", type=Path)
    cmp = sub.add_parser("compare")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.cmd == "run":
        run(args.out)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    raise SystemExit(main())
