"""Every sacct sample in shared/samples/slurm ingested: allocations, GPUs and GPU-hours checked
against numbers computed from the file itself (a stdlib-only reading, below) and pinned; the
Open XDMoD expected parses compared field by field wherever both define the field."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from slurm_sample_columns import HB_COLUMNS, LEGACY_COLUMNS

from ingest.core.errors import IngestError
from ingest.scheduler.slurm import (
    DEFAULT_COLUMNS,
    STATES,
    mem_from_tres,
    parse_memory,
    parse_sacct,
    parse_timelimit,
    read_sacct,
)

# file → (reader options, allocations, GPUs, GPU-seconds, rows quarantined)
SAMPLES: dict[str, tuple[dict[str, Any], int, int, int, int]] = {
    "hb-jobinfo-sacct-snowman-delim-gpu-steps.txt": (
        {"delimiter": "☃", "columns": HB_COLUMNS},
        100,
        16,
        793454,
        0,
    ),
    "xdmod-accounting-logs.log": ({}, 4, 2, 0, 0),
    "xdmod-accounting-logs-with-job-arrays.log": ({}, 6, 0, 0, 0),
    "xdmod-legacy-reqgres-accounting-logs-with-gpu-gres.log": (
        {"columns": LEGACY_COLUMNS},
        24,
        232,
        232,
        0,
    ),
    "xdmod-non-ended-job-state.log": ({}, 2, 0, 0, 0),
    "xdmod-referencedata-phillips-first2000.log": ({}, 2000, 2, 1824852, 0),
    "xdmod-unknown-job-state.log": ({}, 0, 0, 0, 2),
    "xdmod-utf8-multibyte-chars.log": ({}, 1, 0, 0, 0),
}
NOT_SACCT = {"hb-jobinfo-scontrol-show-nodes.txt"}


# --------------------------------------------------------------------------- stdlib oracle


def _oracle_elapsed(text: str) -> int:
    days, _, rest = text.rpartition("-")
    parts = [int(p) for p in rest.split(".")[0].split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    h, m, s = parts
    return int(days or 0) * 86400 + h * 3600 + m * 60 + s


def _oracle_gpus(rec: dict[str, str]) -> int:
    tres = rec.get("alloctres", "") or rec.get("reqtres", "")
    if tres:
        untyped = re.findall(r"(?:^|,)gres/gpu=(\d+)", tres)
        if untyped:
            return int(untyped[0])
        return sum(int(n) for n in re.findall(r"(?:^|,)gres/gpu:[^=,]+=(\d+)", tres))
    gres = rec.get("reqgres", "")
    return sum(int(n) for n in re.findall(r"(?:^|,)gpu(?::[^:,(]+)?:(\d+)", gres))


def oracle(path: Path, options: dict[str, Any]) -> tuple[int, int, int]:
    """Allocations, GPUs and GPU-seconds of a sacct file, read with str.split alone: steps
    (JobID with a dot) and rows in unknown states are not allocations."""
    delim = options.get("delimiter", "|")
    columns = [c.lower() for c in options.get("columns", DEFAULT_COLUMNS)]
    allocations = gpus = gpu_seconds = 0
    for line in path.read_bytes().decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        fields = line.split(delim)
        if len(fields) == len(columns) + 1:
            fields = fields[:-1]
        rec = dict(zip(columns, fields, strict=True))
        if "." in rec["jobid"] or rec["state"].split()[0].rstrip("+") not in STATES:
            continue
        n = _oracle_gpus(rec)
        allocations += 1
        gpus += n
        gpu_seconds += n * _oracle_elapsed(rec["elapsed"])
    return allocations, gpus, gpu_seconds


# --------------------------------------------------------------------------- every sample


def test_the_table_covers_every_sample(samples: Path) -> None:
    files = {p.name for p in (samples / "slurm").iterdir() if p.is_file()}
    assert files == set(SAMPLES) | NOT_SACCT


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_allocations_gpus_gpu_hours(samples: Path, name: str) -> None:
    options, allocations, gpus, gpu_seconds, quarantined = SAMPLES[name]
    path = samples / "slurm" / name
    assert oracle(path, options) == (allocations, gpus, gpu_seconds)
    r = read_sacct(path, source="s", options=options)
    assert r.rows.height == allocations
    assert r.quarantine.height == quarantined
    assert r.rows["gpus"].sum() == gpus
    got_seconds = (r.rows["gpus"] * r.rows["elapsed_seconds"]).sum()
    assert got_seconds == gpu_seconds
    assert got_seconds / 3600 == gpu_seconds / 3600  # GPU-hours
    assert r.rows["x_line_number"].is_unique().all()


def test_scontrol_sample_is_rejected_as_a_file(samples: Path) -> None:
    path = samples / "slurm/hb-jobinfo-scontrol-show-nodes.txt"
    with pytest.raises(IngestError, match=r"line 1: expected 26 fields, found 1"):
        read_sacct(path, source="s")


# --------------------------------------------------------------------------- xdmod expected


def _epoch(dt: datetime | None) -> int | None:
    return None if dt is None else int(dt.timestamp())


def test_xdmod_expected_fields_agree(samples: Path) -> None:
    """Every field the Open XDMoD shredder output and `slurm_jobs` both define agrees; their
    cluster name is a setting of their test (option `cluster`), not data of the file."""
    expected = json.loads(
        (samples / "slurm/expected/xdmod-accounting-logs.expected.json").read_text()
    )
    r = read_sacct(
        samples / "slurm/xdmod-accounting-logs.log",
        source="x",
        options={"cluster": expected[0]["cluster_name"]},
    )
    ours_by_field = {
        "job_id": lambda r: r["job_id"],
        "job_id_raw": lambda r: r["job_id_raw"],
        "job_array_index": lambda r: -1 if r["array_task_id"] is None else r["array_task_id"],
        "cluster_name": lambda r: r["cluster"],
        "partition_name": lambda r: r["partition"] or "",
        "qos_name": lambda r: r["qos"],
        "account_name": lambda r: r["account"],
        "group_name": lambda r: r["group_name"],
        "gid_number": lambda r: str(r["gid"]),
        "user_name": lambda r: r["user_name"],
        "uid_number": lambda r: str(r["uid"]),
        "submit_time": lambda r: _epoch(r["submit"]),
        "eligible_time": lambda r: _epoch(r["eligible"]),
        "start_time": lambda r: _epoch(r["start"]),
        "end_time": lambda r: _epoch(r["end"]),
        "elapsed": lambda r: r["elapsed_seconds"],
        "exit_code": lambda r: f"{r['exit_code']}:{r['exit_signal']}",
        "state": lambda r: r["state"] + (f" by {r['cancelled_by']}" if r["cancelled_by"] else ""),
        "nnodes": lambda r: str(r["nnodes"]),
        "ncpus": lambda r: str(r["ncpus"]),
        "req_cpus": lambda r: str(r["req_cpus"]),
        "req_mem": lambda r: r["req_mem"],
        "req_tres": lambda r: r["req_tres"] or "",
        "alloc_tres": lambda r: r["alloc_tres"] or "",
        "timelimit": lambda r: r["timelimit_seconds"],
        "node_list": lambda r: r["nodelist"],
        "job_name": lambda r: r["job_name"],
        "ngpus": lambda r: r["gpus"],
    }
    assert set(ours_by_field) == set(expected[0])  # every field of theirs is compared
    assert r.rows.height == len(expected)
    for row, exp in zip(r.rows.iter_rows(named=True), expected, strict=True):
        assert {k: f(row) for k, f in ours_by_field.items()} == exp


def test_xdmod_expected_array_task_lists(samples: Path) -> None:
    expected = json.loads(
        (samples / "slurm/expected/xdmod-accounting-logs-with-job-arrays.expected.json").read_text()
    )
    r = read_sacct(samples / "slurm/xdmod-accounting-logs-with-job-arrays.log", source="x")
    assert r.rows["array_task_ids"].to_list() == expected
    # a started task has its own index; an unstarted range is one row listing its tasks
    assert r.rows["array_task_id"].to_list() == [100, None, None, None, None, None]
    assert r.rows["array_job_id"].unique().to_list() == ["4103947"]


def test_xdmod_expected_skips_are_quarantined_or_kept(samples: Path) -> None:
    # unknown states: the shredder warns and skips; we quarantine with the reason
    exp = json.loads((samples / "slurm/expected/xdmod-unknown-job-state.expected.json").read_text())
    assert all(e["warning"] == ["/^Found job with unknown state/"] for e in exp)
    r = read_sacct(samples / "slurm/xdmod-unknown-job-state.log", source="x")
    assert r.rows.height == 0
    assert r.quarantine["reason"].to_list() == ["unknown state 'FOO'", "unknown state 'BAR'"]
    # non-ended jobs: the shredder skips them (it only loads finished jobs); the warehouse keeps
    # running and pending runs (DESIGN: open runs and queue metrics), so they are landed as is
    exp = json.loads(
        (samples / "slurm/expected/xdmod-non-ended-job-state.expected.json").read_text()
    )
    assert len(exp) == 2
    r = read_sacct(samples / "slurm/xdmod-non-ended-job-state.log", source="x")
    assert r.rows["state"].to_list() == ["RUNNING", "PENDING"]
    # utf-8 job name
    exp = json.loads(
        (samples / "slurm/expected/xdmod-utf8-multibyte-chars.expected.json").read_text()
    )
    r = read_sacct(samples / "slurm/xdmod-utf8-multibyte-chars.log", source="x")
    assert r.rows["job_name"].to_list() == [e["job_name"] for e in exp]


def test_xdmod_alloc_tres_pairs(samples: Path) -> None:
    pairs = json.loads((samples / "slurm/expected/xdmod-alloc-tres-gpu-count.json").read_text())
    text = "\n".join(
        f"{i}|{i}|c|p|q|a|g|1|u|1|2024-01-01T00:00:00|2024-01-01T00:00:00|"
        f"2024-01-01T00:00:00|2024-01-01T01:00:00|01:00:00|0:0|COMPLETED|1|1|1|1G||{tres}|"
        "01:00:00|n1|j"
        for i, (tres, _) in enumerate(pairs, start=1)
    )
    r = parse_sacct(text, source="s", file="f")
    assert r.rows["gpus"].to_list() == [n for _, n in pairs]


# --------------------------------------------------------------------------- each rule


def test_elapsed_with_days_unknown_times_none_assigned_cancelled_by(samples: Path) -> None:
    r = read_sacct(
        samples / "slurm/hb-jobinfo-sacct-snowman-delim-gpu-steps.txt",
        source="hb",
        options={"delimiter": "☃", "columns": HB_COLUMNS},
    )

    def job(jid: str) -> dict[str, Any]:
        return r.rows.filter(pl.col("job_id") == jid).row(0, named=True)

    j = job("4046412")  # Elapsed 22:26:39, Timelimit 1-05:50:00, CANCELLED by 10304007
    assert (j["elapsed_seconds"], j["timelimit_seconds"]) == (80799, 107400)
    assert (j["state"], j["cancelled_by"]) == ("CANCELLED", 10304007)
    j = job("6708912")  # Elapsed 3-00:00:25
    assert j["elapsed_seconds"] == 3 * 86400 + 25
    j = job("4047445")  # Start `None`, NodeList `None assigned`
    assert (j["start"], j["nodelist"], j["hosts"]) == (None, "None assigned", [])
    assert job("8322514_33")["end"] is None  # RUNNING: End `Unknown`
    assert (r.rows["hosts"].list.len() == 0).sum() == 10
    r = read_sacct(samples / "slurm/xdmod-referencedata-phillips-first2000.log", source="p")
    assert r.rows["elapsed_seconds"].max() == 10 * 86400 + 13 * 3600 + 27 * 60 + 6
    assert r.rows.filter(pl.col("job_id") == r.rows["job_id"][0])["timelimit_seconds"][0] == (
        37 * 86400 + 14 * 3600
    )


def test_steps_fold_into_their_allocation(samples: Path) -> None:
    r = read_sacct(
        samples / "slurm/hb-jobinfo-sacct-snowman-delim-gpu-steps.txt",
        source="hb",
        options={"delimiter": "☃", "columns": HB_COLUMNS},
    )
    assert r.rows["step_count"].sum() == 142
    assert r.warnings == []
    j = r.rows.filter(pl.col("job_id") == "7818766").row(0, named=True)
    # 7818766.batch, .extern, .0 — MaxRSS of the steps: the largest wins
    assert (j["step_count"], j["max_rss_mib"]) == (3, 53592 / 1024)
    j = r.rows.filter(pl.col("job_id") == "7216821_144").row(0, named=True)
    assert j["step_count"] == 2
    # 142 step lines of 64 allocations; the other 36 were printed without steps
    assert r.rows.filter(pl.col("step_count") > 0).height == 64


def test_memory_suffixes(samples: Path) -> None:
    assert parse_memory("3000Mc") == (3000.0, "cpu")
    assert parse_memory("48000Mn") == (48000.0, "node")
    assert parse_memory("0n") == (0.0, "node")
    assert parse_memory("199G") == (199 * 1024.0, None)
    assert parse_memory("80K") == (80 / 1024, None)
    assert parse_memory("2T") == (2 * 1024.0**2, None)
    assert parse_memory("4000") == (4000.0, None)
    assert mem_from_tres("billing=256,cpu=256,mem=3000M,node=32") == 3000.0
    assert mem_from_tres("cpu=8,mem=125G,node=1") == 128000.0
    assert mem_from_tres("cpu=8") is None
    assert parse_timelimit("UNLIMITED") is None
    assert parse_timelimit("Partition_Limit") is None
    assert parse_timelimit("14:20:00") == 51600
    with pytest.raises(ValueError):
        parse_memory("lots")
    r = read_sacct(samples / "slurm/xdmod-accounting-logs.log", source="x")
    assert r.rows.select("req_mem", "req_mem_mib", "req_mem_per", "alloc_mem_mib").rows() == [
        ("3000Mc", 3000.0, "cpu", 3000.0),
        ("48000Mn", 48000.0, "node", 48000.0),
        ("3000Mc", 3000.0, "cpu", 144000.0),
        ("0n", 0.0, "node", None),
    ]
    r = read_sacct(samples / "slurm/xdmod-referencedata-phillips-first2000.log", source="p")
    assert r.rows["req_mem_per"].unique().to_list() == ["node"]
    assert r.rows["req_mem_mib"].max() == 2147486648.0  # the overflowed value, as printed


def test_non_utf8_bytes_in_names(samples: Path, tmp_path: Path) -> None:
    """Issue 11, finding 9c: bytes that are not UTF-8 were replaced silently. Now the lines
    that carry them are quarantined (file, line, the bytes escaped) and the other rows land;
    a source that declares the file's encoding (option `encoding`) lands every row."""
    raw = (samples / "slurm/xdmod-accounting-logs.log").read_bytes()
    bad = tmp_path / "latin1.log"
    # a Latin-1 job name and account (é = 0xe9) on the file's lines 3 and 4
    bad.write_bytes(raw.replace(b"anonjobname", b"caf\xe9-run").replace(b"|ccr|", b"|\xe9cr|"))
    r = read_sacct(bad, source="x")
    assert r.rows["x_line_number"].to_list() == [1, 2]
    assert r.quarantine.select("x_source_file", "x_line_number", "reason").rows() == [
        (str(bad), 3, "invalid UTF-8 bytes \\xe9 in the line"),
        (str(bad), 4, "invalid UTF-8 bytes \\xe9 in the line"),
    ]
    assert "caf\\xe9-run" in r.quarantine["raw"][0]
    r = read_sacct(bad, source="x", options={"encoding": "latin-1"})
    assert (r.rows.height, r.quarantine.height) == (4, 0)
    assert r.rows["job_name"][2] == "café-run"
    assert r.rows["account"][3] == "écr"


# --------------------------------------------------------------------------- small inputs


HEADER = (
    "JobID|JobIDRaw|Cluster|Partition|Account|User|Submit|Eligible|Start|End|Elapsed|ExitCode|"
    "State|NNodes|NCPUS|ReqMem|ReqTRES|AllocTRES|NodeList|JobName|MaxRSS"
)


def _line(
    job: str,
    raw: str,
    start: str,
    end: str,
    elapsed: str,
    state: str,
    alloc: str = "billing=8,gres/gpu:h100=8,gres/gpu=8,mem=512G",
    rss: str = "",
) -> str:
    return (
        f"{job}|{raw}|c1|gpu|ml|ann|2024-07-01T08:00:00|2024-07-01T08:00:00|{start}|{end}|"
        f"{elapsed}|0:0|{state}|1|32|512G|gres/gpu=8|{alloc}|gpu-a01|train|{rss}"
    )


def test_requeued_duplicates_are_separate_runs_with_their_steps() -> None:
    text = "\n".join(
        [
            HEADER,
            # first attempt: node failure, requeued (sacct --duplicates prints it)
            _line("700", "700", "2024-07-01T09:00:00", "2024-07-01T10:00:00", "01:00:00",
                  "REQUEUED"),
            _line("700.batch", "700.batch", "2024-07-01T09:00:00", "2024-07-01T10:00:00",
                  "01:00:00", "CANCELLED", alloc="cpu=32", rss="1000M"),
            _line("700.extern", "700.extern", "2024-07-01T09:00:00", "2024-07-01T10:00:00",
                  "01:00:00", "COMPLETED", alloc="cpu=32", rss="4K"),
            # second attempt
            _line("700", "700", "2024-07-01T10:30:00", "2024-07-01T12:30:00", "02:00:00",
                  "COMPLETED"),
            _line("700.batch", "700.batch", "2024-07-01T10:30:00", "2024-07-01T12:30:00",
                  "02:00:00", "COMPLETED", alloc="cpu=32", rss="2G"),
            _line("700.extern", "700.extern", "2024-07-01T10:30:00", "2024-07-01T12:30:00",
                  "02:00:00", "COMPLETED", alloc="cpu=32"),
            _line("700.0", "700.0", "2024-07-01T10:31:00", "2024-07-01T12:30:00",
                  "01:59:00", "COMPLETED", alloc="cpu=32", rss="3G"),
        ]
    )  # fmt: skip
    r = parse_sacct(text, source="s", file="f")
    assert r.rows.select(
        "job_id", "job_id_raw", "state", "start", "gpus", "elapsed_seconds", "step_count",
        "max_rss_mib",
    ).rows() == [
        ("700", "700", "REQUEUED", datetime(2024, 7, 1, 9, tzinfo=UTC), 8, 3600, 2, 1000.0),
        ("700", "700", "COMPLETED", datetime(2024, 7, 1, 10, 30, tzinfo=UTC), 8, 7200, 3, 3072.0),
    ]  # fmt: skip
    assert r.rows["alloc_mem_mib"].to_list() == [524288.0, 524288.0]
    gpu_hours = (r.rows["gpus"] * r.rows["elapsed_seconds"]).sum() / 3600
    assert gpu_hours == 24.0


def test_het_jobs_array_throttle_and_orphan_steps() -> None:
    text = "\n".join(
        [
            HEADER,
            _line("800+0", "800", "2024-07-01T09:00:00", "2024-07-01T10:00:00", "01:00:00",
                  "COMPLETED", alloc="gres/gpu:a100=2"),
            _line("800+1", "801", "2024-07-01T09:00:00", "2024-07-01T10:00:00", "01:00:00",
                  "COMPLETED", alloc="cpu=4"),
            _line("800+0.0", "800.0", "2024-07-01T09:00:00", "2024-07-01T10:00:00", "01:00:00",
                  "COMPLETED", alloc="cpu=4"),
            _line("900_[3-5,9%2]", "900", "Unknown", "Unknown", "00:00:00", "PENDING", alloc=""),
            _line("901.batch", "901.batch", "2024-07-01T09:00:00", "2024-07-01T10:00:00",
                  "01:00:00", "COMPLETED", alloc="cpu=4"),
            _line("902_[x-y]", "902", "Unknown", "Unknown", "00:00:00", "PENDING", alloc=""),
        ]
    )  # fmt: skip
    r = parse_sacct(text, source="s", file="f")
    assert r.rows.select(
        "job_id", "het_job_id", "het_job_offset", "gpus", "array_job_id", "array_task_ids",
        "step_count",
    ).rows() == [
        ("800+0", "800", 0, 2, None, None, 1),
        ("800+1", "800", 1, 0, None, None, 0),
        ("900_[3-5,9%2]", None, None, 8, "900", [3, 4, 5, 9], 0),
    ]  # fmt: skip
    assert [str(w) for w in r.warnings] == [
        "f: 1 step lines follow no landed allocation line of their job (they are not landed)"
    ]
    assert [(f.check, f.severity, f.count) for f in r.warnings] == [
        ("step_lines_without_allocation", "warning", 1)
    ]
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (7, "unparseable array range in JobID '902_[x-y]': bad range 'x-y'")
    ]
