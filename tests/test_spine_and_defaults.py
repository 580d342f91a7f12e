"""The accounted days are recorded once per day however often a day is run, and the models
read every default from the config tables (stg_config__settings), never from a literal."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pyarrow.parquet as pq

from fleetledger.config import Config
from fleetledger.config_tables import config_frames, record_accounted_days

MODELS = Path(__file__).resolve().parents[1] / "dbt_project" / "models"


def test_accounted_days_are_recorded_once(tmp_path: Path) -> None:
    record_accounted_days(tmp_path, [date(2026, 11, 16), date(2026, 11, 17)])
    record_accounted_days(tmp_path, [date(2026, 11, 17), date(2026, 11, 17)])
    files = sorted((tmp_path / "raw/accounted_days/pipeline").glob("*/*.parquet"))
    assert [f.parent.name for f in files] == ["date=2026-11-16", "date=2026-11-17"]
    days = [d for f in files for d in pq.read_table(f).column("day").to_pylist()]
    assert days == [date(2026, 11, 16), date(2026, 11, 17)]


def test_defaults_come_from_the_config() -> None:
    """The idle threshold, the DCGM stale window and the meter window appear in no model as a
    literal fallback (they were `coalesce(.., 0.05)`, `coalesce(.., 120)`, `t + 300`)."""
    literal = re.compile(
        r"idle_threshold\s*,\s*0\.\d+|stale_after\s*,\s*\d+\s*\)|\+\s*300\b|,\s*300\s*\)"
    )
    offenders = [
        f"{p.relative_to(MODELS)}: {m.group(0)}"
        for p in MODELS.rglob("*.sql")
        for m in literal.finditer(p.read_text())
    ]
    assert offenders == []


def test_settings_carry_the_config_and_leave_unset_windows_null() -> None:
    cfg = Config(
        idle_threshold=0.1,
        inventory=[{"host": "h", "provider": "onprem", "site": "dc1", "gpus": 1}],
        sites={"dc1": {"it_meters": ["ups-1"], "meter_parents": {"pdu-1": "ups-1"}}},
    )
    frames = config_frames(cfg)
    settings = frames["config_settings"].to_dicts()
    assert settings == [
        {
            "site": "dc1",
            "idle_threshold": 0.1,
            "utilization_signal": "auto",
            "stale_after_seconds": None,
            "meter_stale_after_seconds": None,
            "reporting_currency": "USD",
        }
    ]
    assert frames["config_meters"].to_dicts() == [
        {"site": "dc1", "meter": "ups-1", "parent_meter": None, "it_total": True},
        {"site": "dc1", "meter": "pdu-1", "parent_meter": "ups-1", "it_total": None},
    ]
