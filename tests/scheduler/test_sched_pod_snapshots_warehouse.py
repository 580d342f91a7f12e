"""Issue 11, finding 5, in the marts: a later dump that lacks a pod's `status` (quarantined) or
its `startTime` never erases what the earlier dump said. Before, `int_runs__kubernetes` took
each pod's latest dump row whole, so the status-less day-2 item left the service with no start
and no GPU-hours on either day."""

from __future__ import annotations

from datetime import UTC, datetime, time
from pathlib import Path

import duckdb
from dbt_in_process import dbt_build
from mart_rows import rows
from pod_dumps import D1, D2, write_dumps

from fleetledger.config import Config, Source
from fleetledger.config_tables import record_accounted_days, write_config_tables
from ingest.registry import ingest_source


def test_a_bad_later_dump_keeps_both_days_gpu_seconds(tmp_path: Path) -> None:
    home = tmp_path / "home"
    source = Source(
        name="k",
        kind="kubernetes",
        location=str(write_dumps(tmp_path / "k8s")),
        options={"cluster": "gke"},
    )
    cfg = Config(sources=[source])
    write_config_tables(cfg, home)
    record_accounted_days(home, [D1, D2])
    ingest_source(cfg, source, [D1, D2], home)
    dbt_build(home, "+int_run_allocated_days", exclude="test_type:singular")

    # a day model: in the day models' own file (docs/operations.md)
    con = duckdb.connect(str(home / "build/history.duckdb"), read_only=True)
    got = rows(
        con,
        "select day_epoch, split_part(run_id, ':', 3) as job, allocated_gpu_seconds as s"
        " from intermediate.int_run_allocated_days order by day_epoch, job",
    )
    e1, e2 = (int(datetime.combine(d, time(), UTC).timestamp()) for d in (D1, D2))
    # running pods hold their GPUs to the end of the window (D2 + 1 day):
    # svc 8 GPUs all day both days = 8 x 86,400 = 691,200 s a day;
    # b 1 GPU from D1 12:00 = 43,200 s on D1, 86,400 s on D2 (its D2 status lacks startTime);
    # c 2 GPUs D2 06:00-18:00 = 2 x 43,200 = 86,400 s
    assert [(r["day_epoch"], r["job"], r["s"]) for r in got] == [
        (e1, "u-b", 43200),
        (e1, "u-svc", 691200),
        (e2, "u-b", 86400),
        (e2, "u-c", 86400),
        (e2, "u-svc", 691200),
    ]
