"""Incremental runs equal a full rebuild (DESIGN.md, "Incremental runs"; docs/operations.md).

One small generated fleet (2 AWS, 1 GCP, 2 on-prem nodes, 10 days, a scrape every 5 minutes)
is built day by day, one `run_pipeline` per day: days 1-5, day 6 with a CUR redelivery that
restates the costs of days 1-5, a run over days 4-7, then days 8, 9 (after a redelivery that
restates only the S3 lines of day 2: no node's cost) and 10 (whose sacct export shows a job of
day 3 under another team's account); day 5's sacct export shows a job of day 2 under another
user. The published marts
must then equal, mart by mart, those of a `--full-refresh` build of the same landed data. The
day models must really be incremental: rows of days the day-6 run did not recompute, marked
before it, are still there after it (the health day models rewrite the day before a run's
range too: day 5); the full refresh drops such a mark.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import polars.testing
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from fleetledger.generator import generate
from fleetledger.pipeline import PipelineResult, run_pipeline
from fleetledger.publish import build_path, history_path, published_path

START = date(2026, 1, 5)
DAYS = 10
# the CUR redelivery on day 6 restates the lines of days 1-5 by this factor
RESTATE = 1.1
# the CUR redelivery before day 9's run restates the S3 lines of day 2 by this factor
STORAGE_RESTATE = 1.2
# the generated fleet's slurm_account rules (the accounts of its jobs)
TEAM_OF_ACCOUNT = {"llm": "llm-training", "research": "research", "rl": "research", "data": "data"}
# marts that log the runs themselves (a row per run and finding): not a function of the data
RUN_LOGS = {"fct_data_health"}
# the day models whose rows of days a run does not recompute must stay as they were, each with
# the always-positive column its marks negate
DAY_MODELS = {
    "int_gpu_samples": "power_w",
    "int_sample_pieces": "power_w",
    "int_gpu_last_samples": "power_w",
    "int_gpu_sample_labels": "t",
    "int_gpu_coverage_spans": "pieces",
    "int_gpu_label_days": "samples",
    "int_gpu_hour_reports": "samples",
    "int_gpu_hour_telemetry": "energy_wh",
    "int_run_gpu_hours": "energy_wh",
    "int_inference_last_samples": "value",
    "int_inference_sample_increases": "value",
    "int_inference_counter_hours": "samples",
    "int_inference_latency_hours": "observations",
    "int_inference_server_hours": "requests",
    "int_dcgm_outside_host_days": "samples",
    "int_dcgm_host_days": "samples",
    "int_gpu_energy_last_samples": "counter_mj",
    "int_gpu_energy_counter": "counter_mj",
}
# day models whose rows of a day depend on the next day's first samples: a run rewrites the
# days of its range and the day before it (docs/operations.md, "Incremental runs")
DAY_BEFORE_MODELS = {
    "int_health_gpu_samples": "sm_clock_mhz",
    "int_health_straggler_buckets": "gpus_compared",
    "int_health_straggler_pieces": "buckets",
    # a day's last power reading is valid until the meter's next one
    "int_power_reading_intervals": "kw",
    "int_pue_daily": "facility_kwh",
}
MARKED_MODELS = {**DAY_MODELS, **DAY_BEFORE_MODELS}
# day models rewritten from the first day a chooser picked, each with that chooser's chain
# (int_gpu_hour_states_recompute_from: "states", int_gpu_units_recompute_from: "units")
SUMMED_FROM_A_FIRST_DAY = {"int_health_node_days": "states", "int_gpu_hour_energy_by_node": "units"}
# the intermediate models stored by day that the test compares with the full rebuild, and the
# file each lives in: the runs' hourly usage in the build warehouse (the recommendations read
# it), the two above in the day models' file
# the copies of the inputs two one-row choosers compare with (the last build's), stored by day
# from their chooser's first day, each with its day column's name in the compiled SQL
STORED_COPIES = {
    "int_gpu_hour_state_inputs": ("hour_epoch", "states"),
    "int_node_hour_cost_inputs": ("day_epoch", "node_costs"),
}
# and two models of every bill line stored by billing period from the bill lines' first period
# (int_billing_lines_recompute_from): the copy the spend's chooser compares with, and the
# teams of the lines matching no node
STORED_BY_PERIOD = ("int_spend_line_inputs", "int_billing_line_teams")
STORED_INTERMEDIATES = {
    "int_run_hour_usage": build_path,
    **{model: history_path for model in SUMMED_FROM_A_FIRST_DAY},
    **{model: build_path for model in [*STORED_COPIES, *STORED_BY_PERIOD]},
}


def _day(n: int) -> date:
    return START + timedelta(days=n - 1)


def _epoch(d: date) -> int:
    return (d - date(1970, 1, 1)).days * 86400


def _run(home: Path, first: int, last: int | None = None, **kw: bool) -> PipelineResult:
    return run_pipeline(home, _day(first), _day(last or first), **kw)


def _marts(path: Path) -> dict[str, pl.DataFrame]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        names = [
            r[0]
            for r in con.execute(
                "select table_name from information_schema.tables where table_schema = 'main' "
                "order by table_name"
            ).fetchall()
        ]
        return {n: con.sql(f'select * from main."{n}"').pl() for n in names}
    finally:
        con.close()


def _stored(home: Path, model: str, path: Callable[[Path], Path] = build_path) -> pl.DataFrame:
    """Every row of an intermediate model stored by day: in the build warehouse, or with
    `path=history_path` in the day models' file."""
    con = duckdb.connect(str(path(home)), read_only=True)
    try:
        return con.sql(f"select * from intermediate.{model}").pl()
    finally:
        con.close()


def _stored_intermediates(home: Path) -> dict[str, pl.DataFrame]:
    """Every row of each of STORED_INTERMEDIATES, from its own file."""
    return {model: _stored(home, model, path) for model, path in STORED_INTERMEDIATES.items()}


def _usage_cost(home: Path, first: int, last: int) -> float:
    """The direct cost of days `first`..`last` in the runs' hourly usage (int_run_hour_usage)."""
    sql = "select sum(cost) from intermediate.int_run_hour_usage where day_epoch between ? and ?"
    return _published_sum(build_path(home), sql, [_epoch(_day(first)), _epoch(_day(last))])


def _usage_off_costs(home: Path) -> list[tuple]:
    """The days whose runs' hourly usage does not add up to the runs' GPU-hour costs it sums
    (both stored by day; the usage must follow the costs' recomputed days)."""

    def by_day(model: str) -> pl.DataFrame:
        return _stored(home, model).group_by("day_epoch").agg(pl.col("cost").sum())

    both = by_day("int_run_hour_usage").join(
        by_day("int_run_gpu_hour_costs"), on="day_epoch", how="full", coalesce=True, suffix="_runs"
    )
    gap = (pl.col("cost").fill_null(0) - pl.col("cost_runs").fill_null(0)).abs()
    return both.filter(gap > 1e-6).rows()


def _sorted(df: pl.DataFrame) -> pl.DataFrame:
    """Rows in a fixed order: by every column, floats rounded (sums in another order differ in
    the last bits), so two frames with the same rows line up."""
    keys = [
        pl.col(c).round(6) if df.schema[c].is_float() else pl.col(c).cast(pl.Utf8)
        for c in df.columns
        if not isinstance(df.schema[c], pl.List | pl.Struct | pl.Array)
    ]
    return df.sort(keys, nulls_last=True) if keys else df


def _content_hash(df: pl.DataFrame) -> int:
    """Order-independent hash of a mart's rows, floats rounded to 1e-9 (the test compares the
    frames themselves, this names a difference quickly)."""
    rounded = df.with_columns(pl.col(c).round(9) for c in df.columns if df.schema[c].is_float())
    return int(rounded.hash_rows(seed=1).cast(pl.UInt64).sum()) if len(df) else 0


def _differing_marts(a: dict[str, pl.DataFrame], b: dict[str, pl.DataFrame]) -> list[str]:
    """The marts (run logs aside) whose rows differ between two builds, each with how."""
    assert set(a) == set(b)
    differing = []
    for name in sorted(set(b) - RUN_LOGS):
        x, y = a[name], b[name]
        if x.schema != y.schema or x.height != y.height:
            differing.append(f"{name}: {x.shape} vs {y.shape}")
            continue
        if _content_hash(x) == _content_hash(y):
            continue
        try:
            polars.testing.assert_frame_equal(
                _sorted(x), _sorted(y), check_exact=False, rel_tol=1e-9, abs_tol=1e-9
            )
        except AssertionError as err:
            differing.append(f"{name}: {str(err)[:300]}")
    return differing


def _redeliver_cur(
    home: Path, restated: Callable[[dict], bool], factor: float, execution: str
) -> float:
    """A CUR redelivery of the open month: every cost of the lines `restated` picks times
    `factor`, the manifest's execution id ending in `execution` (a new delivery). Returns the
    picked lines' net unblended (billed) cost before."""
    root = home / "sources" / "aws" / "cur" / "fleet-cur"
    (data,) = sorted((root / "data").rglob("*.parquet"))
    table = pq.read_table(data)
    costs = [
        f.name
        for f in table.schema
        if pa.types.is_float64(f.type) and f.name != "line_item_usage_amount"
    ]
    before, rows = 0.0, []
    for row in table.to_pylist():
        if restated(row):
            before += row["line_item_net_unblended_cost"] or 0.0
            row = {k: (v * factor if k in costs and v is not None else v) for k, v in row.items()}
        rows.append(row)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), data)
    (manifest,) = sorted((root / "metadata").rglob("*Manifest.json"))
    meta = json.loads(manifest.read_text())
    meta["executionId"] = meta["executionId"][:-4] + execution
    manifest.write_text(json.dumps(meta, indent=2))
    return before


def _timestamp(n: int) -> datetime:
    """Midnight of day `n` as the CUR's usage start dates read (pyarrow timestamp[ms])."""
    return pa.scalar(_epoch(_day(n)) * 1000, type=pa.timestamp("ms")).as_py()


def _restate_cur(home: Path) -> dict[str, float]:
    """A CUR redelivery of the open month: every cost of the lines of days 1-5 times RESTATE.
    Returns the AWS billed cost of days 1-5 before."""
    day_6 = _timestamp(6)
    before = _redeliver_cur(
        home, lambda row: row["line_item_usage_start_date"] < day_6, RESTATE, "0006"
    )
    return {"billed_days_1_5": before}


def _restate_storage_lines(home: Path) -> float:
    """A CUR redelivery that restates only the S3 lines (a bucket, no inventory node) that start
    on day 2, by STORAGE_RESTATE: no node's cost changes. Returns their billed cost before."""
    day_2, day_3 = _timestamp(2), _timestamp(3)

    def restated(row: dict) -> bool:
        start = row["line_item_usage_start_date"]
        return row["line_item_product_code"] == "AmazonS3" and day_2 <= start < day_3

    before = _redeliver_cur(home, restated, STORAGE_RESTATE, "0009")
    assert before > 0
    return before


def _re_export_a_job(
    home: Path, ran_on: int, export_day: int, change: Callable[[dict], None]
) -> dict[str, str]:
    """A later sacct export (`export_day`'s) shows the first GPU job that started on day
    `ran_on` with `change` made to its row: the latest export's row wins (int_runs__slurm).
    Returns the changed row."""
    sacct = home / "sources" / "aws" / "sacct"
    lines = (sacct / f"sacct-{_day(ran_on)}.txt").read_text().splitlines()
    fields = lines[0].split("|")
    rows = [dict(zip(fields, line.split("|"), strict=True)) for line in lines[1:]]
    jobs = [
        row
        for row in rows
        if "." not in row["JobID"]
        and row["Start"].startswith(str(_day(ran_on)))
        and row["End"] != "Unknown"
        and re.search(r"gres/gpu=[0-9]+", row["AllocTRES"])
        and row["Account"] in TEAM_OF_ACCOUNT
    ]
    assert jobs, f"no GPU job started on day {ran_on}"
    row = jobs[0]
    change(row)
    with (sacct / f"sacct-{_day(export_day)}.txt").open("a") as f:
        f.write("|".join(row[k] for k in fields) + "\n")
    return row


def _move_to_another_team(row: dict) -> None:
    row["Account"] = {"llm": "data", "research": "data", "rl": "data", "data": "llm"}[
        row["Account"]
    ]


def _another_user(row: dict) -> None:
    row["User"] = "auditor"


def _mark(home: Path, *days: int) -> dict[str, dict[int, int]]:
    """Mark the rows of `days` in the day models: their positive mark column (power_w, ...)
    negated (exactly reversible; a recompute would undo it). Returns how many rows are marked
    per model and day."""
    con = duckdb.connect(str(history_path(home)))
    try:
        epochs = ", ".join(str(_epoch(_day(d))) for d in days)
        for model, col in MARKED_MODELS.items():
            con.execute(
                f"update intermediate.{model} set {col} = -{col} "
                f"where day_epoch in ({epochs}) and {col} > 0"
            )
    finally:
        con.close()
    return _marked(home, *days)


def _marked(home: Path, *days: int) -> dict[str, dict[int, int]]:
    """How many rows of each of `days` are marked per day model (a later day's first piece,
    covered by a marked sample of the day before, copies its mark: it is not counted)."""
    con = duckdb.connect(str(history_path(home)), read_only=True)
    try:
        out: dict[str, dict[int, int]] = {}
        for model, col in MARKED_MODELS.items():
            out[model] = {}
            for d in days:
                row = con.execute(
                    f"select count(*) from intermediate.{model} "
                    f"where {col} < 0 and day_epoch = {_epoch(_day(d))}"
                ).fetchone()
                out[model][d] = int(row[0]) if row else 0
        return out
    finally:
        con.close()


def _unmark(home: Path) -> None:
    con = duckdb.connect(str(history_path(home)))
    try:
        for model, col in MARKED_MODELS.items():
            con.execute(f"update intermediate.{model} set {col} = -{col} where {col} < 0")
    finally:
        con.close()


def _published_sum(path: Path, sql: str, params: list) -> float:
    """One sum from a warehouse file, the published one or the build's (0 when no row)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        row = con.execute(sql, params).fetchone()
        return float(row[0]) if row and row[0] is not None else 0.0
    finally:
        con.close()


def _aws_spend(path: Path, first: int, last: int) -> float:
    sql = (
        "select sum(billed_cost) from main.fct_daily_spend "
        "where provider = 'aws' and day between ? and ?"
    )
    return _published_sum(path, sql, [_day(first), _day(last)])


def _user_spend(path: Path, user: str, day: int) -> float:
    """The GPU-node spend of `user`'s runs on `day` in the cost explorer's mart."""
    sql = "select sum(gpu_node_cost) from main.fct_spend_breakdown where user_name = ? and day = ?"
    return _published_sum(path, sql, [user, _day(day)])


def _landed_dcgm_rows(home: Path) -> dict[int, int]:
    """The long DCGM rows landed for each day n of the history (the Parquet footers)."""
    rows: dict[int, int] = {}
    for n in range(1, DAYS + 1):
        files = (home / "raw" / "dcgm_samples").glob(f"*/date={_day(n)}/*.parquet")
        rows[n] = sum(pq.read_metadata(f).num_rows for f in files)
    return rows


def _set_day_batch_rows(home: Path, rows: int) -> None:
    """`warehouse.day_batch_rows` in the home's config (not an input of any model)."""
    path = home / "fleetledger.yml"
    cfg = yaml.safe_load(path.read_text())
    cfg.setdefault("warehouse", {})["day_batch_rows"] = rows
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))


def _compiled_model(home: Path, model: str) -> str:
    """The compiled SQL of `model` in the home's last dbt build."""
    runs = [p for p in (home / "build" / "dbt").iterdir() if (p / "run_results.json").is_file()]
    newest = max(runs, key=lambda p: p.stat().st_mtime)
    results = json.loads((newest / "run_results.json").read_text())["results"]
    (sql,) = [r["compiled_code"] for r in results if r["unique_id"] == f"model.fleetledger.{model}"]
    return str(sql)


def _change_a_gpus_first_report(home: Path) -> None:
    """As if a GPU's first report had moved since the last build (what a re-run of an earlier
    day can do): the GPUs int_gpu_units was built with (int_gpu_unit_inputs) no longer match."""
    con = duckdb.connect(str(build_path(home)))
    try:
        con.execute(
            "update intermediate.int_gpu_unit_inputs set first_report_hour = first_report_hour "
            "+ 3600 where gpu_uuid = (select min(gpu_uuid) from intermediate.int_gpu_unit_inputs "
            "where first_report_hour is not null)"
        )
    finally:
        con.close()


def _recomputed_from(home: Path) -> dict[str, tuple[int | None, str]]:
    """The first hour each chain stored from a first day on recomputed in the home's last
    build, and why (the one-row models int_gpu_units_recompute_from,
    int_gpu_hour_states_recompute_from, int_node_hour_costs_recompute_from,
    int_spend_recompute_from, int_team_days_recompute_from, int_inference_recompute_from,
    int_fleet_health_recompute_from, int_ops_daily_recompute_from)."""
    con = duckdb.connect(str(build_path(home)), read_only=True)
    try:
        out = {}
        tables = {
            "units": "int_gpu_units_recompute_from",
            "states": "int_gpu_hour_states_recompute_from",
            "node_costs": "int_node_hour_costs_recompute_from",
            "spend": "int_spend_recompute_from",
            "team_days": "int_team_days_recompute_from",
            "inference": "int_inference_recompute_from",
            "health": "int_fleet_health_recompute_from",
            "ops": "int_ops_daily_recompute_from",
        }
        for name, table in tables.items():
            row = con.execute(f"select from_hour, reason from intermediate.{table}").fetchone()
            assert row is not None
            out[name] = (None if row[0] is None else int(row[0]), str(row[1]))
        return out
    finally:
        con.close()


def _compiled_tests(home: Path) -> dict[str, tuple[str, str]]:
    """The data tests of the home's last dbt build: test name -> (status, compiled SQL)."""
    runs = [p for p in (home / "build" / "dbt").iterdir() if (p / "run_results.json").is_file()]
    newest = max(runs, key=lambda p: p.stat().st_mtime)
    results = json.loads((newest / "run_results.json").read_text())["results"]
    return {
        r["unique_id"].split(".")[2]: (r["status"], r.get("compiled_code") or "")
        for r in results
        if r["unique_id"].startswith("test.")
    }


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The fleet built day by day, then its marts, then the same home fully rebuilt."""
    home = tmp_path_factory.mktemp("incremental")
    generate(
        home,
        days=DAYS,
        seed=5,
        start=START,
        scrape_interval_s=300,
        aws_nodes=2,
        gcp_nodes=1,
        onprem_nodes=2,
    )
    out: dict = {"home": home, "results": {}}
    for n in range(1, 6):
        if n == 5:
            # day 5's sacct export shows a job of day 2 under another user
            out["other_user_job"] = _re_export_a_job(home, 2, 5, _another_user)
        out["results"][n] = _run(home, n)
    out["from_day_5"] = _recomputed_from(home)
    out["auditor_day_2_after_day_5"] = _user_spend(published_path(home), "auditor", 2)
    out["spend_breakdown_day_5"] = _compiled_model(home, "fct_spend_breakdown")
    out["spend_1_5_before"] = _aws_spend(published_path(home), 1, 5)
    out["usage_1_5_before"] = _usage_cost(home, 1, 5)
    out["restated"] = _restate_cur(home)
    out["marked"] = _mark(home, 1, 5)
    out["results"][6] = _run(home, 6)
    out["tests_day_6"] = _compiled_tests(home)
    out["units_day_6"] = _compiled_model(home, "int_gpu_units")
    out["samples_day_6"] = _compiled_model(home, "int_gpu_samples")
    out["states_day_6"] = _compiled_model(home, "int_gpu_hour_states")
    out["fct_day_6"] = _compiled_model(home, "fct_gpu_hours")
    out["run_costs_day_6"] = _compiled_model(home, "int_run_gpu_hour_costs")
    out["run_fct_day_6"] = _compiled_model(home, "fct_run_gpu_hours")
    out["usage_day_6"] = _compiled_model(home, "int_run_hour_usage")
    for model in [*SUMMED_FROM_A_FIRST_DAY, *STORED_COPIES, *STORED_BY_PERIOD]:
        out[f"{model}_day_6"] = _compiled_model(home, model)
    out["usage_1_5_after"] = _usage_cost(home, 1, 5)
    out["usage_off_costs_day_6"] = _usage_off_costs(home)
    out["node_costs_day_6"] = _compiled_model(home, "int_node_hour_costs")
    out["from_day_6"] = _recomputed_from(home)
    out["spend_day_6"] = _compiled_model(home, "int_daily_spend_allocations")
    out["still_marked"] = _marked(home, 1, 5)
    out["spend_1_5_after"] = _aws_spend(published_path(home), 1, 5)
    _unmark(home)
    out["results"]["4-7"] = _run(home, 4, 7)
    _change_a_gpus_first_report(home)
    for n in range(8, DAYS + 1):
        if n == 9:
            out["aws_spend_day_2_before"] = _aws_spend(published_path(home), 2, 2)
            out["storage_day_2"] = _restate_storage_lines(home)
        if n == 10:
            # day 10's export moves a job of day 3 to another team
            out["moved_job"] = _re_export_a_job(home, 3, 10, _move_to_another_team)
        out["results"][n] = _run(home, n)
        if n == 9:
            out["aws_spend_day_2_after"] = _aws_spend(published_path(home), 2, 2)
        out[f"spend_day_{n}"] = _compiled_model(home, "int_daily_spend_allocations")
        out[f"spend_mart_day_{n}"] = _compiled_model(home, "fct_daily_spend")
        out[f"idle_day_{n}"] = _compiled_model(home, "fct_idle_gpu_hours")
        out[f"units_day_{n}"] = _compiled_model(home, "int_gpu_units")
        out[f"states_day_{n}"] = _compiled_model(home, "int_gpu_hour_states")
        out[f"run_costs_day_{n}"] = _compiled_model(home, "int_run_gpu_hour_costs")
        out[f"usage_day_{n}"] = _compiled_model(home, "int_run_hour_usage")
        for model in [*SUMMED_FROM_A_FIRST_DAY, *STORED_COPIES, *STORED_BY_PERIOD]:
            out[f"{model}_day_{n}"] = _compiled_model(home, model)
        out[f"node_costs_day_{n}"] = _compiled_model(home, "int_node_hour_costs")
        for chooser in ("gpu_hour_states", "node_hour_costs", "spend"):
            chosen_by = f"int_{chooser}_recompute_from"
            out[f"{chooser}_chooser_day_{n}"] = _compiled_model(home, chosen_by)
        out[f"from_day_{n}"] = _recomputed_from(home)
    out["daily"] = _marts(published_path(home))
    out["stored_daily"] = _stored_intermediates(home)
    assert _mark(home, 3)["int_sample_pieces"][3] > 0
    # the full build runs the sample-grain models a day a batch (a budget of one landed row: every
    # day is a batch of its own), the rebuild after the damage below in batches of four days
    out["landed_rows"] = _landed_dcgm_rows(home)
    _set_day_batch_rows(home, 1)
    out["results"]["full"] = _run(home, 1, DAYS, full_refresh=True)
    out["samples_full"] = _compiled_model(home, "int_gpu_samples")
    out["tests_full"] = _compiled_tests(home)
    out["units_full"] = _compiled_model(home, "int_gpu_units")
    out["from_full"] = _recomputed_from(home)
    out["marked_after_full"] = _marked(home, 3)
    out["full"] = _marts(published_path(home))
    out["stored_full"] = _stored_intermediates(home)
    telemetry = _stored(home, "int_gpu_hour_telemetry", history_path)
    out["telemetry_energy_full"] = float(telemetry["energy_wh"].fill_null(0).sum())
    # the day models' file damaged (a full disk, a bad copy): the next run moves it aside,
    # says so, and rebuilds every model from the landing zone
    history_path(home).write_bytes(b"not a database" * 1000)
    _set_day_batch_rows(home, sum(out["landed_rows"][n] for n in range(1, 5)))
    out["results"]["damaged"] = _run(home, DAYS)
    out["after_damage"] = _marts(published_path(home))
    out["set_aside"] = sorted(p.name for p in (home / "build").glob("history.unreadable-*"))
    shutil.rmtree(home / "sources", ignore_errors=True)
    return out


def test_every_run_after_the_first_is_incremental(history: dict) -> None:
    results = history["results"]
    assert results[1].full_refresh == "no built warehouse yet"
    for key in (2, 3, 4, 5, 6, "4-7", 8, 9, 10):
        assert results[key].full_refresh is None, key
    assert results["full"].full_refresh == "requested (--full-refresh)"


def test_the_day_6_run_recomputed_day_6_only(history: dict) -> None:
    marked, still = history["marked"], history["still_marked"]
    # days 1 and 5: the fleet's 5 nodes x 8 GPUs report power every 5 minutes, 40 x 288 =
    # 11,520 samples a full day; at least 90 % of that on both days (outages, the XID node)
    for d in (1, 5):
        assert marked["int_gpu_samples"][d] >= 5 * 8 * 288 * 0.9
        assert marked["int_sample_pieces"][d] >= marked["int_gpu_samples"][d]
        # the health samples are the whole GPUs' samples: the same 40 GPUs every 5 minutes
        assert marked["int_health_gpu_samples"][d] >= 5 * 8 * 288 * 0.9
        # one last sample a GPU and day (what the next day carries in)
        assert 40 * 0.9 <= marked["int_gpu_last_samples"][d] <= 40
        # the GPU-hours the samples cover: 40 GPUs x 24 hours, at least 90 % of them
        assert 40 * 24 * 0.9 <= marked["int_gpu_hour_telemetry"][d] <= 40 * 24
        # the runs' GPU-hours and the samples' job and pod labels of the day
        assert marked["int_run_gpu_hours"][d] > 0
        assert marked["int_gpu_sample_labels"][d] > 0
        # the vLLM servers' counter samples, their last ones of the day and their hours
        assert marked["int_inference_sample_increases"][d] > 0
        assert (
            0
            < marked["int_inference_last_samples"][d]
            < marked["int_inference_sample_increases"][d]
        )
        assert (
            0
            < marked["int_inference_counter_hours"][d]
            <= marked["int_inference_sample_increases"][d]
        )
        # their latency and the servers' hours: an hour of each server with requests
        assert (
            0 < marked["int_inference_latency_hours"][d] <= marked["int_inference_counter_hours"][d]
        )
        assert (
            0 < marked["int_inference_server_hours"][d] <= marked["int_inference_latency_hours"][d]
        )
        # the on-prem site's two meters (facility, UPS output) read every minute, one PUE row
        assert marked["int_power_reading_intervals"][d] == 2 * 1440
        assert marked["int_pue_daily"][d] == 1
    # the marks of days 1 and 5 survived the day-6 run: it did not recompute those days
    for model in DAY_MODELS:
        assert still[model] == marked[model], model
    # the health day models rewrote day 5 too (its last sample ends at day 6's first), not day 1
    assert marked["int_health_straggler_buckets"][1] > 0
    for model in DAY_BEFORE_MODELS:
        assert still[model] == {1: marked[model][1], 5: 0}, model
    # the full refresh recomputed every day: the mark put on day 3 is gone
    assert history["marked_after_full"] == {model: {3: 0} for model in MARKED_MODELS}


def test_gpu_units_recompute_from_the_range_on_unless_the_gpus_changed(history: dict) -> None:
    # an hour without a MIG report carries the last report's layout, so int_gpu_units rewrites
    # every day from the first of the range on (int_gpu_units_recompute_from)
    assert f"where hour_epoch >= {_epoch(_day(6))}" in history["units_day_6"]
    assert f"where hour_epoch >= {_epoch(_day(9))}" in history["units_day_9"]
    # the GPUs it was built with changed before day 8's run: that run rewrote every day
    assert "where hour_epoch >= -1e+18" in history["units_day_8"]
    assert "where hour_epoch >= -1e+18" in history["units_full"]


def test_the_day_sums_recompute_from_their_chains_first_day(history: dict) -> None:
    # int_health_node_days sums the GPU-hour states: from day 1 after the day-6 restatement
    # (the states' costs changed), every day when the GPUs changed (day 8), day 9 alone after;
    # int_gpu_hour_energy_by_node sums the telemetry by the GPUs' nodes: the range on day 6
    # and day 9, every day on day 8
    first_day = {"states": {6: 1, 8: None, 9: 9, 10: 10}, "units": {6: 6, 8: None, 9: 9, 10: 10}}
    wrong = [
        (model, n, first)
        for model, chain in SUMMED_FROM_A_FIRST_DAY.items()
        for n, first in first_day[chain].items()
        if f"where hour_epoch >= {'-1e+18' if first is None else _epoch(_day(first))}"
        not in history[f"{model}_day_{n}"]
    ]
    assert wrong == []


def test_the_input_copies_are_rewritten_from_their_choosers_first_day(history: dict) -> None:
    # the copy the states' chooser compares with: from day 1 after the day-6 restatement, every
    # day when the GPUs changed (day 8), the day alone on days 9 and 10; the node costs' copy:
    # from day 1 on day 6 (the restated lines), the day alone on days 8, 9 and 10 (no node's
    # bill line changed)
    first_day = {
        "states": {6: 1, 8: None, 9: 9, 10: 10},
        "node_costs": {6: 1, 8: 8, 9: 9, 10: 10},
    }
    wrong = [
        (model, n, first)
        for model, (column, chooser) in STORED_COPIES.items()
        for n, first in first_day[chooser].items()
        if f"where {column} >= {'-1e+18' if first is None else _epoch(_day(first))}"
        not in history[f"{model}_day_{n}"]
    ]
    assert wrong == []
    # and the choosers' own choice agrees, day by day
    for n, chooser_first in first_day["states"].items():
        chosen = history[f"from_day_{n}"]["states"][0]
        assert chosen == (None if chooser_first is None else _epoch(_day(chooser_first)))
    # the states' chooser compares the node costs of the hours the node-hour costs recomputed
    # (day 9 and day 10: that day's), the GPUs' gaps of every hour; the node costs' and the
    # spend's choosers the bill lines of the periods the bill lines recomputed (January 2026,
    # the open month every CUR redelivery lands), the spend's every run
    january = _epoch(date(2026, 1, 1))
    for n in (9, 10):
        states, node_costs, spend = (
            history[f"{chooser}_chooser_day_{n}"]
            for chooser in ("gpu_hour_states", "node_hour_costs", "spend")
        )
        assert f"(input = 'gap' or hour_epoch >= {_epoch(_day(n))})" in states
        assert f"where coalesce(billing_period_epoch >= {january}, true)" in node_costs
        assert f"where coalesce(billing_period_epoch >= {january}, true)" in spend
    # the spend's copy of the bill lines and the lines' teams are rewritten from that period
    # on: on day 6 (the restated month), 8, 9 and 10 January's lines
    wrong_periods = [
        (model, n)
        for model in STORED_BY_PERIOD
        for n in (6, 8, 9, 10)
        if f"billing_period_epoch >= {january}" not in history[f"{model}_day_{n}"]
    ]
    assert wrong_periods == []


def test_gpu_hour_states_recompute_from_the_first_day_whose_inputs_changed(history: dict) -> None:
    # the day-6 CUR redelivery restated the node costs of days 1-5: the states (and the mart)
    # recomputed from day 1 (int_gpu_hour_states_recompute_from)
    assert f"where hour_epoch >= {_epoch(_day(1))}" in history["states_day_6"]
    assert f"where hour_epoch >= {_epoch(_day(1))}" in history["fct_day_6"]
    # and so did the runs' GPU-hour costs and their mart (the same choice), from the stored run
    # GPU-hours of those days
    assert f"where run_hours.hour_epoch >= {_epoch(_day(1))}" in history["run_costs_day_6"]
    assert f"where hour_epoch >= {_epoch(_day(1))}" in history["run_fct_day_6"]
    # and the runs' hourly usage the recommendations read (it sums those costs)
    assert f"where hour_epoch >= {_epoch(_day(1))}" in history["usage_day_6"]
    # day 9: nothing before it changed, the day alone
    assert f"where hour_epoch >= {_epoch(_day(9))}" in history["states_day_9"]
    assert f"where run_hours.hour_epoch >= {_epoch(_day(9))}" in history["run_costs_day_9"]
    assert f"where hour_epoch >= {_epoch(_day(9))}" in history["usage_day_9"]
    # day 8: the GPUs changed (see above), every day
    assert "where hour_epoch >= -1e+18" in history["states_day_8"]
    assert "where run_hours.hour_epoch >= -1e+18" in history["run_costs_day_8"]
    assert "where hour_epoch >= -1e+18" in history["usage_day_8"]
    # and the one-row models say where each run started, and why
    assert history["from_day_6"] == {
        "units": (_epoch(_day(6)), "range"),
        "states": (_epoch(_day(1)), "costs or failure signals changed"),
        "node_costs": (_epoch(_day(1)), "bill lines changed"),
        # the spend models follow the states (the restated lines start on day 1 too)
        "spend": (_epoch(_day(1)), "costs or failure signals changed"),
        # so do the team days (their runs' GPU-hour costs)
        "team_days": (_epoch(_day(1)), "costs or failure signals changed"),
        "inference": (_epoch(_day(1)), "costs or failure signals changed"),
        # and the fleet health (its node-days sum the states)
        "health": (_epoch(_day(1)), "costs or failure signals changed"),
        # the operations count runs and outages, not costs: the range. A job of the generated
        # fleet that ran over midnight is RUNNING in one day's export and ended in the next:
        # only its end changed, which counts on its end's day, in the range
        "ops": (_epoch(_day(6)), "range"),
    }
    changed = (None, "gpus changed")
    assert history["from_day_8"] == {
        "units": changed,
        "states": changed,
        # the bill did not change: the node-hour costs of day 8 only
        "node_costs": (_epoch(_day(8)), "range"),
        "spend": changed,
        "team_days": changed,
        "inference": changed,
        "health": changed,
        # nor the GPUs
        "ops": (_epoch(_day(8)), "range"),
    }
    assert history["from_day_9"] == {
        "units": (_epoch(_day(9)), "range"),
        "states": (_epoch(_day(9)), "range"),
        # the redelivery before day 9 restated S3 lines only: no node's cost changed
        "node_costs": (_epoch(_day(9)), "range"),
        "spend": (_epoch(_day(2)), "bill lines changed"),
        # no run's allocation changed: the states' day
        "team_days": (_epoch(_day(9)), "range"),
        "inference": (_epoch(_day(9)), "range"),
        # the health signals rewrite the day before the range too (its last samples cover
        # into it); no XID, straggler or outage of an earlier day changed
        "health": (_epoch(_day(8)), "range"),
        "ops": (_epoch(_day(9)), "range"),
    }
    assert history["from_day_10"] == {
        "units": (_epoch(_day(10)), "range"),
        "states": (_epoch(_day(10)), "range"),
        "node_costs": (_epoch(_day(10)), "range"),
        # day 10's sacct moved a job of day 3 to another team: its spend and its team days
        "spend": (_epoch(_day(3)), "runs changed"),
        "team_days": (_epoch(_day(3)), "runs changed"),
        # no inference run changed
        "inference": (_epoch(_day(10)), "range"),
        "health": (_epoch(_day(9)), "range"),
        # a job's team is not what the operations count
        "ops": (_epoch(_day(10)), "range"),
    }
    full = (None, "full build")
    assert history["from_full"] == {
        "units": full,
        "states": full,
        "node_costs": full,
        "spend": full,
        "team_days": full,
        "inference": full,
        "health": full,
        "ops": full,
    }


def test_node_hour_costs_recompute_from_the_first_day_of_a_changed_bill_line(
    history: dict,
) -> None:
    # the day-6 redelivery restated days 1-5: the node-hour costs recomputed from day 1
    # (int_node_hour_costs_recompute_from); day 9's run, with no changed line, day 9 alone
    assert f"where hour_epoch >= {_epoch(_day(1))}" in history["node_costs_day_6"]
    assert f"where hour_epoch >= {_epoch(_day(9))}" in history["node_costs_day_9"]
    assert f"where hour_epoch >= {_epoch(_day(8))}" in history["node_costs_day_8"]


def test_spend_recomputes_from_the_first_day_of_a_changed_line_or_run(history: dict) -> None:
    # the spend models stored by day (int_spend_recompute_from): day 5 from day 2 (a day-2
    # job's new user), day 6 from day 1 (the restated month), day 9 from day 2 (the restated S3
    # lines), day 10 from day 3 (the moved job), day 8 every day (the GPUs changed)
    # the day-5 run's published cost explorer mart already shows the new user's day-2 spend
    assert history["auditor_day_2_after_day_5"] > 0
    assert history["from_day_5"] == {
        "units": (_epoch(_day(5)), "range"),
        "states": (_epoch(_day(5)), "range"),
        "node_costs": (_epoch(_day(5)), "range"),
        "spend": (_epoch(_day(2)), "runs changed"),
        # a new user is not a change of the job's allocation: day 5 alone
        "team_days": (_epoch(_day(5)), "range"),
        "inference": (_epoch(_day(5)), "range"),
        "health": (_epoch(_day(4)), "range"),
        # nor its user
        "ops": (_epoch(_day(5)), "range"),
    }
    assert f"where day_epoch >= {_epoch(_day(2))}" in history["spend_breakdown_day_5"]
    for n, first in ((6, 1), (9, 2), (10, 3)):
        assert f"where day_epoch >= {_epoch(_day(first))}" in history[f"spend_day_{n}"], n
    assert f"where day_epoch >= {_epoch(_day(2))}" in history["spend_mart_day_9"]
    # the idle GPU-hours follow the same choice (their allocated-idle hours are the teams')
    assert f"where day_epoch >= {_epoch(_day(3))}" in history["idle_day_10"]
    assert "where day_epoch >= -1e+18" in history["spend_day_8"]
    # the S3 lines of day 2 (one a bucket and day, or more) cost 20 % more in the mart
    before, after = history["aws_spend_day_2_before"], history["aws_spend_day_2_after"]
    assert after - before == pytest.approx(
        (STORAGE_RESTATE - 1) * history["storage_day_2"], rel=1e-9
    )
    # the re-exported jobs' runs in the published marts: the moved job's new account's team,
    # the other user (whose spend is in the cost explorer's mart under that user)
    runs = history["daily"]["fct_runs"].filter(pl.col("scheduler") == "slurm")

    def run_of(job: dict[str, str]) -> dict:
        (row,) = runs.filter(pl.col("job_id") == job["JobID"]).to_dicts()
        return row

    moved, other = history["moved_job"], history["other_user_job"]
    assert run_of(moved)["team"] == TEAM_OF_ACCOUNT[moved["Account"]]
    assert run_of(other)["user_name"] == "auditor"
    breakdown = history["daily"]["fct_spend_breakdown"]
    auditor = breakdown.filter(pl.col("user_name") == "auditor", pl.col("day") == _day(2))
    assert auditor.height > 0 and auditor["gpu_node_cost"].sum() > 0


def test_the_runs_hourly_usage_follows_the_restated_costs(history: dict) -> None:
    # int_run_hour_usage is stored by day with the runs' GPU-hour costs it sums: after the
    # day-6 run its cost of days 1-5 changed with the restatement and still adds up to the
    # runs' costs day by day (recomputing the range's day alone left days 1-5 at the old cost
    # until the day-8 run rebuilt every day, so the full rebuild's comparison could not see it)
    assert history["usage_1_5_after"] > history["usage_1_5_before"]
    assert history["usage_off_costs_day_6"] == []


def test_the_day_6_redelivery_restated_the_costs_of_days_1_to_5(history: dict) -> None:
    before, after = history["spend_1_5_before"], history["spend_1_5_after"]
    # the billed AWS cost of days 1-5 was the CUR's, and the redelivery multiplied it by 1.1
    assert before == pytest.approx(history["restated"]["billed_days_1_5"], rel=1e-9)
    assert after == pytest.approx(RESTATE * before, rel=1e-9)


def test_incremental_history_equals_the_full_rebuild_mart_by_mart(history: dict) -> None:
    daily, full = history["daily"], history["full"]
    assert len(full) >= 20
    differing = _differing_marts(daily, full)
    assert not differing, "\n".join(differing)
    # the intermediate models stored by day (the runs' hourly usage, the node-days, the nodes'
    # hourly GPU energy), row by row, each over the 10 days
    stored_full = history["stored_full"]
    assert not _differing_marts(history["stored_daily"], stored_full)
    for model, stored in stored_full.items():
        if model not in [*STORED_COPIES, *STORED_BY_PERIOD]:
            assert stored["day_epoch"].n_unique() == DAYS, model
    # the input copies: every hour's node costs of the 10 days (5 nodes x 24 x 10), and at
    # least a bill line's span starting on each day
    state_inputs = stored_full["int_gpu_hour_state_inputs"]
    assert state_inputs.filter(pl.col("input") == "node_cost").height == 5 * 24 * DAYS
    assert stored_full["int_node_hour_cost_inputs"]["day_epoch"].n_unique() >= DAYS
    # a row per GPU node (5) and day; the nodes' energy is all of the GPUs' (none lost to the
    # join with the GPU list, none counted twice)
    assert stored_full["int_health_node_days"].height == 5 * DAYS
    gpu_energy = history["telemetry_energy_full"]
    assert gpu_energy > 0
    node_energy = stored_full["int_gpu_hour_energy_by_node"]["gpu_energy_wh"].sum()
    assert node_energy == pytest.approx(gpu_energy, rel=1e-9)
    # the history is the 10 days: 40 GPUs x 24 hours x 10 days = 9,600 GPU-hours
    assert full["fct_gpu_hours"].height == 40 * 24 * DAYS
    assert full["fct_gpu_hours"]["hour"].dt.date().n_unique() == DAYS


def test_the_full_builds_ran_the_sample_grain_models_in_the_configured_day_batches(
    history: dict,
) -> None:
    """`warehouse.day_batch_rows` reaches the build: the full build ran the batched models a day
    at a time, the rebuild after the damage four days at a time; both equal the daily runs'
    marts (the tests above and below)."""
    rows = history["landed_rows"]
    assert all(n > 0 for n in rows.values()), rows
    assert history["results"]["full"].day_batches == [_day(n) for n in range(1, DAYS + 1)]
    # the rebuild's budget is days 1-4's rows: they are the first batch, day 5 starts the next,
    # and every batch holds as many whole days as fit
    budget = sum(rows[n] for n in range(1, 5))
    starts = history["results"]["damaged"].day_batches
    assert starts[:2] == [_day(1), _day(5)], (starts, rows)
    firsts = [(d - START).days + 1 for d in starts]
    for first, after in zip(firsts, [*firsts[1:], DAYS + 1], strict=True):
        held = sum(rows[n] for n in range(first, after))
        assert held <= budget, (starts, rows)
        if after <= DAYS:
            assert held + rows[after] > budget, (starts, rows)
    # the batched SQL: the batch's bounds are DuckDB variables, not the range's days
    assert "getvariable('fleetledger_day_from')" in history["samples_full"]
    # a daily run runs each model's SQL once over its day
    assert history["results"][6].day_batches == []
    assert "getvariable" not in history["samples_day_6"]


def test_a_damaged_day_models_file_is_set_aside_and_every_model_rebuilt(history: dict) -> None:
    result = history["results"]["damaged"]
    assert result.published is not None
    moved = f"history.unreadable-{result.run_id[:8]}.duckdb"
    assert history["set_aside"] == [moved]
    assert result.full_refresh == f"the day models' file could not be opened (moved to {moved})"
    # the warning reached the run's data-health findings (the console summary reads them)
    found = [f for f in result.health if f.check == "history_unreadable"]
    assert len(found) == 1, result.health
    assert found[0].source == "build" and found[0].severity == "warning"
    assert "not a valid DuckDB database file" in found[0].message
    assert f"build/{moved}" in found[0].message
    # the rebuilt marts are the full refresh's, mart by mart
    differing = _differing_marts(history["after_damage"], history["full"])
    assert not differing, "\n".join(differing)


def test_a_runs_data_tests_read_the_days_it_recomputed(history: dict) -> None:
    # docs/operations.md, "Incremental runs": the day-6 run's tests of the landed samples and
    # of a day model read days 5-6 (the range and the day before it); the full refresh's all
    day6, full = history["tests_day_6"], history["tests_full"]
    landed = next(k for k in day6 if k.startswith("unique_landed_rows_stg_dcgm__samples_"))
    day_model = next(k for k in day6 if k.startswith("unique_combination_int_gpu_samples_"))
    assert day6[landed][0] == day6[day_model][0] == "pass"
    assert (
        f"sampled_at >= cast('{_day(5)} 00:00:00' as timestamp) and "
        f"sampled_at < cast('{_day(7)} 00:00:00' as timestamp)"
    ) in day6[landed][1]
    assert f"day_epoch >= {_epoch(_day(5))} and day_epoch < {_epoch(_day(7))}" in day6[day_model][1]

    # the GPU-hour states and their mart recomputed from day 1 (the restated costs): their
    # tests read from day 1 on; the units from day 6 on
    def grain_test(model: str) -> str:
        return next(k for k in day6 if k.startswith(f"unique_combination_{model}_gpu_uuid_"))

    states, mart = grain_test("int_gpu_hour_states"), grain_test("fct_gpu_hours")
    units = grain_test("int_gpu_units")
    # the runs' GPU-hour costs and their mart, from the same choice
    run_costs = next(k for k in day6 if k.startswith("unique_combination_int_run_gpu_hour_costs_"))
    run_mart = next(k for k in day6 if k.startswith("unique_combination_fct_run_gpu_hours_"))
    assert day6[states][0] == day6[mart][0] == day6[units][0] == "pass"
    assert day6[run_costs][0] == day6[run_mart][0] == "pass"
    for name in (states, mart, run_costs, run_mart):
        assert f"(day_epoch >= {_epoch(_day(1))})" in day6[name][1], name
    assert f"(day_epoch >= {_epoch(_day(6))})" in day6[units][1]
    for name in (landed, day_model, states, mart, units, run_costs, run_mart):
        assert full[name][0] == "pass"
        assert "dbt_subquery" not in full[name][1], name
