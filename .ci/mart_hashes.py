"""Every mart of the test fleets, written out and compared: the proof that a refactor changed no
number.

    python .ci/mart_hashes.py OUT_DIR                       # generate, run the pipeline, dump
    python .ci/mart_hashes.py OUT_DIR --compare BEFORE_DIR  # ... and compare with an earlier dump

Each fleet (the test suite's small fleet, the MIG fleet and the unlabelled fleet) is generated
into a temporary home and run through `run_pipeline`; every `fct_*` / `dim_*` relation of the
published warehouse is read whole and written to `OUT_DIR/<fleet>/<mart>.parquet`, ordered by
its columns (non-double columns first). The temporary home's path is replaced by `<home>` in
text (lineage names files), and run-dependent columns (the run id and time of the data-health
history) are left out. `OUT_DIR/hashes.json` holds a sha256 of each mart's exact CSV and of
every file the generator wrote (`<fleet>.files`).

The comparison is exact for every column but doubles, which must agree within 1e-9 (relative):
DuckDB's parallel sums add in a varying order, so the last bits of a double differ between two
builds of the same data (the largest difference found is printed).
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

import polars as pl

# the mart reading and comparison the re-run tests use too (tests/mart_compare.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from mart_compare import compare_frames, read_marts  # noqa: E402

START = date(2026, 10, 2)
FLEETS = {
    "small": {"days": 3, "seed": 1},
    "mig": {"days": 2, "seed": 2, "aws_nodes": 2, "gcp_nodes": 1, "onprem_nodes": 2, "mig": True},
    "unlabelled": {"days": 3, "seed": 1, "hpc_job_labels": False},
}


def file_hashes(home: Path) -> dict[str, str]:
    """sha256 of every file the generator wrote (its output must not change either)."""
    return {
        str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()[:16]
        for p in sorted(home.rglob("*"))
        if p.is_file()
    }


def _hash(frame: pl.DataFrame) -> str:
    buf = io.BytesIO()
    frame.write_csv(buf)
    return f"{frame.height}:{hashlib.sha256(buf.getvalue()).hexdigest()[:16]}"


def run_fleets(names: list[str], out: Path) -> dict[str, dict[str, str]]:
    from fleetledger.generator import generate
    from fleetledger.pipeline import run_pipeline

    hashes: dict[str, dict[str, str]] = {}
    for name in names:
        shape = dict(FLEETS[name])
        days = shape.pop("days")
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            generate(home, days=days, start=START, scrape_interval_s=60, **shape)
            hashes[f"{name}.files"] = file_hashes(home)
            run_pipeline(home, START, START + timedelta(days=days - 1))
            marts = read_marts(home / "warehouse.duckdb", home)
        (out / name).mkdir(parents=True, exist_ok=True)
        for mart, frame in marts.items():
            frame.write_parquet(out / name / f"{mart}.parquet")
        hashes[name] = {mart: _hash(frame) for mart, frame in marts.items()}
        print(f"{name}: {len(marts)} marts", file=sys.stderr)
    (out / "hashes.json").write_text(json.dumps(hashes, indent=2, sort_keys=True) + "\n")
    return hashes


def compare(before: Path, after: Path, names: list[str]) -> tuple[list[str], float, int]:
    """(differences, largest relative difference of a double, marts compared)."""
    problems: list[str] = []
    worst = 0.0
    compared = 0
    for fleet in names:
        b_marts = {p.stem for p in (before / fleet).glob("*.parquet")}
        a_marts = {p.stem for p in (after / fleet).glob("*.parquet")}
        problems += [f"{fleet}.{m}: only before" for m in sorted(b_marts - a_marts)]
        problems += [f"{fleet}.{m}: only after" for m in sorted(a_marts - b_marts)]
        for mart in sorted(a_marts & b_marts):
            compared += 1
            x = pl.read_parquet(before / fleet / f"{mart}.parquet")
            y = pl.read_parquet(after / fleet / f"{mart}.parquet")
            found, rel = compare_frames(f"{fleet}.{mart}", x, y)
            problems += found
            worst = max(worst, rel)
    return problems, worst, compared


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--compare", type=Path, help="an earlier OUT_DIR")
    parser.add_argument("--fleets", nargs="*", default=list(FLEETS), choices=list(FLEETS))
    parser.add_argument("--no-run", action="store_true", help="compare OUT_DIR as it is")
    args = parser.parse_args()
    if args.no_run:
        hashes = json.loads((args.out / "hashes.json").read_text())
    else:
        hashes = run_fleets(args.fleets, args.out)
    if not args.compare:
        return 0
    problems, worst, compared = compare(args.compare, args.out, args.fleets)
    before = json.loads((args.compare / "hashes.json").read_text())
    files = [f for f in args.fleets if before.get(f"{f}.files") != hashes.get(f"{f}.files")]
    problems += [f"{f}: the generator's files differ" for f in files]
    exact = sum(
        before.get(f, {}).get(m) == h for f in args.fleets for m, h in hashes.get(f, {}).items()
    )
    print(
        "\n".join(problems)
        if problems
        else f"identical: {compared} marts over {len(args.fleets)} fleets "
        f"({exact} byte for byte; largest relative difference of a double {worst:.2g}); "
        "the generator's files identical"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
