from __future__ import annotations

import gzip
import json
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError

from fleetledger.config import Config, Source
from ingest.core.errors import IngestError
from ingest.core.landing import SCHEMAS
from ingest.registry import ingest_source

D1, D2, D3 = date(2026, 11, 2), date(2026, 11, 3), date(2026, 11, 4)


def ms(d: date, hour: int) -> int:
    return int(datetime(d.year, d.month, d.day, hour, tzinfo=UTC).timestamp() * 1000)


def prom(host: str, stamps: list[int], sentinel: bool = False) -> str:
    out = [
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).",
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
    ]
    for t in stamps:
        for g in range(2):
            out.append(
                f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-{host}-{g}",Hostname="{host}"}} 50 {t}'
            )
    if sentinel:
        out.append(
            f'DCGM_FI_DEV_FB_USED{{gpu="0",UUID="GPU-{host}-0",Hostname="{host}"}} '
            f"9223372036854775794 {stamps[0]}"
        )
    out.append("DCGM_FI_DEV_FAN_SPEED 0")  # no GPU labels: quarantined
    return "\n".join(out) + "\n"


SACCT_HEADER = (
    "JobID|JobIDRaw|Cluster|Partition|Account|User|Submit|Start|End|Elapsed|State|AllocTRES|"
    "NodeList|JobName"
)


def sacct_line(job: str, start: str, gpus: int) -> str:
    return (
        f"{job}|{job}|c|gpu|ml|ann|{start}|{start}|Unknown|01:00:00|RUNNING|"
        f"cpu=8,gres/gpu={gpus}|gpu-a01|train"
    )


def build_fleet(root: Path) -> Config:
    (root / "dcgm" / D1.isoformat()).mkdir(parents=True)
    for host in ("n1", "n2"):
        data = prom(host, [ms(D1, 0), ms(D1, 1)], sentinel=host == "n1").encode()
        (root / "dcgm" / D1.isoformat() / f"{host}.prom.gz").write_bytes(gzip.compress(data))
    (root / "dcgm-all").mkdir()
    (root / "dcgm-all" / "n1.prom").write_text(prom("n1", [ms(D1, 23), ms(D2, 0), ms(D2, 1)]))

    (root / "sacct").mkdir()
    (root / "sacct" / f"sacct-{D1}.txt").write_text(
        "\n".join(
            [
                SACCT_HEADER,
                sacct_line("10", "2026-11-01T22:00:00", 8),
                sacct_line("11", "2026-11-02T01:00:00", 4),
                "12|12|c|broken",
            ]
        )
        + "\n"
    )
    (root / "sacct" / f"sacct-{D2}.txt").write_text(
        "\n".join([SACCT_HEADER, sacct_line("10", "2026-11-01T22:00:00", 8)]) + "\n"
    )
    (root / "power").mkdir()
    (root / "power" / f"power-{D1}.csv").write_text(
        "timestamp,site,meter,kind,kw\n"
        "2026-11-02T00:00:00Z,dc1,main,facility,100\n"
        "2026-11-02T00:00:00Z,dc1,pdu,it,80\n"
        "2026-11-02T00:01:00Z,dc1,pdu,other,80\n"
    )
    (root / "k8s").mkdir()
    pod = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "creationTimestamp": None},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]},
        "status": {"phase": "Running"},
    }
    (root / "k8s" / f"pods-{D1}.json").write_text(json.dumps({"kind": "List", "items": [pod]}))

    (root / "gcp").mkdir()
    rows = [
        {"invoice": {"month": "202610"}, "cost": 5.0, "usage_start_time": "2026-10-31T23:00:00Z"},
        {"invoice": {"month": "202611"}, "cost": 7.0, "usage_start_time": "2026-11-01T00:00:00Z"},
        {"invoice": {"month": "202611"}, "cost": 1.0, "credits": [{"amount": -0.5}]},
        {"invoice": {}, "cost": 1.0},
    ]
    (root / "gcp" / "export.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")

    cur = root / "cur" / "fleet-cur"
    (cur / "data" / "BILLING_PERIOD=2026-11").mkdir(parents=True)
    (cur / "metadata" / "BILLING_PERIOD=2026-11").mkdir(parents=True)
    pq.write_table(
        pa.table(
            {
                "line_item_unblended_cost": [1.0, 2.0],
                "resource_tags": pa.array(
                    [[("user_team", "a")], []], type=pa.map_(pa.string(), pa.string())
                ),
            }
        ),
        cur / "data" / "BILLING_PERIOD=2026-11" / "fleet-cur-00001.snappy.parquet",
    )
    (cur / "metadata" / "BILLING_PERIOD=2026-11" / "fleet-cur-Manifest.json").write_text(
        json.dumps(
            {
                "executionId": "e1",
                "dataFiles": [
                    "s3://bkt/cur2/fleet-cur/data/BILLING_PERIOD=2026-11/fleet-cur-00001.snappy.parquet"
                ],
            }
        )
    )
    return Config.model_validate(
        {
            "sources": [
                {"name": "dcgm-daily", "kind": "dcgm", "location": "dcgm/{date}/*.prom.gz"},
                {"name": "dcgm-all", "kind": "dcgm", "location": "dcgm-all/*.prom"},
                {
                    "name": "slurm",
                    "kind": "slurm",
                    "location": "sacct/*.txt",
                    "options": {"cluster": "onprem"},
                },
                {"name": "slurm-daily", "kind": "slurm", "location": "sacct/sacct-{date}.txt"},
                {"name": "power", "kind": "power", "location": "power/power-{date}.csv"},
                {"name": "pods", "kind": "kubernetes", "location": "k8s/pods-{date}.json"},
                {"name": "gcp", "kind": "gcp_billing", "location": "gcp/*.jsonl"},
                {"name": "aws", "kind": "aws_cur", "location": "cur/fleet-cur"},
                {"name": "kueue", "kind": "kueue", "location": "kueue/*.json"},
            ],
            "base_dir": root,
        }
    )


def parts(home: Path, table: str, source: str) -> dict[str, int]:
    base = home / "raw" / table / source
    return {
        p.name: pq.read_table(p / "part-0.parquet").num_rows
        for p in sorted(base.iterdir())
        if not p.name.startswith(".")
    }


def test_daily_dcgm_reingest_is_idempotent(tmp_path: Path) -> None:
    cfg = build_fleet(tmp_path / "fleet")
    home = tmp_path / "home"
    src = cfg.source("dcgm-daily")
    first = ingest_source(cfg, src, [D1, D2], home)
    assert (first.table, first.rows_landed, first.rows_quarantined, first.sentinels_dropped) == (
        "dcgm_samples",
        8,
        2,
        1,
    )
    assert first.partitions == [f"date={D1}", f"date={D2}"]
    assert len(first.files_read) == 2
    # D2 has no file: a gap (nothing was landed for it, so an empty partition stands for it)
    gaps = [f for f in first.findings if f.check == "missing_day"]
    assert [(f.day, f.severity) for f in gaps] == [(D2, "warning")]
    assert str(gaps[0]).startswith(f"no files for {D2}")
    assert parts(home, "dcgm_samples", "dcgm-daily") == {f"date={D1}": 8, f"date={D2}": 0}
    assert parts(home, "quarantine", "dcgm-daily") == {f"date={D1}": 2}
    second = ingest_source(cfg, src, [D1], home)
    assert second.rows_landed == 8
    assert parts(home, "dcgm_samples", "dcgm-daily") == {f"date={D1}": 8, f"date={D2}": 0}
    files = sorted(p.relative_to(home).as_posix() for p in (home / "raw").rglob("*.parquet"))
    assert files.count(f"raw/dcgm_samples/dcgm-daily/date={D1}/part-0.parquet") == 1
    # the source loses a file: the day is replaced, not merged
    (tmp_path / "fleet" / "dcgm" / D1.isoformat() / "n2.prom.gz").unlink()
    third = ingest_source(cfg, src, [D1], home)
    assert third.rows_landed == 4
    assert parts(home, "dcgm_samples", "dcgm-daily")[f"date={D1}"] == 4
    # an earlier version's write crashed after moving D1 aside and before moving the new D1 in:
    # the next ingest of the source moves the complete new partition in and says so
    d1 = home / "raw" / "dcgm_samples" / "dcgm-daily" / f"date={D1}"
    d1.rename(d1.with_name(f".tmp-date={D1}-0123456789ab"))
    fourth = ingest_source(cfg, src, [D2], home)
    assert [str(f) for f in fourth.findings if f.check == "crashed_write"] == [
        f"dcgm_samples/dcgm-daily/date={D1}: moved back in from a crashed write's "
        f".tmp-date={D1}-0123456789ab"
    ]
    assert parts(home, "dcgm_samples", "dcgm-daily")[f"date={D1}"] == 4
    # every table's schema file is there
    for table in SCHEMAS:
        assert (home / "raw" / table / "_schema" / "part-0.parquet").is_file()


def test_whole_locations_split_by_day(tmp_path: Path) -> None:
    cfg = build_fleet(tmp_path / "fleet")
    home = tmp_path / "home"
    r = ingest_source(cfg, cfg.source("dcgm-all"), [D1, D2], home)
    assert parts(home, "dcgm_samples", "dcgm-all") == {f"date={D1}": 2, f"date={D2}": 4}
    assert r.rows_quarantined == 1
    r = ingest_source(cfg, cfg.source("dcgm-all"), [D2], home)
    assert r.rows_landed == 4
    assert any("outside the requested partitions" in str(w) for w in r.warnings)

    r = ingest_source(cfg, cfg.source("slurm"), [D1, D2, D3], home)
    got = parts(home, "slurm_jobs", "slurm")
    assert got == {f"date={D1}": 2, f"date={D2}": 1, f"date={D3}": 0}
    assert parts(home, "quarantine", "slurm") == {f"date={D1}": 1}
    jobs = pl.read_parquet(home / "raw/slurm_jobs/slurm" / f"date={D1}" / "part-0.parquet")
    assert jobs.select("job_id", "gpus", "cluster", "x_snapshot_date").rows() == [
        ("10", 8, "onprem", D1),
        ("11", 4, "onprem", D1),
    ]
    r2 = ingest_source(cfg, cfg.source("slurm"), [D1, D2, D3], home)
    assert (r2.rows_landed, r2.rows_quarantined) == (r.rows_landed, r.rows_quarantined) == (3, 1)


def test_daily_slurm_power_pods(tmp_path: Path) -> None:
    cfg = build_fleet(tmp_path / "fleet")
    home = tmp_path / "home"
    r = ingest_source(cfg, cfg.source("slurm-daily"), [D2], home)
    jobs = pl.read_parquet(home / "raw/slurm_jobs/slurm-daily" / f"date={D2}" / "part-0.parquet")
    assert jobs.select("job_id", "x_snapshot_date").rows() == [("10", D2)]
    assert r.rows_landed == 1
    r = ingest_source(cfg, cfg.source("power"), [D1], home)
    assert (r.rows_landed, r.rows_quarantined) == (2, 1)
    q = pl.read_parquet(home / "raw/quarantine/power" / f"date={D1}" / "part-0.parquet")
    assert q.select("x_line_number", "reason").rows() == [
        (4, "kind must be facility or it, got other")
    ]
    r = ingest_source(cfg, cfg.source("pods"), [D1], home)
    pods = pl.read_parquet(home / "raw/k8s_pods/pods" / f"date={D1}" / "part-0.parquet")
    assert pods.select("uid", "gpus", "snapshot_at").rows() == [
        ("u1", 2, datetime(2026, 11, 2, 23, 59, 59, tzinfo=UTC))
    ]


def test_billing_periods(tmp_path: Path) -> None:
    cfg = build_fleet(tmp_path / "fleet")
    home = tmp_path / "home"
    r = ingest_source(cfg, cfg.source("gcp"), [D1, D2], home)
    assert r.partitions == ["period=2026-11"]
    assert (r.rows_landed, r.rows_quarantined) == (2, 1)
    lines = pl.read_parquet(home / "raw/gcp_billing_lines/gcp/period=2026-11/part-0.parquet")
    assert lines.select("cost", "credits_amount").rows() == [(7.0, 0.0), (1.0, -0.5)]
    r = ingest_source(cfg, cfg.source("gcp"), [date(2026, 10, 31)], home)
    assert (r.partitions, r.rows_landed) == (["period=2026-10"], 1)

    r = ingest_source(cfg, cfg.source("aws"), [D1, D2], home)
    assert (r.partitions, r.rows_landed) == (["period=2026-11"], 2)
    cur = pl.read_parquet(home / "raw/aws_cur_lines/aws/period=2026-11/part-0.parquet")
    assert cur.select("resource_tags", "x_execution_id", "x_billing_period").rows() == [
        ('{"user_team":"a"}', "e1", "2026-11"),
        ("{}", "e1", "2026-11"),
    ]
    r = ingest_source(cfg, cfg.source("aws"), [date(2026, 12, 1)], home)
    assert r.rows_landed == 0
    assert any("no manifest for BILLING_PERIOD=2026-12" in str(w) for w in r.warnings)


def test_unsupported_kind_and_bad_file(tmp_path: Path) -> None:
    cfg = build_fleet(tmp_path / "fleet")
    home = tmp_path / "home"
    # a location that matches no file at all is an error of the source (DESIGN, "Data health")
    with pytest.raises(IngestError, match=r"source kueue: location .*kueue/\*\.json matches no"):
        ingest_source(cfg, cfg.source("kueue"), [D1], home)
    assert not (home / "raw/kueue_workloads/kueue").exists()
    # a kind no spec declares is refused by the config (rate cards live under `rate_cards:`)
    with pytest.raises(ValidationError, match="unknown source kind 'rate_card'.*rate_cards:"):
        Source(name="rc", kind="rate_card", location="rc.csv")
    # and by the registry, for a Source built without validation
    unchecked = Source.model_construct(name="rc", kind="rate_card", location="rc.csv", options={})
    with pytest.raises(IngestError, match="kind 'rate_card' is not a source kind"):
        ingest_source(cfg, unchecked, [D1], home)
    (tmp_path / "fleet" / "k8s" / f"pods-{D2}.json").write_text("[not json")
    with pytest.raises(IngestError, match=f"pods-{D2}.json, line 1: not valid JSON"):
        ingest_source(cfg, cfg.source("pods"), [D2], home)
    assert not (home / "raw/k8s_pods/pods" / f"date={D2}").exists()
