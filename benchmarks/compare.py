"""The scale benchmark's correctness checks: the pandas baseline and the generator's plan
against the warehouse the pipeline built. Any difference over the tolerance raises
`Mismatch`, naming the first rows that differ."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd

from benchmarks.baseline.gpu_hours import BaselineResult

TOLERANCE = 1e-6
STATES = ("busy_seconds", "allocated_idle_seconds", "unallocated_seconds", "down_seconds")
RUN_COLUMNS = ("busy_gpu_hours", "allocated_idle_gpu_hours")


class Mismatch(AssertionError):
    """The warehouse and a reference disagree."""


def warehouse_gpu_hours(db: Path) -> pd.DataFrame:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            f"""
            select gpu_uuid, epoch("hour")::double as hour_epoch, {", ".join(STATES)}
            from fct_gpu_hours
            """
        ).df()


def warehouse_run_gpu_hours(db: Path) -> pd.DataFrame:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(f"select run_id, {', '.join(RUN_COLUMNS)} from fct_run_costs").df()


def _compare(
    ours: pd.DataFrame, theirs: pd.DataFrame, keys: list[str], cols: tuple[str, ...], what: str
) -> float:
    """Largest absolute difference of `cols` over rows matched on `keys`; raises `Mismatch`
    when a row is on one side only or a difference exceeds TOLERANCE."""
    m = ours.merge(
        theirs, on=keys, how="outer", suffixes=("_baseline", "_warehouse"), indicator=True
    )
    lonely = m[m["_merge"] != "both"]
    if len(lonely):
        raise Mismatch(
            f"{what}: {len(lonely)} rows on one side only, e.g.\n{lonely.head(5).to_string()}"
        )
    worst = 0.0
    for c in cols:
        diff = (m[f"{c}_baseline"] - m[f"{c}_warehouse"]).abs()
        worst = max(worst, float(diff.max() if len(diff) else 0.0))
        bad = m[diff > TOLERANCE]
        if len(bad):
            raise Mismatch(
                f"{what}: {c} differs on {len(bad)} of {len(m)} rows (max {diff.max():.6g}), "
                f"e.g.\n{bad[[*keys, f'{c}_baseline', f'{c}_warehouse']].head(5).to_string()}"
            )
    return worst


def check_baseline(base: BaselineResult, db: Path) -> dict[str, float]:
    """The baseline's GPU-hour states and per-run GPU-hours equal fct_gpu_hours and
    fct_run_costs within TOLERANCE; returns the rows compared and the largest difference."""
    wh = warehouse_gpu_hours(db)
    worst_hours = _compare(base.gpu_hours, wh, ["gpu_uuid", "hour_epoch"], STATES, "fct_gpu_hours")
    runs = warehouse_run_gpu_hours(db)
    worst_runs = _compare(base.run_gpu_hours, runs, ["run_id"], RUN_COLUMNS, "fct_run_costs")
    return {
        "gpu_hour_rows": float(len(wh)),
        "run_rows": float(len(runs)),
        "max_abs_diff_seconds": worst_hours,
        "max_abs_diff_gpu_hours": worst_runs,
    }


def check_planted(planted: dict[str, float], db: Path) -> dict[str, float]:
    """The warehouse's fleet totals by state equal what the generator planted."""
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(
            f"select {', '.join(f'sum({s})' for s in STATES)} from fct_gpu_hours"
        ).fetchone()
    got = dict(zip(STATES, map(float, row or ()), strict=True))
    for state, want in planted.items():
        if abs(got[state] - want) > TOLERANCE * max(1.0, abs(want)):
            raise Mismatch(f"fct_gpu_hours: {state} sums to {got[state]}, the plan is {want}")
    return got
