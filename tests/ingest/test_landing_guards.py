"""The landing guards (issue 11, findings 4 and 6): no run removes landed rows silently.

Finding 4: an emptied billing file (0 bytes, or a header only) over a landed period is refused
(IngestError naming the source, the period, the file and `--allow-shrink`), and so is any new
partition with more than `max_row_drop` fewer rows than the landed one; the landed files stay
byte for byte. Finding 6: a location that matches no file at all is an error of the source and
its landed data stays; a `{date}` day without files is a gap (`missing_day`), never a deletion.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import sys
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pytest
import yaml
from dagster import DagsterInstance, materialize

from fleetledger.cli import main
from fleetledger.config import Config, load_config
from ingest.core.errors import IngestError
from ingest.core.guards import ALLOW_SHRINK_TAG
from ingest.registry import ingest_source
from orchestration.ingest_assets import allowed_to_shrink, build_ingest_asset
from orchestration.resources import FleetResource

D1, D2 = date(2026, 11, 2), date(2026, 11, 3)


def snapshot(home: Path) -> dict[str, bytes]:
    """Every landed file (the schema files aside) and its bytes."""
    raw = home / "raw"
    return {
        p.relative_to(raw).as_posix(): p.read_bytes()
        for p in sorted(raw.rglob("*"))
        if p.is_file() and "_schema" not in p.parts
    }


def config(root: Path, *sources: dict) -> Config:
    return Config.model_validate({"sources": list(sources), "base_dir": root})


def prom(day: date, hours: int, gpus: int = 1) -> str:
    """`hours` samples (00:00, 01:00, …) of GPU_UTIL for each of `gpus` GPUs of node n1."""
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for h in range(hours):
        t = int(datetime(day.year, day.month, day.day, h, tzinfo=UTC).timestamp() * 1000)
        for g in range(gpus):
            lines.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-{g}",Hostname="n1"}} 50 {t}')
    return "\n".join(lines) + "\n"


def rows_of(home: Path, table: str, source: str, partition: str) -> int:
    return pl.read_parquet(home / "raw" / table / source / partition / "part-0.parquet").height


# ------------------------------------------------------------------ finding 4: billing files


def gcp_line(cost: float, account: str) -> str:
    return json.dumps(
        {
            "billing_account_id": account,
            "invoice": {"month": "202611"},
            "cost": cost,
            "currency": "USD",
            "usage_start_time": "2026-11-02T00:00:00Z",
            "usage_end_time": "2026-11-02T01:00:00Z",
        }
    )


def gcp_fleet(root: Path) -> tuple[Config, Path]:
    """Two export files for invoice month 2026-11, one per billing account: a 4.0 + 6.0 = 10.0
    and b 1.0 + 9.0 = 10.0; 4 lines, 20.0 in all."""
    (root / "gcp").mkdir(parents=True)
    (root / "gcp" / "a.jsonl").write_text(gcp_line(4.0, "a") + "\n" + gcp_line(6.0, "a") + "\n")
    b = root / "gcp" / "b.jsonl"
    b.write_text(gcp_line(1.0, "b") + "\n" + gcp_line(9.0, "b") + "\n")
    return config(root, {"name": "gcp", "kind": "gcp_billing", "location": "gcp/*.jsonl"}), b


def test_empty_gcp_file_over_a_landed_period_is_refused(tmp_path: Path) -> None:
    cfg, b = gcp_fleet(tmp_path / "fleet")
    home = tmp_path / "home"
    first = ingest_source(cfg, cfg.source("gcp"), [D1], home)
    assert (first.partitions, first.rows_landed) == (["period=2026-11"], 4)
    before = snapshot(home)
    # b is emptied: 4 → 2 lines is exactly a 50 % drop, not more than max_row_drop 0.5, so it is
    # the empty-file rule that refuses it (spend would halve: 20.0 → 10.0)
    b.write_text("")
    with pytest.raises(IngestError) as err:
        ingest_source(cfg, cfg.source("gcp"), [D1], home)
    msg = str(err.value)
    assert "source gcp" in msg and "period=2026-11" in msg
    assert f"{b} (2 landed rows)" in msg
    assert "--allow-shrink gcp" in msg
    assert snapshot(home) == before
    lines = pl.read_parquet(home / "raw/gcp_billing_lines/gcp/period=2026-11/part-0.parquet")
    assert lines["cost"].sum() == 20.0

    # the flag says the account's period was really emptied: it lands, and says so
    forced = ingest_source(cfg, cfg.source("gcp"), [D1], home, allow_shrink=True)
    assert forced.rows_landed == 2
    lines = pl.read_parquet(home / "raw/gcp_billing_lines/gcp/period=2026-11/part-0.parquet")
    assert lines["cost"].sum() == 10.0
    allowed = [f for f in forced.findings if f.check == "shrink_allowed"]
    assert [(f.severity, f.count) for f in allowed] == [("info", 2)]
    assert str(b) in str(allowed[0])


def test_a_new_empty_file_is_not_refused(tmp_path: Path) -> None:
    """An empty file no landed row came from removes nothing: it is read like any other."""
    cfg, _ = gcp_fleet(tmp_path / "fleet")
    home = tmp_path / "home"
    ingest_source(cfg, cfg.source("gcp"), [D1], home)
    (tmp_path / "fleet" / "gcp" / "c.jsonl").write_text("")
    assert ingest_source(cfg, cfg.source("gcp"), [D1], home).rows_landed == 4


def focus_fleet(root: Path, samples: Path) -> tuple[Config, Path, str]:
    """A FOCUS 1.0 CSV: the sample's header and its first 3 lines (billing period 2024-09)."""
    sample = samples / "focus/focus-sample-data-1.0-focus_sample-1000.csv"
    with sample.open(newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        lines = [next(reader) for _ in range(3)]
    buf = io.StringIO()
    writer = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(header)
    head_only = buf.getvalue()
    writer.writerows(lines)
    (root / "focus").mkdir(parents=True)
    f = root / "focus" / "bill.csv"
    f.write_text(buf.getvalue())
    return config(root, {"name": "focus", "kind": "focus", "location": "focus/*.csv"}), f, head_only


def test_header_only_focus_file_is_refused(tmp_path: Path, samples: Path) -> None:
    cfg, f, head_only = focus_fleet(tmp_path / "fleet", samples)
    home = tmp_path / "home"
    day = date(2024, 9, 18)
    first = ingest_source(cfg, cfg.source("focus"), [day], home)
    assert (first.partitions, first.rows_landed + first.rows_quarantined) == (["period=2024-09"], 3)
    before = snapshot(home)
    f.write_text(head_only)
    with pytest.raises(IngestError, match=r"source focus: .*period=2024-09.*bill\.csv"):
        ingest_source(cfg, cfg.source("focus"), [day], home)
    assert snapshot(home) == before
    forced = ingest_source(cfg, cfg.source("focus"), [day], home, allow_shrink=True)
    assert forced.rows_landed == 0
    assert not (home / "raw/quarantine/focus/period=2024-09").exists()


def cur_export(root: Path, lines: list[tuple[str, float]]) -> Path:
    """A CUR 2.0 export on disk with one gzip CSV data file for 2026-11 holding `lines`
    (resource id, unblended cost); an empty list writes the header only."""
    cur = root / "cur" / "fleet-cur"
    data = cur / "data" / "BILLING_PERIOD=2026-11"
    meta = cur / "metadata" / "BILLING_PERIOD=2026-11"
    data.mkdir(parents=True, exist_ok=True)
    meta.mkdir(parents=True, exist_ok=True)
    text = "line_item_resource_id,line_item_unblended_cost,line_item_currency_code\n" + "".join(
        f"{r},{c},USD\n" for r, c in lines
    )
    (data / "fleet-cur-00001.csv.gz").write_bytes(gzip.compress(text.encode()))
    (meta / "fleet-cur-Manifest.json").write_text(
        json.dumps(
            {
                "executionId": "e1",
                "dataFiles": [
                    "s3://bkt/cur2/fleet-cur/data/BILLING_PERIOD=2026-11/fleet-cur-00001.csv.gz"
                ],
            }
        )
    )
    return cur


def test_header_only_cur_delivery_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    cur_export(root, [("i-1", 3.0), ("i-2", 5.0)])
    cfg = config(root, {"name": "aws", "kind": "aws_cur", "location": "cur/fleet-cur"})
    home = tmp_path / "home"
    assert ingest_source(cfg, cfg.source("aws"), [D1], home).rows_landed == 2
    before = snapshot(home)
    cur_export(root, [])
    with pytest.raises(IngestError) as err:
        ingest_source(cfg, cfg.source("aws"), [D1], home)
    msg = str(err.value)
    assert "source aws" in msg and "period=2026-11" in msg and "fleet-cur-00001.csv.gz" in msg
    assert "--allow-shrink aws" in msg
    assert snapshot(home) == before
    forced = ingest_source(cfg, cfg.source("aws"), [D1], home, allow_shrink=True)
    assert forced.rows_landed == 0
    assert rows_of(home, "aws_cur_lines", "aws", "period=2026-11") == 0


# ------------------------------------------------------------------ finding 4: row drops


def dcgm_day(root: Path, hours: int) -> None:
    folder = root / "dcgm" / D1.isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "n1.prom").write_text(prom(D1, hours))


DCGM = {"name": "dcgm", "kind": "dcgm", "location": "dcgm/{date}/*.prom"}


def test_a_60_percent_drop_on_a_dcgm_day_is_refused(tmp_path: Path) -> None:
    root, home = tmp_path / "fleet", tmp_path / "home"
    dcgm_day(root, 10)  # 10 samples
    cfg = config(root, DCGM)
    assert ingest_source(cfg, cfg.source("dcgm"), [D1], home).rows_landed == 10
    before = snapshot(home)
    dcgm_day(root, 4)  # 4 samples: (10 - 4) / 10 = 60 % fewer > 50 %
    with pytest.raises(IngestError) as err:
        ingest_source(cfg, cfg.source("dcgm"), [D1], home)
    msg = str(err.value)
    assert f"source dcgm: refused to replace landed data, which is kept: dcgm_samples date={D1}"
    assert "4 rows would replace 10 landed (60% fewer, more than max_row_drop 0.5)" in msg
    assert "--allow-shrink dcgm" in msg
    assert snapshot(home) == before
    # no partial file is left beside the kept partition
    assert [p.name for p in (home / "raw/dcgm_samples/dcgm").iterdir()] == [f"date={D1}"]

    forced = ingest_source(cfg, cfg.source("dcgm"), [D1], home, allow_shrink=True)
    assert forced.rows_landed == 4
    assert rows_of(home, "dcgm_samples", "dcgm", f"date={D1}") == 4
    assert [(f.check, f.severity, f.count, f.day) for f in forced.findings] == [
        ("shrink_allowed", "info", 6, D1)
    ]


def test_a_drop_within_max_row_drop_lands(tmp_path: Path) -> None:
    root, home = tmp_path / "fleet", tmp_path / "home"
    dcgm_day(root, 10)
    cfg = config(root, DCGM)
    ingest_source(cfg, cfg.source("dcgm"), [D1], home)
    dcgm_day(root, 5)  # exactly 50 % fewer: not more than 0.5
    assert ingest_source(cfg, cfg.source("dcgm"), [D1], home).rows_landed == 5
    # a source's own max_row_drop: 0.7 lets 5 → 2 (60 % fewer) through, the top level 0.2
    # refuses 2 → 1 for another source
    dcgm_day(root, 2)
    loose = config(root, {**DCGM, "max_row_drop": 0.7})
    assert ingest_source(loose, loose.source("dcgm"), [D1], home).rows_landed == 2
    strict = Config.model_validate({"sources": [DCGM], "base_dir": root, "max_row_drop": 0.2})
    dcgm_day(root, 1)
    with pytest.raises(IngestError, match="1 rows would replace 2 landed"):
        ingest_source(strict, strict.source("dcgm"), [D1], home)


def test_other_days_land_when_one_is_refused(tmp_path: Path) -> None:
    root, home = tmp_path / "fleet", tmp_path / "home"
    dcgm_day(root, 10)
    (root / "dcgm" / D2.isoformat()).mkdir(parents=True)
    (root / "dcgm" / D2.isoformat() / "n1.prom").write_text(prom(D2, 3))
    cfg = config(root, DCGM)
    ingest_source(cfg, cfg.source("dcgm"), [D1, D2], home)
    d1 = (home / f"raw/dcgm_samples/dcgm/date={D1}/part-0.parquet").read_bytes()
    dcgm_day(root, 2)
    (root / "dcgm" / D2.isoformat() / "n1.prom").write_text(prom(D2, 6))
    with pytest.raises(IngestError, match=f"date={D1}"):
        ingest_source(cfg, cfg.source("dcgm"), [D1, D2], home)
    assert (home / f"raw/dcgm_samples/dcgm/date={D1}/part-0.parquet").read_bytes() == d1
    assert rows_of(home, "dcgm_samples", "dcgm", f"date={D2}") == 6


# ------------------------------------------------------------------ finding 6: locations


def power_csv(day: date, kw: float) -> str:
    return (
        "timestamp,site,meter,kind,kw\n"
        f"{day}T00:00:00Z,dc1,main,facility,{kw}\n"
        f"{day}T00:00:00Z,dc1,pdu,it,{kw * 0.8}\n"
    )


def power_fleet(root: Path) -> None:
    (root / "power").mkdir(parents=True)
    for day in (D1, D2):
        (root / "power" / f"power-{day}.csv").write_text(power_csv(day, 100))


def test_date_location_matching_no_file_keeps_landed_data(tmp_path: Path) -> None:
    root, home = tmp_path / "fleet", tmp_path / "home"
    power_fleet(root)
    good = config(root, {"name": "power", "kind": "power", "location": "power/power-{date}.csv"})
    ingest_source(good, good.source("power"), [D1, D2], home)
    before = snapshot(home)
    typo = config(root, {"name": "power", "kind": "power", "location": "powr/power-{date}.csv"})
    with pytest.raises(IngestError, match=r"source power: location .*powr/power-\{date\}\.csv"):
        ingest_source(typo, typo.source("power"), [D1, D2], home)
    assert snapshot(home) == before


def test_a_missing_day_is_a_gap_never_a_deletion(tmp_path: Path) -> None:
    root, home = tmp_path / "fleet", tmp_path / "home"
    power_fleet(root)
    cfg = config(root, {"name": "power", "kind": "power", "location": "power/power-{date}.csv"})
    ingest_source(cfg, cfg.source("power"), [D1, D2], home)
    d2 = (home / f"raw/power_readings/power/date={D2}/part-0.parquet").read_bytes()
    (root / "power" / f"power-{D2}.csv").unlink()
    r = ingest_source(cfg, cfg.source("power"), [D1, D2], home)
    assert r.partitions == [f"date={D1}"]
    assert (home / f"raw/power_readings/power/date={D2}/part-0.parquet").read_bytes() == d2
    gaps = [f for f in r.findings if f.check == "missing_day"]
    assert [(f.severity, f.day, f.count) for f in gaps] == [("warning", D2, 2)]
    assert "the landed date=2026-11-03 (2 rows) is kept" in str(gaps[0])


def test_whole_location_matching_no_file_keeps_landed_data(tmp_path: Path) -> None:
    root, home = tmp_path / "fleet", tmp_path / "home"
    (root / "dcgm-all").mkdir(parents=True)
    (root / "dcgm-all" / "n1.prom").write_text(prom(D1, 3) + prom(D2, 2).split("\n", 1)[1])
    cfg = config(root, {"name": "all", "kind": "dcgm", "location": "dcgm-all/*.prom"})
    assert ingest_source(cfg, cfg.source("all"), [D1, D2], home).rows_landed == 5
    before = snapshot(home)
    typo = config(root, {"name": "all", "kind": "dcgm", "location": "dcgm-al/*.prom"})
    with pytest.raises(IngestError, match=r"source all: location .*dcgm-al/\*\.prom matches no"):
        ingest_source(typo, typo.source("all"), [D1, D2], home)
    assert snapshot(home) == before
    # the file loses D2 (rotated): D2 is a gap, kept; D1 is re-landed
    (root / "dcgm-all" / "n1.prom").write_text(prom(D1, 3))
    r = ingest_source(cfg, cfg.source("all"), [D1, D2], home)
    assert r.partitions == [f"date={D1}"]
    assert (
        before[f"dcgm_samples/all/date={D2}/part-0.parquet"]
        == (home / f"raw/dcgm_samples/all/date={D2}/part-0.parquet").read_bytes()
    )
    assert [(f.check, f.day, f.count) for f in r.findings] == [("empty_partition", D2, 2)]


def test_billing_location_matching_no_file_keeps_landed_data(tmp_path: Path) -> None:
    cfg, _ = gcp_fleet(tmp_path / "fleet")
    home = tmp_path / "home"
    ingest_source(cfg, cfg.source("gcp"), [D1], home)
    before = snapshot(home)
    typo = config(
        tmp_path / "fleet", {"name": "gcp", "kind": "gcp_billing", "location": "gcp/*.json"}
    )
    with pytest.raises(IngestError, match=r"source gcp: location .*gcp/\*\.json matches no file"):
        ingest_source(typo, typo.source("gcp"), [D1], home)
    assert snapshot(home) == before
    # every file moved away but one of another month: 2026-11 holds no row now, a gap
    for f in (tmp_path / "fleet" / "gcp").iterdir():
        f.unlink()
    other = json.loads(gcp_line(2.0, "a")) | {"invoice": {"month": "202610"}}
    (tmp_path / "fleet" / "gcp" / "oct.jsonl").write_text(json.dumps(other) + "\n")
    r = ingest_source(cfg, cfg.source("gcp"), [D1], home)
    assert "period=2026-11" not in r.partitions
    assert {k: v for k, v in snapshot(home).items() if "2026-11" in k} == before
    assert [f.check for f in r.findings if f.severity == "warning"] == ["empty_partition"]


def test_run_logs_location_matching_no_file_keeps_landed_data(tmp_path: Path) -> None:
    root, home = tmp_path / "fleet", tmp_path / "home"
    (root / "logs").mkdir(parents=True)
    (root / "logs" / "slurm-42.out").write_text(
        f"{D1}T01:00:00Z Saved checkpoint /ckpt/step-100\n"
        f"{D1}T02:00:00Z Saved checkpoint /ckpt/step-200\n"
    )
    src = {
        "name": "logs",
        "kind": "run_logs",
        "location": "logs/slurm-*.out",
        "options": {"scheduler": "slurm", "cluster": "c"},
    }
    cfg = config(root, src)
    assert ingest_source(cfg, cfg.source("logs"), [D1], home).rows_landed == 2
    before = snapshot(home)
    typo = config(root, {**src, "location": "log/slurm-*.out"})
    with pytest.raises(IngestError, match=r"source logs: location .*log/slurm-\*\.out matches"):
        ingest_source(typo, typo.source("logs"), [D1], home)
    assert snapshot(home) == before


SACCT = (
    "JobID|JobIDRaw|Cluster|Partition|Account|User|Submit|Start|End|Elapsed|State|AllocTRES|"
    "NodeList|JobName\n"
    "10|10|c|gpu|ml|ann|2026-11-02T01:00:00|2026-11-02T01:00:00|Unknown|01:00:00|RUNNING|"
    "cpu=8,gres/gpu=8|gpu-a01|train\n"
)
EVENTS = (
    "NodeName|TimeStart|TimeEnd|State|Reason\n"
    "gpu-a01|2026-11-02T03:00:00|2026-11-02T04:00:00|DOWN|Not responding\n"
)


def test_node_events_location_matching_no_file_keeps_landed_data(tmp_path: Path) -> None:
    root, home = tmp_path / "fleet", tmp_path / "home"
    (root / "sacct").mkdir(parents=True)
    (root / "sacct" / f"sacct-{D1}.txt").write_text(SACCT)
    (root / "events.txt").write_text(EVENTS)
    src = {
        "name": "hpc",
        "kind": "slurm",
        "location": "sacct/sacct-{date}.txt",
        "options": {"events": "events.txt", "cluster": "c"},
    }
    cfg = config(root, src)
    r = ingest_source(cfg, cfg.source("hpc"), [D1], home)
    assert (r.rows_landed, r.node_events_landed) == (1, 1)
    before = snapshot(home)
    typo = config(root, {**src, "options": {"events": "event.txt", "cluster": "c"}})
    with pytest.raises(IngestError, match=r"source hpc: option events .*event\.txt matches no"):
        ingest_source(typo, typo.source("hpc"), [D1], home)
    assert snapshot(home) == before
    # the event file no longer holds the day's event: kept, a gap
    (root / "events.txt").write_text(EVENTS.splitlines()[0] + "\n")
    r = ingest_source(cfg, cfg.source("hpc"), [D1], home)
    assert snapshot(home) == before
    assert [(f.check, f.count) for f in r.findings] == [("empty_partition", 1)]


# ------------------------------------------------------------------ the flag: run tag and CLI


def write_home(home: Path, root: Path, source: dict) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "fleetledger.yml").write_text(
        yaml.safe_dump({"sources": [{**source, "location": str(root / source["location"])}]})
    )


def test_allow_shrink_travels_as_a_run_tag(tmp_path: Path) -> None:
    """The ingest asset reads `--allow-shrink` from its run's tags: a run without the tag (a
    scheduled one) is refused and keeps the day, a run with it lands the smaller day."""
    root, home = tmp_path / "fleet", tmp_path / "home"
    dcgm_day(root, 10)
    write_home(home, root, DCGM)
    asset = build_ingest_asset(load_config(home / "fleetledger.yml").source("dcgm"))
    resources = {"fleet": FleetResource(home=str(home))}

    def run(tags: dict[str, str]) -> bool:
        result = materialize(
            [asset],
            resources=resources,
            partition_key=D1.isoformat(),
            tags=tags,
            raise_on_error=False,
            instance=DagsterInstance.ephemeral(),
        )
        return result.success

    assert run({})
    before = snapshot(home)
    dcgm_day(root, 4)
    assert not run({})
    assert not run({ALLOW_SHRINK_TAG: "other-source"})
    assert snapshot(home) == before
    assert run({ALLOW_SHRINK_TAG: "other-source,dcgm"})
    assert rows_of(home, "dcgm_samples", "dcgm", f"date={D1}") == 4
    assert allowed_to_shrink({ALLOW_SHRINK_TAG: " a, ,b"}) == {"a", "b"}


def test_allow_shrink_names_a_configured_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, home = tmp_path / "fleet", tmp_path / "home"
    dcgm_day(root, 1)
    write_home(home, root, DCGM)
    args = ["run", "--date", D1.isoformat(), "--allow-shrink", "dcmg", "--home", str(home)]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "--allow-shrink: no source named 'dcmg'" in err and "configured: dcgm" in err
    assert not (home / "raw").exists()


def test_an_empty_sacct_window_keeps_the_landed_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `sacct` call that prints no job for a day with landed jobs (slurmdbd purged it) is a
    gap: the day keeps its jobs."""
    out = tmp_path / "sacct-out.txt"
    exe = tmp_path / "bin" / "sacct"
    exe.parent.mkdir()
    exe.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write(open({str(out)!r}).read())\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    out.write_text(SACCT)
    cfg = config(tmp_path, {"name": "hpc", "kind": "slurm", "location": "sacct://"})
    home = tmp_path / "home"
    assert ingest_source(cfg, cfg.source("hpc"), [D1], home).rows_landed == 1
    before = snapshot(home)
    out.write_text(SACCT.splitlines()[0] + "\n")
    r = ingest_source(cfg, cfg.source("hpc"), [D1], home)
    assert snapshot(home) == before
    assert [(f.check, f.severity, f.day, f.count) for f in r.findings] == [
        ("empty_partition", "warning", D1, 1)
    ]
    assert str(r.findings[0]).startswith(f"sacct printed no job for {D1}: a gap")
