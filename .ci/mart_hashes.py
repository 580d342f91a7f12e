"""Content hashes of every mart of the test fleets: the proof that a refactor changed no number.

    python .ci/mart_hashes.py OUT.json            # generate the fleets, run the pipeline, hash
    python .ci/mart_hashes.py OUT.json --compare BEFORE.json

Each fleet (the test suite's small fleet, the MIG fleet and the unlabelled fleet) is generated
into a temporary home and run through `run_pipeline`; every `fct_*` / `dim_*` relation of the
published warehouse is read whole, ordered by all its columns, and hashed (sha256 of its CSV;
doubles rounded to 6 decimals, since parallel sums differ in their last bits from run to run).
The generator's files are hashed too
(`<fleet>.files`). Run-dependent columns (the run id and time of the data-health history) are
left out.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import tempfile
from datetime import date, timedelta
from pathlib import Path

import duckdb
import polars as pl

START = date(2026, 10, 2)
FLEETS = {
    "small": {"days": 3, "seed": 1},
    "mig": {"days": 2, "seed": 2, "aws_nodes": 2, "gcp_nodes": 1, "onprem_nodes": 2, "mig": True},
    "unlabelled": {"days": 3, "seed": 1, "hpc_job_labels": False},
}
# columns that differ between two runs of the same data by design
RUN_COLUMNS = {"run_id", "run_at", "first_run_id", "first_run_at", "last_run_id", "last_run_at"}


def mart_hashes(warehouse: Path) -> dict[str, str]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        names = [
            r[0]
            for r in con.execute(
                "select table_name from information_schema.tables "
                "where table_name like 'fct\\_%' escape '\\' "
                "or table_name like 'dim\\_%' escape '\\' order by 1"
            ).fetchall()
        ]
        out = {}
        for name in names:
            columns = con.execute(
                "select column_name, data_type from information_schema.columns "
                "where table_name = ? order by ordinal_position",
                [name],
            ).fetchall()

            # nested values (lists, structs, maps) are compared as their text; doubles rounded
            # to 6 decimals: DuckDB's parallel sums add in a varying order, so the last bits of
            # a double differ between two builds of the same data
            def expr(c: str, t: str) -> str:
                if any(k in t for k in ("[]", "STRUCT", "MAP")):
                    return f'cast("{c}" as varchar) as "{c}"'
                if t in ("DOUBLE", "FLOAT", "REAL"):
                    return f'round("{c}", 6) as "{c}"'
                return f'"{c}"'

            select = ", ".join(expr(c, t) for c, t in columns)
            frame = pl.from_arrow(con.sql(f'select {select} from "{name}"').to_arrow_table())
            frame = frame.drop([c for c in frame.columns if c in RUN_COLUMNS])
            frame = frame.sort(frame.columns, nulls_last=True)
            buf = io.BytesIO()
            frame.write_csv(buf)
            out[name] = f"{frame.height}:{hashlib.sha256(buf.getvalue()).hexdigest()[:16]}"
        return out
    finally:
        con.close()


def file_hashes(home: Path) -> dict[str, str]:
    """sha256 of every file the generator wrote (its output must not change either)."""
    return {
        str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()[:16]
        for p in sorted(home.rglob("*"))
        if p.is_file()
    }


def run_fleets() -> dict[str, dict[str, str]]:
    from fleetledger.generator import generate
    from fleetledger.pipeline import run_pipeline

    result = {}
    for name, shape in FLEETS.items():
        shape = dict(shape)
        days = shape.pop("days")
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            generate(home, days=days, start=START, scrape_interval_s=60, **shape)
            result[f"{name}.files"] = file_hashes(home)
            run_pipeline(home, START, START + timedelta(days=days - 1))
            result[name] = mart_hashes(home / "warehouse.duckdb")
        print(f"{name}: {len(result[name])} marts hashed", file=sys.stderr)
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--compare", type=Path)
    args = parser.parse_args()
    hashes = run_fleets()
    args.out.write_text(json.dumps(hashes, indent=2, sort_keys=True) + "\n")
    if not args.compare:
        return 0
    before = json.loads(args.compare.read_text())
    differ = [
        f"{fleet}.{mart}: {before.get(fleet, {}).get(mart)} -> {hashes.get(fleet, {}).get(mart)}"
        for fleet in sorted(set(before) | set(hashes))
        for mart in sorted(set(before.get(fleet, {})) | set(hashes.get(fleet, {})))
        if before.get(fleet, {}).get(mart) != hashes.get(fleet, {}).get(mart)
    ]
    total = sum(len(v) for v in hashes.values())
    print("\n".join(differ) if differ else f"identical: {total} marts over {len(hashes)} fleets")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
