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
