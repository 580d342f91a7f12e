"""`fleetledger` command line: generate | run | demo | app | forecast | alerts | bench."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import warnings
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from fleetledger.config import ConfigError, fleetledger_home
from fleetledger.dagster_home import dagster_home
from fleetledger.run_lock import HomeLocked

REPO_ROOT = Path(__file__).resolve().parents[1]
APP_MAIN = REPO_ROOT / "app" / "main.py"

DEMO_SEED = 7
DEMO_SCRAPE_INTERVAL_S = 60

out = Console()
err = Console(stderr=True)


class CliError(Exception):
    """A user error the CLI reports on stderr with exit status 1."""


# exit statuses of `fleetledger run` / `demo` (docs/operations.md, "Exit status")
EXIT_OK = 0
EXIT_ERROR = 1  # a config error, a failed asset or blocking check, a source that cannot be read
EXIT_DATA_LOSS = 3  # the run published, but with `data_loss` findings (--accept-warnings)
EXIT_LOCKED = 75  # another run holds $FLEETLEDGER_HOME (EX_TEMPFAIL: try again later)
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM: the dbt child was stopped, nothing was published
#: info findings printed per source and check (the rest are in fct_data_health)
INFO_LINES = 5


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {value}")
    return value


def _yesterday() -> date:
    return datetime.now(UTC).date() - timedelta(days=1)


def _home(args: argparse.Namespace) -> Path:
    if getattr(args, "home", None):
        return Path(args.home).resolve()
    return fleetledger_home()


# --------------------------------------------------------------------------------------------
# generate


def _generate(out_dir: Path, days: int, seed: int, start: date, scrape_interval_s: int) -> None:
    # deferred: the CLI starts fast (`--help`, `app`); the generator loads when it is used
    from fleetledger.generator import generate

    with err.status(f"generating a {days}-day fleet (seed {seed}) in {out_dir} ..."):
        generate(out_dir, days=days, seed=seed, start=start, scrape_interval_s=scrape_interval_s)


def cmd_generate(args: argparse.Namespace) -> int:
    start = args.start or (_yesterday() - timedelta(days=args.days - 1))
    out_dir = Path(args.out).resolve()
    _generate(out_dir, args.days, args.seed, start, args.scrape_interval)
    end = start + timedelta(days=args.days - 1)
    out.print(f"wrote {out_dir}/fleetledger.yml and sources for {start}..{end}")
    out.print(
        f"next: FLEETLEDGER_HOME={out_dir} fleetledger run --start {start} --end {end}",
        highlight=False,
        soft_wrap=True,
    )
    return 0


# --------------------------------------------------------------------------------------------
# run


def _run_pipeline(
    home: Path,
    start: date,
    end: date,
    sources: list[str] | None,
    allow_shrink: list[str] | None = None,
    lock_timeout: float = 0.0,
    full_refresh: bool = False,
) -> Any:
    # deferred: a run loads Dagster and dbt (seconds); other commands do not need them
    from fleetledger.pipeline import run_pipeline

    with err.status(f"running the pipeline for {start}..{end} ...") as status:

        def progress(message: str) -> None:
            status.update(f"[{start}..{end}] {message}")

        return run_pipeline(
            home,
            start,
            end,
            sources,
            progress=progress,
            allow_shrink=allow_shrink,
            lock_timeout=lock_timeout,
            full_refresh=full_refresh,
        )


def _count(meta: dict[str, Any], *names: str) -> str:
    for name in names:
        value = meta.get(name)
        if isinstance(value, int | float):
            return f"{value:,}"
    return ""


def _print_run_summary(result: Any) -> None:
    table = Table(title=f"ingested {result.start}..{result.end}", title_justify="left")
    for col in ("source", "kind", "table", "rows", "quarantined", "files"):
        table.add_column(
            col, justify="right" if col in ("rows", "quarantined", "files") else "left"
        )
    for name, meta in sorted(result.ingest.items()):
        table.add_row(
            name,
            str(meta.get("kind", "")),
            str(meta.get("table", "")),
            _count(meta, "rows_landed", "rows"),
            _count(meta, "rows_quarantined", "quarantined"),
            _count(meta, "files_read_count", "files_count"),
        )
    if result.ingest:
        out.print(table)
    failed = result.checks_failed
    out.print(
        f"{len(result.materialized)} assets materialised, {result.checks_passed}/"
        f"{len(result.checks)} checks passed in {result.duration_s:.1f} s",
        highlight=False,
        soft_wrap=True,
    )
    for check in failed:
        err.print(f"[yellow]warning:[/] {check.severity.lower()} {check} did not pass")
    if result.full_refresh:
        out.print(f"full refresh: {result.full_refresh}", highlight=False, soft_wrap=True)
        if result.day_batches:
            out.print(
                f"the sample-grain day models built in {len(result.day_batches)} batches of "
                f"days, from {', '.join(d.isoformat() for d in result.day_batches)}",
                highlight=False,
                soft_wrap=True,
            )
    else:
        span = result.recomputed
        first, last = (span.first, span.last) if span else (result.start, result.end)
        out.print(f"incremental: recomputed {first}..{last}", highlight=False)
    if result.published:
        out.print(f"published {result.published}", highlight=False)
    _print_data_health(result.health)


_SEVERITY_STYLE = {"error": "bold red", "data_loss": "red", "warning": "yellow", "info": "dim"}


def _print_data_health(findings: list[Any]) -> None:
    """What the run found (its fct_data_health rows): a table of findings per source, severity
    and check, then one line per finding: warnings and worse on stderr, every one of them; info
    lines on stdout, dimmed, at most INFO_LINES per source and check."""
    from rich.markup import escape

    from fleetledger.data_health import check_base, summary

    rows = summary(findings)
    if not rows:
        out.print("data health: no findings", highlight=False)
        return
    table = Table(title="data health (fct_data_health)", title_justify="left")
    for col in ("source", "severity", "check", "findings", "count"):
        table.add_column(col, justify="right" if col in ("findings", "count") else "left")
    for r in rows:
        style = _SEVERITY_STYLE.get(r.severity, "")
        table.add_row(
            escape(r.source),
            f"[{style}]{r.severity}[/]" if style else r.severity,
            escape(r.check),
            f"{r.findings:,}",
            f"{r.count:,}",
        )
    out.print(table)
    shown: dict[tuple[str, str], int] = {}
    hidden = 0
    for f in findings:
        line = escape(f"[{f.source}{' ' + str(f.day) if f.day else ''}] {f.message}")
        if f.severity != "info":
            style = _SEVERITY_STYLE.get(f.severity, "yellow")
            err.print(f"[{style}]{f.severity}:[/] {line}", highlight=False, soft_wrap=True)
            continue
        key = (f.source, check_base(f.check))
        shown[key] = shown.get(key, 0) + 1
        if shown[key] <= INFO_LINES:
            out.print(f"[dim]data health: {line}[/]", highlight=False, soft_wrap=True)
        else:
            hidden += 1
    if hidden:
        out.print(
            f"[dim]data health: {hidden} more info findings in fct_data_health[/]",
            highlight=False,
        )


def exit_status(findings: list[Any], *, accept_warnings: bool) -> int:
    """The exit status of a run that published (docs/operations.md, "Exit status"): 1 with
    `error` findings, 3 with `data_loss` findings unless accepted, else 0; says why on stderr."""
    from rich.markup import escape

    from fleetledger.data_health import blocking_findings, check_base, error_findings

    errors = error_findings(findings)
    if errors:
        names = ", ".join(sorted({f"{f.source}: {check_base(f.check)}" for f in errors}))
        err.print(f"error: {len(errors)} error findings ({escape(names)})", highlight=False)
        return EXIT_ERROR
    lost = blocking_findings(findings)
    if not lost:
        return EXIT_OK
    names = ", ".join(sorted({f"{f.source}: {check_base(f.check)}" for f in lost}))
    if accept_warnings:
        err.print(
            f"accepted {len(lost)} data_loss findings ({escape(names)}) (--accept-warnings)",
            highlight=False,
            soft_wrap=True,
        )
        return EXIT_OK
    err.print(
        f"error: the run published, but {len(lost)} findings say rows the sources hold are in "
        f"no mart (data_loss: {escape(names)}); fix the input (see docs/operations.md) or "
        "rerun with --accept-warnings to accept them (exit status 3)",
        highlight=False,
        soft_wrap=True,
    )
    return EXIT_DATA_LOSS


def cmd_run(args: argparse.Namespace) -> int:
    if args.date and (args.start or args.end):
        raise CliError("use either --date D or --start D1 --end D2")
    if args.date:
        start = end = args.date
    elif args.start or args.end:
        if not (args.start and args.end):
            raise CliError("--start and --end go together")
        start, end = args.start, args.end
    else:
        start = end = _yesterday()
    result = _run_pipeline(
        _home(args),
        start,
        end,
        args.source,
        args.allow_shrink,
        args.lock_timeout,
        args.full_refresh,
    )
    _print_run_summary(result)
    return exit_status(result.health, accept_warnings=args.accept_warnings)


# --------------------------------------------------------------------------------------------
# demo


def _prepare_demo_home(home: Path) -> None:
    """The demo regenerates its home; refuse to touch a home that is not a demo's."""
    if not home.exists() or not any(home.iterdir()):
        return
    if (home / "fleetledger.yml").exists() and not (home / "ground_truth.json").exists():
        raise CliError(
            f"{home} holds a fleetledger.yml that the demo did not write; set FLEETLEDGER_HOME "
            "to another directory for the demo"
        )
    if not (home / "fleetledger.yml").exists():
        raise CliError(f"{home} is not empty and not a fleetledger home; choose another directory")
    for name in ("sources", "raw", "build"):
        shutil.rmtree(home / name, ignore_errors=True)


def _short(value: Any, width: int) -> str:
    text = str(value)
    return text if len(text) <= width else f"{text[: width - 1]}…"


def _money(value: Any) -> str:
    return "-" if value is None else f"${float(value):,.2f}"


def _hours(value: Any) -> str:
    return "-" if value is None else f"{float(value):,.1f}"


def print_headlines(warehouse: Path, console: Console | None = None) -> None:
    """Headline figures from the published warehouse, through the query layer
    (fleetledger/queries.py: every number comes from a mart)."""
    # deferred: the query layer opens DuckDB; only the summary needs it
    from fleetledger import queries as q

    console = console or out
    with q.connect(warehouse) as con:
        spend = q.spend_by_provider_total(con)
        gpu = q.gpu_hours_paid(con).iloc[0]
        idle = q.idle_totals(con)
        n_runs = q.run_count(con)
        top = q.most_expensive_runs(con, 5)
        pue = q.pue_by_site(con)
        failed = q.failures(con).iloc[0]
        health = q.fleet_health(con).iloc[0]

    t = Table(title="Spend by provider", title_justify="left")
    t.add_column("provider")
    t.add_column("effective cost", justify="right")
    for r in spend.itertuples():
        t.add_row(str(r.provider), _money(r.effective_cost))
    t.add_row("[bold]total[/]", f"[bold]{_money(float(spend['effective_cost'].sum()))}[/]")
    console.print(t)

    gpu_hours, gpu_cost = float(gpu["gpu_hours"]), gpu["cost"]
    t = Table(title="GPU-hours", title_justify="left")
    t.add_column("")
    t.add_column("GPU-hours", justify="right")
    t.add_column("cost", justify="right")
    t.add_column("share of cost", justify="right")
    cost_total = float(gpu_cost or 0)

    def share(cost: float) -> str:
        return f"{100 * cost / cost_total:.1f}%" if cost_total else "-"

    t.add_row("paid for (all GPUs)", _hours(gpu_hours), _money(gpu_cost), share(cost_total))
    for r in idle.itertuples():
        t.add_row(f"idle: {r.cause}", _hours(r.gpu_hours), _money(r.cost), share(r.cost or 0))
    idle_hours, idle_cost = float(idle["gpu_hours"].sum()), float(idle["cost"].sum())
    t.add_row(
        "[bold]idle, all causes[/]",
        f"[bold]{_hours(idle_hours)}[/]",
        f"[bold]{_money(idle_cost)}[/]",
        share(idle_cost),
    )
    console.print(t)

    t = Table(title=f"Top 5 of {n_runs} runs by cost", title_justify="left")
    for col in ("run", "name", "team", "kind", "state", "GPU-hours", "cost"):
        t.add_column(col, justify="right" if col in ("GPU-hours", "cost") else "left")
    for r in top.itertuples():
        t.add_row(
            _short(r.run_id, 30),
            _short(r.job_name, 22),
            str(r.team),
            str(r.kind),
            str(r.state),
            _hours(r.gpu_hours),
            _money(r.cost),
        )
    console.print(t)

    t = Table(title="PUE by site", title_justify="left")
    t.add_column("site")
    t.add_column("PUE", justify="right")
    t.add_column("IT energy")
    for r in pue.itertuples():
        t.add_row(
            str(r.site),
            "-" if r.pue is None or r.pue != r.pue else f"{float(r.pue):.3f}",
            "estimated" if r.estimated else "metered",
        )
    console.print(t)

    t = Table(title="Failures and fleet health", title_justify="left")
    t.add_column("")
    t.add_column("value", justify="right")
    t.add_row(
        f"failed runs ({int(failed['with_checkpoint'])} with a checkpoint in their logs)",
        f"{int(failed['runs']):,}",
    )
    t.add_row("  their cost", _money(failed["cost"]))
    t.add_row(
        "  work lost (since the last checkpoint, else the whole run)",
        _money(failed["lost_work_cost"]),
    )
    t.add_row("node downtime", f"{_hours(health['downtime_hours'])} h")
    t.add_row("XIDs (fatal)", f"{int(health['xids']):,} ({int(health['fatal_xids']):,})")
    t.add_row("thermal throttling", f"{_hours(health['thermal_throttle_gpu_hours'])} GPU-h")
    t.add_row(
        "ECC errors (single + double bit) / remapped rows",
        f"{int(health['ecc_errors']):,} / {int(health['remapped_rows']):,}",
    )
    t.add_row("straggler GPUs", f"{int(health['straggler_gpus']):,}")
    console.print(t)


def _print_forecasts_and_alerts(warehouse: Path) -> None:
    """The demo's last sections: the headline forecast and runway, the budgets and the alerts
    (sent to the log only: the demo config has no channels)."""
    from fleetledger.alerts.console import print_budgets_and_alerts
    from fleetledger.forecasting.report import ForecastUnavailable, print_forecast

    out.rule("forecasts, budgets and alerts")
    try:
        print_forecast(warehouse, out)
    except ForecastUnavailable as e:
        out.print(f"forecasts: {e}", highlight=False)
    print_budgets_and_alerts(warehouse, out)
    out.print(
        "`fleetledger alerts --dry-run` shows what would be sent and to whom; add channels "
        "(docs/alerts.md) to send them",
        highlight=False,
    )


def cmd_demo(args: argparse.Namespace) -> int:
    home = _home(args)
    days: int = args.days
    end = _yesterday()
    start = end - timedelta(days=days - 1)
    _prepare_demo_home(home)
    home.mkdir(parents=True, exist_ok=True)
    out.rule(f"fleetledger demo: {days} days of a generated GPU fleet ({start}..{end})")
    _generate(home, days, DEMO_SEED, start, DEMO_SCRAPE_INTERVAL_S)
    out.print(f"generated the fleet's sources in {home}/sources", highlight=False)
    result = _run_pipeline(home, start, end, None, args.lock_timeout)
    _print_run_summary(result)
    warehouse = result.published or (home / "warehouse.duckdb")
    out.rule("headlines")
    print_headlines(warehouse)
    _print_forecasts_and_alerts(warehouse)
    env = (
        ""
        if args.home is None and "FLEETLEDGER_HOME" not in os.environ
        else (f"FLEETLEDGER_HOME={home} ")
    )
    out.print("\nexplore it:", highlight=False)
    out.print(f"  {env}.venv/bin/fleetledger app", highlight=False, soft_wrap=True)
    out.print(
        f"  DAGSTER_HOME={dagster_home(home)} {env}.venv/bin/dagster dev"
        "      # the asset graph, this run and its checks",
        highlight=False,
        soft_wrap=True,
    )
    # the demo fleet has no data loss by design: a finding here is a regression
    return exit_status(result.health, accept_warnings=False)


# --------------------------------------------------------------------------------------------
# app, alerts, bench


def cmd_app(args: argparse.Namespace) -> int:
    home = _home(args)
    if not APP_MAIN.exists():
        raise CliError(f"{APP_MAIN} does not exist")
    if not (home / "warehouse.duckdb").exists():
        err.print(
            f"[yellow]warning:[/] {home}/warehouse.duckdb does not exist yet "
            "(run `fleetledger demo` or `fleetledger run` first)"
        )
    env = {**os.environ, "FLEETLEDGER_HOME": str(home)}
    extra = list(args.streamlit_args)
    if extra[:1] == ["--"]:
        extra = extra[1:]
    cmd = [sys.executable, "-m", "streamlit", "run", str(APP_MAIN), *extra]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, cmd, env)  # streamlit takes over the process (and Ctrl-C)


def cmd_bench(args: argparse.Namespace) -> int:
    """`python -m benchmarks.scale`: the scale benchmark, with the DCGM text parse as one of
    its stages (benchmarks/ lives beside the package, not in it; docs/performance.md)."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    try:
        from benchmarks.scale import main as bench_main
    except ImportError as e:
        raise CliError(f"benchmarks are not available here ({e}); run from a checkout") from None
    extra = list(args.bench_args)
    if extra[:1] == ["--"]:
        extra = extra[1:]
    return bench_main(extra)


def cmd_forecast(args: argparse.Namespace) -> int:
    """The headline forecast and runway from the published warehouse (docs/forecasts.md)."""
    from fleetledger.forecasting.report import ForecastUnavailable, print_forecast
    from fleetledger.publish import published_path

    try:
        print_forecast(published_path(_home(args)), out)
    except ForecastUnavailable as e:
        raise CliError(str(e)) from None
    return EXIT_OK


def cmd_alerts(args: argparse.Namespace) -> int:
    """Evaluate the published warehouse's budgets and rules; send what is due (docs/alerts.md)."""
    from fleetledger.alerts.console import NoWarehouse, alerts_command, print_due

    try:
        run = alerts_command(_home(args), dry_run=args.dry_run, lock_timeout=args.lock_timeout)
    except NoWarehouse as e:
        raise CliError(str(e)) from None
    print_due(run, dry_run=args.dry_run, out=out, err=err)
    return EXIT_OK


# --------------------------------------------------------------------------------------------


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {value}")
    return value


def _lock_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lock-timeout",
        type=_seconds,
        default=0.0,
        metavar="SEC",
        help="wait up to SEC seconds for another run on the same home to finish (default 0: "
        f"exit at once with status {EXIT_LOCKED})",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fleetledger",
        description="FinOps and utilization warehouse for GPU fleets.",
    )
    home_help = "FLEETLEDGER_HOME (default: $FLEETLEDGER_HOME, else ./data)"
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("generate", help="write a synthetic fleet: config and source files")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--days", type=_positive_int, default=30, metavar="N", help="default 30")
    p.add_argument("--seed", type=int, default=DEMO_SEED, metavar="S", help="default 7")
    p.add_argument(
        "--start", type=_date, metavar="D", help="first day (default: N days ending yesterday)"
    )
    p.add_argument(
        "--scrape-interval",
        type=_positive_int,
        default=DEMO_SCRAPE_INTERVAL_S,
        metavar="SEC",
        help="DCGM scrape interval in seconds (default 60)",
    )
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser(
        "run", help="ingest, build, check and publish for a day or a range (one Dagster run)"
    )
    p.add_argument("--date", type=_date, metavar="D", help="one day (default: yesterday, UTC)")
    p.add_argument("--start", type=_date, metavar="D1", help="first day of a range")
    p.add_argument("--end", type=_date, metavar="D2", help="last day of a range (inclusive)")
    p.add_argument(
        "--source",
        action="append",
        metavar="NAME",
        help="only this configured source (repeatable); dbt build and publish still run",
    )
    p.add_argument(
        "--allow-shrink",
        action="append",
        metavar="NAME",
        help=(
            "this source's partitions may lose landed rows in this run: an emptied billing file "
            "or a drop of more than max_row_drop is landed instead of refused (repeatable)"
        ),
    )
    p.add_argument(
        "--accept-warnings",
        action="store_true",
        help="exit 0 even when the run has data_loss findings (default: exit status 3)",
    )
    p.add_argument(
        "--full-refresh",
        action="store_true",
        help=(
            "rebuild every model from all landed data (default: recompute the days of the range; "
            "a change to a config key a model reads rebuilds everything by itself)"
        ),
    )
    p.add_argument("--home", metavar="DIR", help=home_help)
    _lock_option(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("demo", help="generate a demo fleet, run the pipeline, print headlines")
    p.add_argument("--days", type=_positive_int, default=30, metavar="N", help="default 30")
    p.add_argument("--home", metavar="DIR", help=home_help)
    _lock_option(p)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("app", help="open the Streamlit cost explorer")
    p.add_argument("--home", metavar="DIR", help=home_help)
    p.add_argument("streamlit_args", nargs=argparse.REMAINDER, help="passed on to `streamlit run`")
    p.set_defaults(func=cmd_app)

    p = sub.add_parser(
        "forecast", help="the headline forecast: next 30/90 days' spend and GPU-hours, runway"
    )
    p.add_argument("--home", metavar="DIR", help=home_help)
    p.set_defaults(func=cmd_forecast)

    # every option goes to the benchmark's own parser (`fleetledger bench --help` is its help)
    p = sub.add_parser(
        "bench",
        help="scale benchmark: generate N GPUs x D days, time the pipeline stage by stage "
        "against a pandas baseline and a DuckDB scan (docs/performance.md)",
        prefix_chars="+",
        add_help=False,
    )
    p.add_argument("bench_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser(
        "alerts",
        help="evaluate budgets and alert rules on the published warehouse; send what is due",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="print what would be sent and to whom; send nothing"
    )
    p.add_argument("--home", metavar="DIR", help=home_help)
    _lock_option(p)
    p.set_defaults(func=cmd_alerts)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    global out, err
    # bound now: the pipeline sends what the run prints (sys.stdout/stderr) to its log file
    # piped output (CI logs, README) gets 120 columns rather than rich's default of 80
    out = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 120)
    err = Console(file=sys.stderr)
    warnings.filterwarnings("ignore", module=r"dagster.*")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    args = build_parser().parse_args(argv)
    from fleetledger.pipeline import PipelineError, RunInterrupted

    try:
        return int(args.func(args))
    except ConfigError as e:
        print(str(e), file=sys.stderr)  # as-is: it names the key and the problem
        return EXIT_ERROR
    except HomeLocked as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_LOCKED
    except (PipelineError, CliError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except (KeyboardInterrupt, RunInterrupted) as e:
        err.print(f"interrupted{': ' + str(e) if str(e) else ''}", highlight=False)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
