"""The days an unavailable source owes (ingest/core/missed.py): recorded with the error, added to
by later failures, read by the next run, cleared once landed."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from ingest.core.missed import (
    clear_missed,
    missed_path,
    read_missed,
    record_missed,
    with_missed,
)

D1, D2, D3, D4 = (date(2026, 10, d) for d in (1, 2, 3, 4))


def test_owed_days_accumulate_and_clear(tmp_path: Path) -> None:
    assert read_missed(tmp_path, "aws-cur") is None
    assert with_missed(tmp_path, "aws-cur", [D3], D1) == [D3]

    first = record_missed(tmp_path, "aws-cur", [D1, D2], "503 SlowDown (tried 8 times)")
    assert first.days == [D1, D2]
    # a second outage adds its days; the first failure's time stays, the last error is kept
    second = record_missed(tmp_path, "aws-cur", [D2, D3], "connection refused")
    assert second.days == [D1, D2, D3]
    assert second.since == first.since
    owed = read_missed(tmp_path, "aws-cur")
    assert owed is not None and owed.days == [D1, D2, D3] and owed.error == "connection refused"
    # another source owes nothing
    assert read_missed(tmp_path, "gcp-billing") is None

    # the next run over D4 reads the owed days too; one before the first partition is dropped
    assert with_missed(tmp_path, "aws-cur", [D4], D1) == [D1, D2, D3, D4]
    assert with_missed(tmp_path, "aws-cur", [D4], D2) == [D2, D3, D4]

    clear_missed(tmp_path, "aws-cur")
    assert not missed_path(tmp_path, "aws-cur").exists()
    assert with_missed(tmp_path, "aws-cur", [D4], D1) == [D4]
    clear_missed(tmp_path, "aws-cur")  # nothing owed: nothing to do


def test_a_source_name_is_a_safe_file_name(tmp_path: Path) -> None:
    path = missed_path(tmp_path, "../team a/cur")
    assert path.parent == tmp_path / "state" / "missed_days"
    assert path.name == ".._team_a_cur.json"
