"""Land the config (inventory, teams, rate cards, settings) as Parquet tables that dbt reads.

They go to `$FLEETLEDGER_HOME/raw/config_<name>/config/current/part-0.parquet`, replaced whole
on every run, beside the source landings (docs/landing.md).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl

from fleetledger.config import Config
from ingest.core.landing import land, replace_file

TABLES = (
    "config_inventory",
    "config_team_rules",
    "config_teams",
    "config_rate_cards",
    "config_settings",
    "config_meters",
    "config_kind_rules",
    "config_currency_rates",
    "config_budgets",
)


def _write(home: Path, table: str, df: pl.DataFrame) -> None:
    """Replace `raw/<table>/config/current/part-0.parquet` as every landed partition is
    replaced (`replace_file`: a hidden `.partial` beside the folder, one rename), so a crash
    leaves the old table or the new one, never both (docs/landing.md). The `.tmp-*` folder an
    earlier version's crashed write left goes first: DuckDB's `**/*.parquet` glob would read
    its complete copy beside `current` (every config row twice)."""
    dest = home / "raw" / table / "config" / "current"
    if dest.parent.is_dir():
        for left in dest.parent.iterdir():
            if left.name.startswith(".tmp-") and left.is_dir():
                shutil.rmtree(left, ignore_errors=True)
    replace_file(dest, df.to_arrow())


def _site_settings(cfg: Config, site: str) -> tuple[str, float, str, int | None, int | None, str]:
    """One `config_settings` row: the site's overrides, else the top-level values."""
    own = cfg.sites.get(site)
    threshold = own.idle_threshold if own and own.idle_threshold is not None else None
    signal = own.utilization_signal if own and own.utilization_signal is not None else None
    return (
        site,
        cfg.idle_threshold if threshold is None else threshold,
        signal or cfg.utilization_signal,
        cfg.stale_after_seconds,
        cfg.meter_stale_after_seconds,
        cfg.reporting_currency,
    )


def config_frames(cfg: Config) -> dict[str, pl.DataFrame]:
    inventory = pl.DataFrame(
        [n.model_dump() for n in cfg.inventory],
        schema={
            "host": pl.Utf8,
            "resource_id": pl.Utf8,
            "provider": pl.Utf8,
            "site": pl.Utf8,
            "instance_type": pl.Utf8,
            "gpus": pl.Int64,
            "gpu_model": pl.Utf8,
            "cluster": pl.Utf8,
        },
        orient="row" if not cfg.inventory else None,
    )
    rules = []
    priority = 0
    for t in cfg.teams:
        m = t.match
        for v in m.slurm_account:
            rules.append((priority, t.team, "slurm_account", None, v))
        for v in m.k8s_namespace:
            rules.append((priority, t.team, "k8s_namespace", None, v))
        for k, v in m.k8s_label.items():
            rules.append((priority, t.team, "k8s_label", k, v))
        for k, v in m.cloud_tag.items():
            rules.append((priority, t.team, "cloud_tag", k, v))
        for v in m.cloud_account:
            rules.append((priority, t.team, "cloud_account", None, v))
        priority += 1
    team_rules = pl.DataFrame(
        rules,
        schema={
            "priority": pl.Int64,
            "team": pl.Utf8,
            "rule_type": pl.Utf8,
            "rule_key": pl.Utf8,
            "rule_value": pl.Utf8,
        },
        orient="row",
    )
    teams = pl.DataFrame(
        [(t.team, json.dumps(t.owners)) for t in cfg.teams],
        schema={"team": pl.Utf8, "owners": pl.Utf8},
        orient="row",
    )
    rate_cards = pl.DataFrame(
        [
            (
                rc.site,
                host,
                rc.capex,
                rc.amortisation_months,
                rc.power_price_per_kwh,
                rc.host_overhead_w,
                rc.currency,
            )
            for rc in cfg.rate_cards
            for host in rc.hosts
        ],
        schema={
            "site": pl.Utf8,
            "host": pl.Utf8,
            "capex": pl.Float64,
            "amortisation_months": pl.Int64,
            "power_price_per_kwh": pl.Float64,
            "host_overhead_w": pl.Float64,
            "currency": pl.Utf8,
        },
        orient="row",
    )
    sites = {n.site for n in cfg.inventory} | set(cfg.sites)
    settings = pl.DataFrame(
        [_site_settings(cfg, site) for site in sorted(sites)],
        schema={
            "site": pl.Utf8,
            "idle_threshold": pl.Float64,
            "utilization_signal": pl.Utf8,
            "stale_after_seconds": pl.Int64,
            "meter_stale_after_seconds": pl.Int64,
            "reporting_currency": pl.Utf8,
        },
        orient="row",
    )
    meters = pl.DataFrame(
        [(site, m, None, True) for site, ss in cfg.sites.items() for m in ss.it_meters or []]
        + [
            (site, child, parent, None)
            for site, ss in cfg.sites.items()
            for child, parent in ss.meter_parents.items()
        ],
        schema={
            "site": pl.Utf8,
            "meter": pl.Utf8,
            "parent_meter": pl.Utf8,
            "it_total": pl.Boolean,
        },
        orient="row",
    )
    kind_rules = pl.DataFrame(
        [
            (i, r.kind, field, pattern)
            for i, r in enumerate(cfg.kind_rules)
            for field, pattern in (r.match.items() or [("any", ".*")])
        ],
        schema={"priority": pl.Int64, "kind": pl.Utf8, "field": pl.Utf8, "pattern": pl.Utf8},
        orient="row",
    )
    rates = {cfg.reporting_currency: 1.0, **cfg.currency_rates}
    currency_rates = pl.DataFrame(
        list(rates.items()), schema={"currency": pl.Utf8, "rate": pl.Float64}, orient="row"
    )
    budgets = pl.DataFrame(
        [
            (
                b.name,
                b.scope.kind(),
                b.scope.value(),
                b.team,
                b.amount,
                b.currency or cfg.reporting_currency,
                b.period,
                json.dumps(b.thresholds),
                json.dumps(b.basis),
                json.dumps(b.channels),
                b.include_shared_idle,
            )
            for b in cfg.budgets
        ],
        schema={
            "budget": pl.Utf8,
            "scope_kind": pl.Utf8,
            "scope_value": pl.Utf8,
            "team": pl.Utf8,
            "amount": pl.Float64,
            "currency": pl.Utf8,
            "period": pl.Utf8,
            "thresholds": pl.Utf8,
            "basis": pl.Utf8,
            "channels": pl.Utf8,
            "include_shared_idle": pl.Boolean,
        },
        orient="row",
    )
    return {
        "config_inventory": inventory,
        "config_team_rules": team_rules,
        "config_teams": teams,
        "config_rate_cards": rate_cards,
        "config_settings": settings,
        "config_meters": meters,
        "config_kind_rules": kind_rules,
        "config_currency_rates": currency_rates,
        "config_budgets": budgets,
    }


def write_config_tables(cfg: Config, home: Path) -> None:
    for table, df in config_frames(cfg).items():
        _write(Path(home), table, df)


def record_accounted_days(home: Path, days: Iterable[date]) -> list[Path]:
    """Record `days` as accounted (DESIGN.md, "From samples to seconds"): one partition each
    under `raw/accounted_days/pipeline/date=YYYY-MM-DD/`, replaced whole, so recording a day
    again never duplicates it. The hour spine of every day mart is the union of these days."""
    now = datetime.now(UTC)
    written = []
    for day in sorted(set(days)):
        df = pl.DataFrame(
            {
                "day": [day],
                "recorded_at": [now],
                "x_source": ["pipeline"],
                "x_source_file": ["fleetledger run"],
                "x_line_number": [None],
            },
            schema={
                "day": pl.Date,
                "recorded_at": pl.Datetime("us", "UTC"),
                "x_source": pl.Utf8,
                "x_source_file": pl.Utf8,
                "x_line_number": pl.Int64,
            },
        )
        written.append(land(Path(home), "accounted_days", "pipeline", f"date={day}", df))
    return written
