"""Every mart of a warehouse read whole, and two such reads compared: the proof that a refactor,
a re-run or a recovered run changed no number (.ci/mart_hashes.py and the re-run tests).

`read_marts` reads each `main.fct_*` / `dim_*` relation, ordered by its columns (non-double
columns first), with the home's path replaced by `<home>` in text (lineage names files) and the
columns that differ between two runs of the same data by design (`RUN_COLUMNS`) left out.
`compare_marts` is exact for every column but doubles, which must agree within `REL_TOL`
(relative): DuckDB's parallel sums add in a varying order, so the last bits of a double differ
between two builds of the same data.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

# columns that differ between two runs of the same data by design
# (and when an alert was first raised and each delivery attempted: wall-clock times of the run)
RUN_COLUMNS = {
    "run_id",
    "run_at",
    "first_run_id",
    "first_run_at",
    "last_run_id",
    "last_run_at",
    "first_raised_at",
    "attempted_at",
}
REL_TOL = 1e-9


def read_marts(warehouse: Path, home: Path, run_id: str | None = None) -> dict[str, pl.DataFrame]:
    """Every mart of `warehouse`. With `run_id`, a mart that keeps a row per run (a `run_id`
    column: the data-health history) holds only that run's rows."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        names = [
            r[0]
            for r in con.execute(
                "select table_name from information_schema.tables "
                "where table_schema = 'main' and (table_name like 'fct\\_%' escape '\\' "
                "or table_name like 'dim\\_%' escape '\\') order by 1"
            ).fetchall()
        ]
        out = {}
        for name in names:
            columns = con.execute(
                "select column_name, data_type from information_schema.columns "
                "where table_schema = 'main' and table_name = ? order by ordinal_position",
                [name],
            ).fetchall()
            # nested values (lists, structs, maps) are compared as their text
            select = ", ".join(
                f'cast("{c}" as varchar) as "{c}"'
                if any(k in t for k in ("[]", "STRUCT", "MAP"))
                else f'"{c}"'
                for c, t in columns
                if c not in RUN_COLUMNS
            )
            where, params = "", []
            if run_id is not None and "run_id" in {c for c, _ in columns}:
                where, params = " where run_id = ?", [run_id]
            arrow = con.execute(f'select {select} from "{name}"{where}', params).to_arrow_table()
            frame = pl.from_arrow(arrow)
            assert isinstance(frame, pl.DataFrame)
            frame = frame.with_columns(
                pl.col(pl.String).str.replace_all(str(home), "<home>", literal=True)
            )
            floats = [c for c, t in frame.schema.items() if t.is_float()]
            order = [c for c in frame.columns if c not in floats] + floats
            out[name] = frame.sort(order, nulls_last=True)
        return out
    finally:
        con.close()


def compare_frames(name: str, x: pl.DataFrame, y: pl.DataFrame) -> tuple[list[str], float]:
    """(differences, largest relative difference of a double) between two reads of a mart."""
    if x.schema != y.schema or x.height != y.height:
        return [f"{name}: shape {x.shape} {x.schema} -> {y.shape}"], 0.0
    problems: list[str] = []
    worst = 0.0
    for col, dtype in x.schema.items():
        if dtype.is_float():
            pair = pl.DataFrame({"a": x[col], "b": y[col]})
            if not pair["a"].is_null().equals(pair["b"].is_null()):
                problems.append(f"{name}.{col}: nulls differ")
                continue
            a, b = pl.col("a"), pl.col("b")
            rel_expr = (a - b).abs() / pl.max_horizontal(a.abs(), pl.lit(1.0))
            rel = float(pair.select(rel_expr.max()).item() or 0.0)
            worst = max(worst, rel)
            if rel > REL_TOL:
                problems.append(f"{name}.{col}: differs by {rel:.3g} (relative)")
        elif not x[col].equals(y[col]):
            n = int((x[col] != y[col]).sum())
            problems.append(f"{name}.{col}: {n} values differ")
    return problems, worst


def compare_marts(
    before: dict[str, pl.DataFrame], after: dict[str, pl.DataFrame], prefix: str = ""
) -> tuple[list[str], float]:
    """(differences, largest relative difference of a double) between two sets of marts; a mart
    in only one of them is a difference."""
    problems = [f"{prefix}{m}: only before" for m in sorted(set(before) - set(after))]
    problems += [f"{prefix}{m}: only after" for m in sorted(set(after) - set(before))]
    worst = 0.0
    for mart in sorted(set(before) & set(after)):
        found, rel = compare_frames(f"{prefix}{mart}", before[mart], after[mart])
        problems += found
        worst = max(worst, rel)
    return problems, worst
