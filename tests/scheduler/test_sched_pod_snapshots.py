"""Issue 11, finding 5, at the reader and the landing: a pod item without `status` is
quarantined naming the pod and the field; the rest of its dump lands, and the other day's
partition is what its own dump says."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from pod_dumps import D1, D2, pod, write_dumps

from fleetledger.config import Config, Source
from ingest.core.errors import IngestError
from ingest.core.quality import partition_file
from ingest.registry import ingest_source
from ingest.scheduler.kubernetes import parse_pods, read_pods


def test_status_less_item_is_quarantined_and_other_pods_land(tmp_path: Path) -> None:
    location = write_dumps(tmp_path / "k8s")
    day2 = read_pods(str(location).replace("{date}", str(D2)), source="k")
    assert day2.rows["name"].to_list() == ["b", "c"]
    assert day2.quarantine.select("x_line_number", "reason").rows() == [
        (1, "pod ml/svc (uid u-svc) has no status")
    ]
    assert '"name": "svc"' in day2.quarantine["raw"][0]

    home = tmp_path / "home"
    source = Source(name="k", kind="kubernetes", location=str(location))
    report = ingest_source(Config(sources=[source]), source, [D1, D2], home)
    assert report.rows_quarantined == 1
    landed = {
        d: pl.read_parquet(partition_file(home, "k8s_pods", "k", f"date={d}")) for d in (D1, D2)
    }
    # the intact day is exactly its own dump
    day1 = read_pods(str(location).replace("{date}", str(D1)), source="k").rows
    assert landed[D1].select(day1.columns).sort("uid").equals(day1.sort("uid"))
    assert landed[D1]["started_at"].to_list() == [
        datetime(2026, 11, 27, tzinfo=UTC),
        datetime(2026, 11, 28, 12, tzinfo=UTC),
    ]
    # the bad day keeps its other pods
    assert sorted(landed[D2]["uid"].to_list()) == ["u-b", "u-c"]


def test_pod_times_after_the_snapshot_or_out_of_order_are_quarantined() -> None:
    snap = datetime(2026, 11, 29, 23, 59, 59, tzinfo=UTC)
    items = [
        pod("ok", 1, "2026-11-29T01:00:00Z"),
        pod("future", 1, "2099-01-01T00:00:00Z"),
        pod("backwards", 1, "2026-11-29T10:00:00Z", finished="2026-11-29T09:00:00Z"),
    ]
    r = parse_pods({"items": items}, source="k", file="pods.json", snapshot_at=snap)
    assert r.rows["name"].to_list() == ["ok"]
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (
            2,
            "pod ml/future (uid u-future): creationTimestamp 2099-01-01T00:00:00Z is later "
            "than the dump's snapshot time 2026-11-29T23:59:59Z",
        ),
        (
            3,
            "pod ml/backwards (uid u-backwards): finishedAt 2026-11-29T09:00:00Z is before "
            "startTime 2026-11-29T10:00:00Z",
        ),
    ]


def test_pod_dump_with_bytes_that_are_not_utf8_fails_naming_the_line(tmp_path: Path) -> None:
    """Issue 11, finding 9c: one JSON document cannot be split by line, so invalid bytes fail
    the file with its name, the line and the bytes (its landed data stays); option `encoding`
    reads a dump written in another encoding."""
    f = tmp_path / "pods-2026-11-29.json"
    doc = {"kind": "List", "items": [pod("caf", 1, "2026-11-29T01:00:00Z")]}
    f.write_bytes(json.dumps(doc, indent=1).replace('"caf"', '"caf\xe9"').encode("latin-1"))
    line = next(i for i, t in enumerate(f.read_bytes().split(b"\n"), 1) if b"\xe9" in t)
    with pytest.raises(IngestError) as err:
        read_pods(f, source="k")
    assert str(err.value).startswith(f"{f}, line {line}: invalid UTF-8 bytes \\xe9 in the line")
    assert read_pods(f, source="k", options={"encoding": "latin-1"}).rows["name"].to_list() == [
        "café"
    ]


def test_pod_reason_before_container_reason_and_owner() -> None:
    """Issue 12, item 2: an evicted pod's reason is the pod's (`Evicted`), not its container's
    (`Error`); a pod preempted by the scheduler names the reason of its True DisruptionTarget
    condition; an OOMKilled pod keeps its container's; the controller owner is read."""
    snap = datetime(2026, 11, 28, 23, 59, 59, tzinfo=UTC)
    evicted = pod("ev", 1, "2026-11-28T01:00:00Z", finished="2026-11-28T02:00:00Z")
    evicted["status"].update(phase="Failed", reason="Evicted")
    evicted["status"]["containerStatuses"][0]["state"]["terminated"].update(
        exitCode=137, reason="Error"
    )
    evicted["metadata"]["ownerReferences"] = [
        {"kind": "Node", "name": "n", "uid": "n-1"},
        {"kind": "Job", "name": "train", "uid": "job-1", "controller": True},
    ]
    preempted = pod("pre", 1, "2026-11-28T01:00:00Z")
    preempted["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "False", "reason": "EvictionByEvictionAPI"},
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"},
    ]
    oom = pod("oom", 1, "2026-11-28T01:00:00Z", finished="2026-11-28T03:00:00Z")
    oom["status"]["containerStatuses"][0]["state"]["terminated"].update(
        exitCode=137, reason="OOMKilled"
    )
    r = parse_pods({"items": [evicted, preempted, oom]}, source="k", file="f", snapshot_at=snap)
    assert r.rows.select("name", "reason", "exit_code", "owner_kind", "owner_uid").rows() == [
        ("ev", "Evicted", 137, "Job", "job-1"),
        ("pre", "PreemptionByScheduler", None, None, None),
        ("oom", "OOMKilled", 137, None, None),
    ]
