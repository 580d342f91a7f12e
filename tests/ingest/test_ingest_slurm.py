from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pytest
from slurm_sample_columns import HB_COLUMNS, LEGACY_COLUMNS

from ingest.core.errors import IngestError
from ingest.core.landing import polars_schema
from ingest.scheduler.slurm import expand_hostlist, parse_elapsed, parse_sacct, read_sacct
from ingest.scheduler.slurm_events import parse_node_events
from ingest.scheduler.slurm_fields import _expand_ranges
from ingest.scheduler.slurm_gres import GpuRequest, gpu_request_from_gres, gpu_request_from_tres


def epoch(dt: datetime | None) -> int | None:
    return None if dt is None else int(dt.timestamp())


# --------------------------------------------------------------------------- helpers


def test_field_parsers() -> None:
    assert parse_elapsed("3-00:00:00") == 259200
    assert parse_elapsed("1-04:33:44") == 102824
    assert parse_elapsed("03:34:13") == 12853
    assert parse_elapsed("05:30") == 330
    assert parse_elapsed("23:08.358") == 1388
    with pytest.raises(ValueError):
        parse_elapsed("soon")
    assert expand_hostlist("gpu-a[01-03,07],gpu-b1") == [
        "gpu-a01",
        "gpu-a02",
        "gpu-a03",
        "gpu-a07",
        "gpu-b1",
    ]
    assert expand_hostlist("r[1-2]n[08-09]") == ["r1n08", "r1n09", "r2n08", "r2n09"]
    assert expand_hostlist("None assigned") == []
    with pytest.raises(ValueError):
        expand_hostlist("gpu-a[01-03")
    tres = "billing=8,cpu=8,gres/gpu:v100=1,gres/gpu=1,mem=10G,node=1"
    assert gpu_request_from_tres(tres) == GpuRequest(1)
    assert gpu_request_from_tres("gres/gpu:a100=2,gres/gpu:v100=1") == GpuRequest(3)
    assert gpu_request_from_tres("cpu=1,gres/gpumem=20500736K,gres/gpuutil=90") is None
    assert gpu_request_from_gres("bandwidth:4G,gpu:P100:2(IDX:1,3),hbm:0") == GpuRequest(2)
    assert gpu_request_from_gres("gpu:0(IDX:N/A)") == GpuRequest(0)
    assert gpu_request_from_gres("hbm:0") is None


def test_xdmod_alloc_tres_gpu_counts(samples: Path) -> None:
    pairs = json.loads((samples / "slurm/expected/xdmod-alloc-tres-gpu-count.json").read_text())
    assert len(pairs) == 9
    for tres, n in pairs:
        request = gpu_request_from_tres(tres)
        assert (request.whole if request else 0) == n, tres


def test_xdmod_array_ranges(samples: Path) -> None:
    expected = json.loads(
        (samples / "slurm/expected/xdmod-accounting-logs-with-job-arrays.expected.json").read_text()
    )
    r = read_sacct(samples / "slurm/xdmod-accounting-logs-with-job-arrays.log", source="x")
    assert r.quarantine.height == 0
    assert r.rows["job_id"].to_list() == [
        "4103947_100",
        "4103947_[1-3]",
        "4103947_[1,5]",
        "4103947_[9-11,20]",
        "4103947_[91,100-102]",
        "4103947_[9-11,13,16-20]",
    ]
    assert r.rows["array_job_id"].to_list() == ["4103947"] * 6
    # a started task has its index; an unstarted range stays one pending row
    assert r.rows["array_task_id"].to_list() == [100, None, None, None, None, None]
    ranges = [[100]] + [
        [int(i) for i in _expand_ranges(j.split("[")[1].rstrip("]"))] for j in r.rows["job_id"][1:]
    ]
    assert ranges == expected
    assert r.rows["hosts"].list.len().to_list() == [32] * 6


# --------------------------------------------------------------------------- real files


def test_xdmod_accounting_logs_match_expected(samples: Path) -> None:
    expected = json.loads(
        (samples / "slurm/expected/xdmod-accounting-logs.expected.json").read_text()
    )
    r = read_sacct(
        samples / "slurm/xdmod-accounting-logs.log",
        source="x",
        options={"cluster": "testresource"},
    )
    assert r.rows.schema == polars_schema("slurm_jobs")
    assert r.quarantine.height == 0
    assert r.rows.height == len(expected) == 4
    for row, exp in zip(r.rows.iter_rows(named=True), expected, strict=True):
        state = row["state"] + (f" by {row['cancelled_by']}" if row["cancelled_by"] else "")
        got = {
            "job_id": row["job_id"],
            "job_id_raw": row["job_id_raw"],
            "job_array_index": -1 if row["array_task_id"] is None else row["array_task_id"],
            "cluster_name": row["cluster"],
            "partition_name": row["partition"] or "",
            "qos_name": row["qos"],
            "account_name": row["account"],
            "group_name": row["group_name"],
            "user_name": row["user_name"],
            "submit_time": epoch(row["submit"]),
            "eligible_time": epoch(row["eligible"]),
            "start_time": epoch(row["start"]),
            "end_time": epoch(row["end"]),
            "elapsed": row["elapsed_seconds"],
            "exit_code": f"{row['exit_code']}:{row['exit_signal']}",
            "state": state,
            "nnodes": str(row["nnodes"]),
            "ncpus": str(row["ncpus"]),
            "req_tres": row["req_tres"] or "",
            "alloc_tres": row["alloc_tres"] or "",
            "node_list": row["nodelist"],
            "job_name": row["job_name"],
            "ngpus": row["gpus"],
        }
        assert got == {k: exp[k] for k in got}, row["job_id"]
    first = r.rows.row(0, named=True)
    assert len(first["hosts"]) == 32
    assert first["hosts"][:2] == ["d07n07s02", "d07n19s02"]
    assert first["hosts"][-5:] == ["d13n03", "d13n05", "d13n07", "d13n08", "d13n16"]
    assert r.rows["x_line_number"].to_list() == [1, 2, 3, 4]


def test_xdmod_unknown_and_non_ended_states(samples: Path) -> None:
    r = read_sacct(samples / "slurm/xdmod-unknown-job-state.log", source="x")
    assert r.rows.height == 0
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (1, "unknown state 'FOO'"),
        (2, "unknown state 'BAR'"),
    ]
    assert r.quarantine["raw"][0].startswith("3451067|3451067|phillips|")
    r = read_sacct(samples / "slurm/xdmod-non-ended-job-state.log", source="x")
    assert r.rows.select("job_id", "state", "start", "end").rows() == [
        (
            "3451067",
            "RUNNING",
            datetime(2020, 6, 30, 19, 24, 8, tzinfo=UTC),
            datetime(2020, 6, 30, 19, 24, 8, tzinfo=UTC),
        ),
        ("3483276", "PENDING", None, datetime(2020, 7, 1, 15, 28, 17, tzinfo=UTC)),
    ]
    # a pending job: AllocTRES is empty, ReqTRES has no GPU
    assert r.rows["gpus"].to_list() == [0, 0]
    assert r.rows["alloc_tres"][1] is None


def test_xdmod_utf8_and_invalid_bytes(samples: Path, tmp_path: Path) -> None:
    expected = json.loads(
        (samples / "slurm/expected/xdmod-utf8-multibyte-chars.expected.json").read_text()
    )
    r = read_sacct(samples / "slurm/xdmod-utf8-multibyte-chars.log", source="x")
    assert r.rows["job_name"].to_list() == [e["job_name"] for e in expected] == ["aàb"]
    raw = (samples / "slurm/xdmod-utf8-multibyte-chars.log").read_bytes()
    bad = tmp_path / "bad.log"
    bad.write_bytes(raw.replace("à".encode(), b"\xff\xfe"))
    r = read_sacct(bad, source="x")  # quarantined with the bytes escaped, never replaced
    assert r.rows.height == 0
    assert r.quarantine["reason"].to_list() == ["invalid UTF-8 bytes \\xff in the line"]


def test_xdmod_phillips_reference_data(samples: Path) -> None:
    r = read_sacct(samples / "slurm/xdmod-referencedata-phillips-first2000.log", source="x")
    assert r.rows.height == 2000
    assert r.quarantine.height == 0
    assert dict(r.rows.group_by("state").len().iter_rows()) == {
        "CANCELLED": 1,
        "COMPLETED": 549,
        "FAILED": 1449,
        "TIMEOUT": 1,
    }
    assert r.rows["gpus"].sum() == 2
    first = r.rows.row(0, named=True)
    assert (first["gpus"], first["elapsed_seconds"], first["cancelled_by"]) == (2, 912426, 380693)
    assert r.rows["hosts"][1].to_list() == [
        "cpn-f13-03-01",
        "cpn-f13-03-02",
        "cpn-f13-04-01",
        "cpn-f13-04-02",
        "cpn-f13-05-01",
        "cpn-f13-05-02",
        "cpn-f13-06-01",
        "cpn-f13-06-02",
    ]
    assert r.rows["cluster"].unique().to_list() == ["phillips"]


def test_xdmod_legacy_layout_with_reqgres(samples: Path) -> None:
    r = read_sacct(
        samples / "slurm/xdmod-legacy-reqgres-accounting-logs-with-gpu-gres.log",
        source="x",
        options={"columns": LEGACY_COLUMNS},
    )
    assert r.quarantine.height == 0
    assert r.rows["gpus"].to_list() == [
        0, 1, 2, 16, 20, 128, 0, 1, 2, 32, 4, 4, 4, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    ]  # fmt: skip
    assert r.rows["qos"].null_count() == 24
    assert r.rows["hosts"][0].to_list() == [f"node0{i}" for i in range(1, 9)]
    # with the default (newer) column order the same file is misread: 26 fields either way,
    # so only the declared layout can fix it
    assert (
        read_sacct(
            samples / "slurm/xdmod-legacy-reqgres-accounting-logs-with-gpu-gres.log", source="x"
        ).quarantine.height
        == 24
    )


def test_hb_jobinfo_snowman_delimiter(samples: Path) -> None:
    r = read_sacct(
        samples / "slurm/hb-jobinfo-sacct-snowman-delim-gpu-steps.txt",
        source="hb",
        options={"delimiter": "☃", "columns": HB_COLUMNS, "cluster": "habrok"},
        snapshot_date=date(2024, 4, 19),
    )
    # 242 lines: 100 allocations and 142 steps (.batch/.extern/.N)
    assert r.quarantine.height == 0
    assert r.rows.height == 100
    assert r.rows["array_task_id"].is_not_null().sum() == 24
    assert (r.rows["state"] == "PENDING").sum() == 7
    assert r.rows["cancelled_by"].is_not_null().sum() == 8
    assert (r.rows["hosts"].list.len() == 0).sum() == 10  # `None assigned`
    assert r.rows["gpus"].sum() == 16
    assert (r.rows["gpus"] > 0).sum() == 11
    assert set(r.rows["cluster"]) == {"habrok"}
    assert set(r.rows["x_snapshot_date"]) == {date(2024, 4, 19)}

    def job(jid: str) -> dict:
        return r.rows.filter(pl.col("job_id") == jid).row(0, named=True)

    assert job("7971484")["gpus"] == 4
    assert job("7971484")["hosts"] == ["a100gpu2", "a100gpu4"]
    j = job("7965768")  # gres/gpu:v100=1 and gres/gpu=1 count once
    assert (j["gpus"], j["state"], j["cancelled_by"], j["elapsed_seconds"]) == (
        1,
        "CANCELLED",
        10314909,
        55702,
    )
    assert j["job_id_raw"] == "7965768"
    assert job("8323312")["gpus"] == 1  # pending: from ReqTRES
    j = job("4047445")  # Start `None`
    assert (j["start"], j["hosts"], j["nodelist"]) == (None, [], "None assigned")
    j = job("5908801_3")
    assert (j["array_job_id"], j["array_task_id"], j["job_id_raw"]) == ("5908801", 3, None)
    assert job("8322514_33")["end"] is None  # RUNNING, End Unknown
    assert j["exit_code"] is None  # the file has no ExitCode column


# --------------------------------------------------------------------------- small inputs


HEADER = (
    "JobID|JobIDRaw|Cluster|Partition|Account|User|Submit|Eligible|Start|End|Elapsed|ExitCode|"
    "State|NNodes|NCPUS|ReqTRES|AllocTRES|NodeList|JobName|"
)


def test_header_steps_het_timezone_and_quarantine() -> None:
    lines = [
        HEADER,
        "300_4|301|c1|gpu|ml|ann|2024-07-01T11:00:00|2024-07-01T11:00:00|2024-07-01T12:00:00|"
        "2024-07-01T13:30:00|01:30:00|0:0|COMPLETED|2|16|gres/gpu=8|"
        "billing=16,gres/gpu:h100=8,gres/gpu=8|gpu-a[01-02]|train|",
        "300_4.batch|301.batch|c1||||2024-07-01T12:00:00|2024-07-01T12:00:00|2024-07-01T12:00:00|"
        "2024-07-01T13:30:00|01:30:00|0:0|COMPLETED|1|8||cpu=8|gpu-a01|batch|",
        "300_4.extern|301.extern|c1||||2024-07-01T12:00:00|2024-07-01T12:00:00|"
        "2024-07-01T12:00:00|2024-07-01T13:30:00|01:30:00|0:0|COMPLETED|2|16||cpu=16|"
        "gpu-a[01-02]|extern|",
        "400+0|400|c1|gpu|ml|bob|2024-07-01T11:00:00|Unknown|2024-07-01T12:00:00|Unknown|"
        "00:10|0:15|CANCELLED+|1|4||gres/gpu:a100=1,gres/gpu:v100=2|gpu-b1|het|",
        "400+1|401|c1|gpu|ml|bob|2024-07-01T11:00:00|Unknown|yesterday|Unknown|"
        "00:10|0:0|RUNNING|1|4|||gpu-b2|het|",
        "500|500|c1|gpu|ml|bob|too|few|fields|",
        "",
    ]
    r = parse_sacct(
        "\n".join(lines),
        source="s",
        file="sacct-2024-07-01.txt",
        options={"timezone": "Europe/Amsterdam", "cluster": "override"},
    )
    assert r.rows.select("job_id", "job_id_raw", "array_job_id", "array_task_id").rows() == [
        ("300_4", "301", "300", 4),
        ("400+0", "400", None, None),
    ]
    a, b = r.rows.iter_rows(named=True)
    assert a["start"] == datetime(2024, 7, 1, 10, tzinfo=UTC)  # CEST → UTC
    assert (a["gpus"], a["hosts"], a["elapsed_seconds"], a["cluster"]) == (
        8,
        ["gpu-a01", "gpu-a02"],
        5400,
        "override",
    )
    assert (b["state"], b["exit_code"], b["exit_signal"], b["gpus"]) == ("CANCELLED", 0, 15, 3)
    assert (b["eligible"], b["end"], b["elapsed_seconds"]) == (None, None, 10)
    assert r.rows["x_line_number"].to_list() == [2, 5]
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (6, "unparseable time in Start: 'yesterday'"),
        (7, "expected 19 fields, found 10"),
    ]


def test_snapshot_date_from_file_name(tmp_path: Path, samples: Path) -> None:
    f = tmp_path / "sacct-2015-06-30.txt"
    f.write_bytes((samples / "slurm/xdmod-accounting-logs.log").read_bytes())
    r = read_sacct(f, source="s")
    assert set(r.rows["x_snapshot_date"]) == {date(2015, 6, 30)}
    r = read_sacct(f, source="s", options={"snapshot_date": "2015-07-01"})
    assert set(r.rows["x_snapshot_date"]) == {date(2015, 7, 1)}
    assert read_sacct(f, source="s", snapshot_date=date(2015, 7, 2)).rows["x_snapshot_date"][
        0
    ] == date(2015, 7, 2)


def test_scontrol_file_is_not_sacct_output(samples: Path) -> None:
    # the other file in samples/slurm is `scontrol show -o nodes`, not sacct: no line has the
    # declared layout, so the file fails with its name, the line and the problem
    path = samples / "slurm/hb-jobinfo-scontrol-show-nodes.txt"
    with pytest.raises(IngestError) as err:
        read_sacct(path, source="x")
    assert str(err.value) == (
        f"{path}, line 1: expected 26 fields, found 1 (delimiter '|', 26 columns); "
        "check the source's delimiter/columns options"
    )
    # a file whose rows all break row rules (not the layout) is quarantined instead
    r = read_sacct(samples / "slurm/xdmod-unknown-job-state.log", source="x")
    assert [str(w) for w in r.warnings] == [
        f"{samples / 'slurm/xdmod-unknown-job-state.log'}: every row of the file was rejected "
        "(2 rows)"
    ]
    assert [(f.check, f.severity, f.count) for f in r.warnings] == [
        ("file_wholly_rejected", "warning", 2)
    ]


def test_impossible_time_is_quarantined_not_a_crash() -> None:
    """Issue 11, finding 7: `2026-11-29T25:61:00` matched the time pattern and then raised
    `ValueError: hour must be in 0..23` out of the reader, with no file or line and none of the
    file's good rows landed. Now the row goes to quarantine with the field and value."""
    good = (
        "600|600|c1|gpu|ml|ann|2026-11-29T10:00:00|2026-11-29T10:00:00|2026-11-29T11:00:00|"
        "2026-11-29T12:00:00|01:00:00|0:0|COMPLETED|1|8|gres/gpu=8|gres/gpu=8|gpu-a01|t|"
    )
    lines = [
        HEADER,
        good,
        good.replace("600|600", "601|601").replace("2026-11-29T12:00:00", "2026-11-29T25:61:00"),
        good.replace("600|600", "602|602").replace("2026-11-29T11:00:00", "2026-11-31T11:00:00"),
    ]
    r = parse_sacct("\n".join(lines), source="s", file="sacct-2026-11-29.txt")
    assert r.rows["job_id"].to_list() == ["600"]
    assert r.quarantine.select("x_source_file", "x_line_number", "reason").rows() == [
        (
            "sacct-2026-11-29.txt",
            3,
            "invalid time in End: '2026-11-29T25:61:00' (hour must be in 0..23)",
        ),
        (
            "sacct-2026-11-29.txt",
            4,
            "invalid time in Start: '2026-11-31T11:00:00' (day is out of range for month)",
        ),
    ]


def test_impossible_event_time_is_quarantined() -> None:
    text = (
        "NodeName|TimeStart|TimeEnd|State|Reason|User\n"
        "dgx-1|2026-11-29T10:00:00|2026-11-29T12:00:00|DOWN|xid 79|root\n"
        "dgx-2|2026-11-29T24:00:00|Unknown|DOWN|power|root\n"
    )
    r = parse_node_events(text, source="s", file="events.txt")
    assert r.rows["node"].to_list() == ["dgx-1"]
    (reason,) = r.quarantine["reason"].to_list()
    assert reason == "invalid time in TimeStart: '2026-11-29T24:00:00' (hour must be in 0..23)"
