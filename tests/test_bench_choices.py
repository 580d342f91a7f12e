"""benchmarks/choice_copies.py: both shapes of a choice's work find the same change and leave
the same copy, so the figures it prints compare like with like (its speed is not checked)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchmarks.choice_copies import bill_line_comparison, bill_line_copy, main, node_hour_copy

# 40 days from 2025-10-01: the last is 2025-11-09, its month starts 2025-11-01
NOV_1 = datetime(2025, 11, 1, tzinfo=UTC).timestamp()
LAST_DAY = datetime(2025, 11, 9, tzinfo=UTC).timestamp()


def test_a_restated_month_is_found_at_its_planted_hour_by_both_shapes(tmp_path: Path) -> None:
    # the planted node-hour: the month's first day, 05:00
    t = node_hour_copy(tmp_path, 3, 40, restated=True, runs=1)
    assert t.before_found == t.now_found == NOV_1 + 5 * 3600
    assert t.rows == 3 * 40 * 24


def test_a_quiet_day_finds_nothing_either_way(tmp_path: Path) -> None:
    t = node_hour_copy(tmp_path, 3, 40, restated=False, runs=1)
    assert t.before_found is None and t.now_found is None


def test_the_open_months_restated_line_is_found_by_both_comparisons(tmp_path: Path) -> None:
    # line 0 of the last day: its span starts at that day's midnight
    t = bill_line_comparison(tmp_path, 5, 40, runs=1)
    assert t.before_found == t.now_found == LAST_DAY
    assert t.rows == 200


def test_the_spend_copy_rewrites_the_open_months_lines_and_ends_equal(tmp_path: Path) -> None:
    # 40 days x 5 lines: the whole copy writes 200 rows; by period, November's 9 days x 5 = 45
    # (the function raises if either copy then differs from the redelivered lines)
    t = bill_line_copy(tmp_path, 5, 40, runs=1)
    assert (t.before_found, t.now_found, t.rows) == (200, 45, 200)


def test_the_command_prints_a_row_per_case(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--nodes", "2", "--lines-per-day", "3", "--days", "7"])
    lines = capsys.readouterr().out.splitlines()
    # a header, two node-hour cases (quiet, restated), the bill-line comparison and copy
    assert len(lines) == 5
    assert "restated month" in lines[2] and lines[3].startswith("bill lines, 3 a day x 7 days")
    assert lines[4].startswith("bill-line copy, 3 a day x 7 days")


def test_a_history_of_a_months_first_day_is_restated_in_the_month_before(tmp_path: Path) -> None:
    # 32 days from 2025-10-01: the daily run's day is 2025-11-01, the month it recomputes from
    # is October (the day before the range), the planted hour 2025-10-01 05:00
    t = node_hour_copy(tmp_path, 2, 32, restated=True, runs=1)
    assert t.before_found == t.now_found == datetime(2025, 10, 1, 5, tzinfo=UTC).timestamp()


def test_a_history_without_a_day_before_the_run_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["--days", "1"])
    assert "--days must be at least 2" in capsys.readouterr().err
