"""Issue 11, finding 3: impossible scheduler times are quarantined with the field and value.

An sacct End in 2099 was accepted, and one run held 1.28 M GPU-hours. Now a time later than the
export's snapshot (option `snapshot_at`; without it, now), an End before its Start, a Start
before its Submit and (option `max_run_hours`, off by default) a run longer than the maximum
go to quarantine; `Unknown` times of running and pending jobs stay valid."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ingest.core.errors import IngestError
from ingest.scheduler.slurm import parse_sacct

HEADER = "JobID|JobIDRaw|Submit|Eligible|Start|End|State|NNodes|NCPUS|AllocTRES|NodeList|JobName"


def _line(job: str, submit: str, start: str, end: str, state: str = "COMPLETED") -> str:
    return f"{job}|{job}|{submit}|{submit}|{start}|{end}|{state}|1|8|gres/gpu=8|gpu-a01|t"


def _parse(lines: list[str], options: dict | None = None):
    return parse_sacct(
        "\n".join([HEADER, *lines]), source="s", file="sacct-2026-11-29.txt", options=options
    )


S, A, B = "2026-11-29T10:00:00", "2026-11-29T11:00:00", "2026-11-29T12:00:00"


def test_future_and_out_of_order_times_are_quarantined() -> None:
    lines = [
        _line("700", S, A, B),  # line 2: good
        _line("701", S, A, "2099-01-01T00:00:00"),  # 3: End after the snapshot
        _line("702", S, A, "2026-11-29T10:30:00"),  # 4: End before Start
        _line("703", S, "2026-11-29T09:00:00", B),  # 5: Start before Submit
        _line("704", S, A, "Unknown", "RUNNING"),  # 6: running: End Unknown is valid
        _line("705", S, "Unknown", "Unknown", "PENDING"),  # 7: pending: valid
        _line("706", S, A, "2026-11-30T00:04:00"),  # 8: 4 min past the snapshot: clock skew
        _line("707", "2026-12-05T00:00:00", "Unknown", "Unknown", "PENDING"),  # 9: future Submit
    ]
    r = _parse(lines, {"snapshot_at": "2026-11-30T00:00:00Z"})
    assert r.rows["job_id"].to_list() == ["700", "704", "705", "706"]
    snap = "the export's snapshot time 2026-11-30T00:00:00Z"
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (3, f"End 2099-01-01T00:00:00Z is later than {snap}"),
        (4, "End 2026-11-29T10:30:00Z is before Start 2026-11-29T11:00:00Z"),
        (5, "Start 2026-11-29T09:00:00Z is before Submit 2026-11-29T10:00:00Z"),
        (9, f"Submit 2026-12-05T00:00:00Z is later than {snap}"),
    ]


def test_without_snapshot_time_now_is_the_limit() -> None:
    before = datetime.now(UTC)
    r = _parse([_line("701", S, A, "2099-01-01T00:00:00"), _line("700", S, A, B)])
    assert r.rows["job_id"].to_list() == ["700"]
    (reason,) = r.quarantine["reason"].to_list()
    prefix = "End 2099-01-01T00:00:00Z is later than now (ingest time) "
    assert reason.startswith(prefix)
    shown = datetime.fromisoformat(reason.removeprefix(prefix).replace("Z", "+00:00"))
    assert before.replace(microsecond=0) <= shown <= datetime.now(UTC)


def test_max_run_hours_is_off_by_default_and_quarantines_when_set() -> None:
    lines = [
        _line("800", "2026-11-28T00:00:00", "2026-11-28T00:00:00", B),  # 36 h
        _line("801", S, A, B),  # 1 h
        _line("802", "2026-11-27T00:00:00", "2026-11-27T00:00:00", "Unknown", "RUNNING"),
    ]
    opts = {"snapshot_at": "2026-11-30T00:00:00Z"}
    assert _parse(lines, opts).rows.height == 3  # services run for months: no limit
    r = _parse(lines, {**opts, "max_run_hours": 24})
    assert r.rows["job_id"].to_list() == ["801"]
    # 800: 2026-11-28 00:00 to 2026-11-29 12:00 = 36 h; 802: 2026-11-27 00:00 to the
    # snapshot 2026-11-30 00:00 = 72 h
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (
            2,
            "run of 36.0 h (Start 2026-11-28T00:00:00Z to End 2026-11-29T12:00:00Z) is longer "
            "than max_run_hours 24",
        ),
        (
            4,
            "run of 72.0 h (Start 2026-11-27T00:00:00Z to 2026-11-30T00:00:00Z, still running)"
            " is longer than max_run_hours 24",
        ),
    ]
    with pytest.raises(IngestError, match="option max_run_hours: must be a positive number"):
        _parse(lines, {"max_run_hours": 0})


def _workload(name: str, created: str, admitted: str, requeue_at: str | None = None) -> dict:
    cond = {"type": "Admitted", "status": "True", "lastTransitionTime": admitted}
    status: dict = {"conditions": [cond]}
    if requeue_at:
        status["requeueState"] = {"count": 1, "requeueAt": requeue_at}
    return {
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "uid": f"w-{name}",
            "creationTimestamp": created,
        },
        "spec": {"queueName": "q", "podSets": []},
        "status": status,
    }


def test_kueue_times_after_the_snapshot_or_before_creation_are_quarantined() -> None:
    from ingest.scheduler.kueue import parse_workloads

    snap = datetime(2026, 11, 29, 23, 59, 59, tzinfo=UTC)
    items = [
        # a planned requeue may lie after the snapshot
        _workload("ok", "2026-11-29T01:00:00Z", "2026-11-29T02:00:00Z", "2026-11-30T06:00:00Z"),
        _workload("future", "2026-11-29T01:00:00Z", "2099-01-01T00:00:00Z"),
        _workload("early", "2026-11-29T05:00:00Z", "2026-11-29T04:00:00Z"),
    ]
    r = parse_workloads({"items": items}, source="kq", file="w.json", snapshot_at=snap)
    assert r.rows["name"].to_list() == ["ok"]
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (
            2,
            "workload ml/future (uid w-future): condition Admitted 2099-01-01T00:00:00Z is "
            "later than the dump's snapshot time 2026-11-29T23:59:59Z",
        ),
        (
            3,
            "workload ml/early (uid w-early): condition Admitted 2026-11-29T04:00:00Z is "
            "before creationTimestamp 2026-11-29T05:00:00Z",
        ),
    ]
