"""`fleetledger alerts [--dry-run]`: what is due, to whom, as a rich table."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fleetledger.alerts.engine import AlertRun, run_alerts
from fleetledger.alerts.inputs import read_warehouse
from fleetledger.config import config_path, load_config
from fleetledger.publish import published_path
from fleetledger.run_lock import home_lock


class NoWarehouse(RuntimeError):
    """The home has no published warehouse yet."""


def alerts_command(home: Path, *, dry_run: bool, lock_timeout: float = 0.0) -> AlertRun:
    """Evaluate on the published warehouse and the state store; send what is due unless
    `dry_run` (which records nothing). Holds the home's lock while it sends."""
    cfg = load_config(config_path(home))
    warehouse = published_path(home)
    if not warehouse.exists():
        raise NoWarehouse(f"{warehouse} does not exist (run `fleetledger run` first)")
    inputs = read_warehouse(warehouse)
    if dry_run:
        return run_alerts(home, inputs, cfg, dry_run=True)
    with home_lock(home, lock_timeout):
        return run_alerts(home, inputs, cfg)


def print_due(run: AlertRun, *, dry_run: bool, out: Console, err: Console) -> None:
    title = "alerts that would be sent (dry run: nothing sent)" if dry_run else "alerts sent"
    table = Table(title=title, title_justify="left")
    for col in ("channel", "to", "notice", "alert", "rule", "team", "amount"):
        table.add_column(col, justify="right" if col == "amount" else "left")
    for d in run.due:
        for rec, notice in d.items:
            table.add_row(
                escape(d.channel + (" (digest)" if d.digest_day else "")),
                escape(d.to),
                notice,
                escape(str(rec["title"])),
                escape(str(rec["rule"])),
                escape(str(rec.get("team") or "-")),
                f"{float(rec['amount']):,.2f} {rec['currency']}",
            )
    if run.due:
        out.print(table)
    else:
        out.print("alerts: nothing is due", highlight=False)
    n_open = int(run.alerts.filter(run.alerts["resolved_at"].is_null()).height)
    out.print(
        f"{run.alerts.height} alerts in the store ({n_open} open); "
        + (
            f"{sum(len(d.items) for d in run.due)} notice(s) due"
            if dry_run
            else f"{run.sent} message(s) sent, {run.failed} failed"
        ),
        highlight=False,
    )
    for f in run.findings:
        err.print(f"[yellow]warning:[/] {escape(f.message)}", highlight=False, soft_wrap=True)


def print_budgets_and_alerts(warehouse: Path, out: Console, *, top: int = 8) -> None:
    """The current period of every budget (fct_budget_status) and the alerts with the most
    money at stake (fct_alerts), read from the published warehouse; a line instead of a table
    when the marts are not there."""
    import duckdb

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        tables = {
            r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()
        }
        if "fct_budget_status" in tables:
            rows = con.execute(
                "select budget, period_start, amount, currency, spend_to_date, data_through, "
                "forecast_period_end, forecast_lo_80, forecast_hi_80, used_share, "
                "thresholds_crossed_actual from fct_budget_status "
                "qualify period_start = max(period_start) over (partition by budget) "
                "order by used_share desc, budget"
            ).fetchall()
            table = Table(title="Budgets (fct_budget_status)", title_justify="left")
            for col in ("budget", "period", "spend to date", "amount", "used", "forecast (80 %)"):
                table.add_column(col, justify="left" if col in ("budget", "period") else "right")
            for b, start, amount, cur, spent, through, fc, lo, hi, used, _crossed in rows:
                forecast = "-" if fc is None else f"{fc:,.0f} ({lo:,.0f} – {hi:,.0f})"
                table.add_row(
                    escape(str(b)),
                    f"{start} → {through}",
                    f"{spent:,.2f} {cur}",
                    f"{amount:,.0f}",
                    f"{used:.0%}",
                    forecast,
                )
            out.print(table)
        if "fct_alerts" not in tables:
            out.print("alerts: no fct_alerts in this warehouse", highlight=False)
            return
        n, n_open = con.execute(
            "select count(*), count(*) filter (where resolved_at is null) from fct_alerts"
        ).fetchone() or (0, 0)
        rows = con.execute(
            "select title, team, amount, currency, resolved_at is null from fct_alerts "
            "order by amount desc, alert_id limit ?",
            [top],
        ).fetchall()
    finally:
        con.close()
    table = Table(
        title=f"Alerts (fct_alerts): {n} raised, {n_open} open; top {min(top, n)} by money",
        title_justify="left",
    )
    for col in ("alert", "team", "at stake", "state"):
        table.add_column(col, justify="right" if col == "at stake" else "left")
    for title, team, amount, cur, is_open in rows:
        table.add_row(
            escape(str(title)),
            escape(str(team or "-")),
            f"{amount:,.2f} {cur}",
            "open" if is_open else "resolved",
        )
    out.print(table)
