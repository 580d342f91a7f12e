"""What a daily run's choices cost as the history grows: the copy of the inputs they compare
with, rewritten whole or by day, and the comparison of every row or of the recomputed part.

The models stored from a first day on (docs/operations.md, "Incremental runs") are preceded by a
one-row choice that compares this run's inputs with the copy the last build kept. This script
times the two shapes of that work on synthetic rows of the project's shapes, in DuckDB:

- node-hour copy (`int_gpu_hour_state_inputs`): a row per node and hour. Before: the comparison
  reads every hour before the range and the copy is rewritten whole. Now: the node costs of the
  hours the node-hour costs recomputed are compared (none before the range in a daily run, the
  month's when its bill was restated) and the copy is rewritten from the first changed day.
- bill-line comparison (`int_spend_recompute_from`, `int_node_hour_costs_recompute_from`): every
  line against those of the billing periods the bill lines recomputed (the open month).
- bill-line copy (`int_spend_line_inputs`, formerly part of `int_spend_inputs`): the spend's copy
  of every bill line rewritten whole (before), or its periods from the one the bill lines
  recomputed from (now: the open month's lines).

Each case checks that both shapes find the same first change (a planted one, or none), and the
node-hour case that both leave the same copy. The writes of the timed rounds are rolled back
(so that each round starts from the last build's copy), before DuckDB checkpoints them. Not the
project's compiled SQL: the same statements' shapes, to show how each grows with nodes, lines
and days (`python -m benchmarks.choice_copies`; figures in docs/performance.md).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import duckdb

#: 2025-10-01, the synthetic history's first midnight
FIRST_DAY = 1_759_276_800


@dataclass(frozen=True)
class Timing:
    """One case: the rows, each shape's median milliseconds and the first change it found."""

    case: str
    rows: int
    before_ms: float
    now_ms: float
    before_found: float | None
    now_found: float | None


def _connect(folder: Path) -> duckdb.DuckDBPyConnection:
    """A database file of its own in `folder` (the warehouse is a file: writes cost what they
    cost there), 2 threads."""
    con = duckdb.connect(str(folder / f"{uuid.uuid4().hex}.duckdb"))
    con.execute("set threads = 2; set enable_progress_bar = false")
    return con


def _changed(
    con: duckdb.DuckDBPyConnection, now: str, copy: str, where: str, key: str
) -> float | None:
    """The first `key` of the rows that differ between `now` and `copy` (both ways)."""
    sql = f"""
        select min({key}) from (
            (select * from {now} where {where} except select * from {copy} where {where})
            union all
            (select * from {copy} where {where} except select * from {now} where {where})
        )
    """
    return con.execute(sql).fetchall()[0][0]


def _recomputed_month(con: duckdb.DuckDBPyConnection, run_day: int) -> int:
    """The billing period the bill lines recompute from in a daily run of `run_day` (epoch
    seconds of its midnight): the month of the day before it, as int_billing_lines_recompute_from
    takes it (on a month's first day, the month before)."""
    sql = f"select cast(epoch(date_trunc('month', to_timestamp({run_day - 86400}))) as bigint)"
    return con.execute(sql).fetchall()[0][0]


def _time(runs: int, before: Callable[[], float | None], now: Callable[[], float | None]) -> tuple:
    """Median milliseconds of each shape, alternating which goes first; the last results."""
    spent: dict[str, list[float]] = {"before": [], "now": []}
    found: dict[str, float | None] = {}
    for i in range(runs):
        order = [("before", before), ("now", now)]
        for name, fn in order if i % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            found[name] = fn()
            spent[name].append((time.perf_counter() - start) * 1000)
    return median(spent["before"]), median(spent["now"]), found["before"], found["now"]


def node_hour_copy(
    folder: Path, nodes: int, days: int, restated: bool = True, runs: int = 5
) -> Timing:
    """The states' copy in a daily run for the last day: compare every hour before the range and
    rewrite the copy whole (before), or compare the node costs of the hours the node-hour costs
    recomputed and rewrite the copy from the first changed day (now). `restated`: the open
    month's bill was restated (one node-hour of the month's first day changed; the node-hour
    costs recomputed from the month's first day); else nothing before the range changed."""
    if nodes < 1 or days < 2:
        raise ValueError(
            f"need a node and a day before the daily run's: {nodes} nodes, {days} days"
        )
    con = _connect(folder)
    last = FIRST_DAY + (days - 1) * 86400
    con.execute(f"""
        create table inputs as
        select 'node-' || n as subject, {FIRST_DAY} + h * 3600 as hour_epoch,
            round(1 + (n * 7 + h) % 13 / 10, 6) as amount,
            cast(floor(({FIRST_DAY} + h * 3600) / 86400) * 86400 as bigint) as day_epoch
        from range({nodes}) as a(n), range({days * 24}) as b(h)
    """)
    month = _recomputed_month(con, last)
    con.execute("create table copy_whole as select * from inputs")
    con.execute("create table copy_by_day as select * from inputs")
    planted = month + 5 * 3600 if restated else None
    if planted is not None:
        con.execute(f"update inputs set amount = amount + 1 where hour_epoch = {planted}")
    node_costs_from = month if restated else last

    def before(keep: bool = False) -> float | None:
        found = _changed(con, "inputs", "copy_whole", f"hour_epoch < {last}", "hour_epoch")
        con.execute("begin")
        con.execute("create or replace table copy_whole as select * from inputs")
        con.execute("commit" if keep else "rollback")
        return found

    def now(keep: bool = False) -> float | None:
        where = f"hour_epoch < {last} and hour_epoch >= {node_costs_from}"
        found = _changed(con, "inputs", "copy_by_day", where, "hour_epoch")
        first_day = last if found is None else found // 86400 * 86400
        con.execute("begin")
        con.execute(f"delete from copy_by_day where day_epoch >= {first_day}")
        con.execute(f"insert into copy_by_day select * from inputs where hour_epoch >= {first_day}")
        con.execute("commit" if keep else "rollback")
        return found

    b, n, fb, fn = _time(runs, before, now)
    if fb != planted or fn != planted:
        raise AssertionError(f"planted {planted}, found {fb} (before) and {fn} (now)")
    before(keep=True)
    now(keep=True)
    differ = con.execute(
        "select count(*) from (select * from copy_whole except select * from copy_by_day)"
    ).fetchall()[0][0]
    if differ:
        raise AssertionError(f"the copy stored by day differs from the whole one in {differ} rows")
    what = "a restated month" if restated else "nothing earlier changed"
    return Timing(
        f"node-hour copy, {nodes} nodes x {days} d, {what}", nodes * days * 24, b, n, fb, fn
    )


def bill_line_comparison(folder: Path, lines_per_day: int, days: int, runs: int = 5) -> Timing:
    """The spend's choice: every bill line against the copy, or the lines of the periods the bill
    lines recompute only (a daily run: the open month's)."""
    con = _connect(folder)
    con.execute(f"""
        create table lines as
        select 'line-' || d || '-' || i as line_key, 'node-' || i % 128 as host,
            {FIRST_DAY} + d * 86400 + i % 24 * 3600 as cs,
            round((d * 31 + i) % 997 / 10, 6) as cost,
            cast(epoch(date_trunc('month', to_timestamp({FIRST_DAY} + d * 86400))) as bigint)
                as billing_period_epoch
        from range({days}) as a(d), range({lines_per_day}) as b(i)
    """)
    con.execute("create table copy as select * from lines")
    # the open month redelivered with one line of the run's day restated
    last = FIRST_DAY + (days - 1) * 86400
    con.execute(f"update lines set cost = cost * 2 + 1 where line_key = 'line-{days - 1}-0'")
    month = f"coalesce(billing_period_epoch >= {_recomputed_month(con, last)}, true)"
    b, n, fb, fn = _time(
        runs,
        lambda: _changed(con, "lines", "copy", "true", "cs"),
        lambda: _changed(con, "lines", "copy", month, "cs"),
    )
    if fb != last or fn != last:
        raise AssertionError(f"the planted line's span starts at {last}, found {fb} and {fn}")
    return Timing(
        f"bill lines, {lines_per_day:,} a day x {days} days", lines_per_day * days, b, n, fb, fn
    )


def bill_line_copy(folder: Path, lines_per_day: int, days: int, runs: int = 5) -> Timing:
    """The spend's copy of the bill lines after a daily run with the open month redelivered:
    rewritten whole (before), or from the month the bill lines recomputed from (now). Both must
    leave the copy equal to the lines; `*_found`: the rows each shape wrote."""
    con = _connect(folder)
    con.execute(f"""
        create table lines as
        select 'line-' || d || '-' || i as line_key, 'node-' || i % 128 as host,
            'team-' || i % 7 as team, {FIRST_DAY} + d * 86400 + i % 24 * 3600 as cs,
            {FIRST_DAY} + d * 86400 + i % 24 * 3600 + 3600 as ce,
            round((d * 31 + i) % 997 / 10, 6) as cost,
            round((d * 31 + i) % 997 / 10, 6) as billed_cost,
            cast(epoch(date_trunc('month', to_timestamp({FIRST_DAY} + d * 86400))) as bigint)
                as billing_period_epoch
        from range({days}) as a(d), range({lines_per_day}) as b(i)
    """)
    con.execute("create table copy_whole as select * from lines")
    con.execute("create table copy_by_period as select * from lines")
    last = FIRST_DAY + (days - 1) * 86400
    month = _recomputed_month(con, last)
    # the redelivery restates a line of the open month
    con.execute(f"update lines set cost = cost * 2 + 1 where line_key = 'line-{days - 1}-0'")

    def before(keep: bool = False) -> float:
        con.execute("begin")
        con.execute("create or replace table copy_whole as select * from lines")
        written = con.execute("select count(*) from copy_whole").fetchall()[0][0]
        con.execute("commit" if keep else "rollback")
        return written

    def now(keep: bool = False) -> float:
        con.execute("begin")
        con.execute(f"delete from copy_by_period where billing_period_epoch >= {month}")
        written = con.execute(
            f"insert into copy_by_period select * from lines where billing_period_epoch >= {month}"
        ).fetchall()[0][0]
        con.execute("commit" if keep else "rollback")
        return written

    b, n, fb, fn = _time(runs, before, now)
    before(keep=True)
    now(keep=True)
    for copy in ("copy_whole", "copy_by_period"):
        differ = con.execute(
            f"select count(*) from ((select * from lines except all select * from {copy}) "
            f"union all (select * from {copy} except all select * from lines))"
        ).fetchall()[0][0]
        if differ:
            raise AssertionError(f"{copy} differs from the bill lines in {differ} rows")
    return Timing(
        f"bill-line copy, {lines_per_day:,} a day x {days} days", lines_per_day * days, b, n, fb, fn
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[128, 1250])
    parser.add_argument("--lines-per-day", type=int, nargs="+", default=[3150, 30000])
    parser.add_argument("--days", type=int, nargs="+", default=[7, 365])
    args = parser.parse_args(argv)
    for option, values, least in (
        ("--nodes", args.nodes, 1),
        ("--lines-per-day", args.lines_per_day, 1),
        ("--days", args.days, 2),
    ):
        if min(values) < least:
            parser.error(
                f"{option} must be at least {least} (a history before the daily run's day)"
            )
    with tempfile.TemporaryDirectory(prefix="choice-copies-") as tmp:
        folder = Path(tmp)
        timings = [
            node_hour_copy(folder, n, d, restated)
            for n in args.nodes
            for d in args.days
            for restated in (False, True)
        ]
        timings += [
            case(folder, k, d)
            for case in (bill_line_comparison, bill_line_copy)
            for k in args.lines_per_day
            for d in args.days
        ]
    print(f"{'case':<58} {'rows':>12} {'before ms':>10} {'now ms':>8} {'ratio':>7}")
    for t in timings:
        ratio = t.before_ms / t.now_ms if t.now_ms else float("inf")
        print(f"{t.case:<58} {t.rows:>12,} {t.before_ms:>10.0f} {t.now_ms:>8.0f} {ratio:>6.1f}x")


if __name__ == "__main__":
    main()
