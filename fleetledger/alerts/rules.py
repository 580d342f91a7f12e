"""The alert rules (DESIGN.md, "Forecasts, budgets and alerts"; docs/alerts.md), as pure
functions from frames to `Alert`s, so each is tested on hand-made tables.

Each rule says who (team, and the user for a run), what, how much money is at stake (reporting
currency), how fresh the data is and what to do. Periods: budget alerts the period start;
idle_allocation and gpu_down the episode's start (an idle notebook over a weekend is one
episode, so one alert; a node outage is one gpu_down episode of the node, not one per GPU);
xid_spike and spend_anomaly the UTC day; idle_share the calendar month; restatement the billing
period.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import polars as pl

from fleetledger.alerts.model import Alert, money, stamp
from fleetledger.config_alerts import (
    Budget,
    GpuDownRule,
    IdleAllocationRule,
    IdleShareRule,
    RestatementRule,
    SpendAnomalyRule,
    XidSpikeRule,
)

HOUR = timedelta(hours=1)


def _pct(share: float) -> str:
    return f"{100 * share:.1f} %"


# --------------------------------------------------------------------------------------------
# budgets


def budget_alerts(status: pl.DataFrame, budgets: list[Budget]) -> list[Alert]:
    """Thresholds crossed on actual spend (one alert per threshold and period), and a forecast
    alert when the forecast period end's lower 80 % bound is over the amount (open periods)."""
    by_name = {b.name: b for b in budgets}
    out: list[Alert] = []
    for r in status.iter_rows(named=True):
        b = by_name.get(r["budget"])
        if b is None:
            continue
        cur = r["reporting_currency"]
        label = f"{b.period}ly" if b.period == "month" else "quarterly"
        label = "monthly" if b.period == "month" else label
        period = r["period_start"].isoformat()
        budget_words = (
            f"the {label} budget {b.name} ({money(r['amount_reporting'], cur)}, "
            f"{r['scope']}, period from {period})"
        )
        action = (
            "review the scope's most expensive runs and idle GPUs in the explorer; cut spend "
            "or raise the budget before the period ends"
        )
        if "actual" in b.basis:
            for t in r["thresholds_crossed_actual"] or []:
                out.append(
                    Alert(
                        rule=f"budget:{b.name}:actual",
                        kind="budget",
                        subject=r["scope"],
                        period=period,
                        threshold=float(t),
                        amount=float(r["spend_to_date"]),
                        title=f"Budget {b.name}: {_pct(t)} crossed",
                        what=(
                            f"spent {money(r['spend_to_date'], cur)} of {budget_words}: "
                            f"{_pct(r['used_share'])} used, over the {_pct(t)} threshold."
                        ),
                        action=action,
                        data_through=r["data_through"],
                        team=b.team,
                        facts={
                            "spend_to_date": r["spend_to_date"],
                            "budget_amount": r["amount_reporting"],
                            "used_share": r["used_share"],
                        },
                    )
                )
        lo = r["forecast_lo_80"]
        if "forecast" in b.basis and not r["period_complete"] and lo is not None:
            if lo > r["amount_reporting"]:
                out.append(
                    Alert(
                        rule=f"budget:{b.name}:forecast",
                        kind="budget",
                        subject=r["scope"],
                        period=period,
                        threshold=1.0,
                        amount=float(r["forecast_period_end"] - r["amount_reporting"]),
                        title=f"Budget {b.name}: forecast over budget",
                        what=(
                            f"the period is forecast to end at "
                            f"{money(r['forecast_period_end'], cur)} (80 % interval "
                            f"{money(lo, cur)} to {money(r['forecast_hi_80'], cur)}) against "
                            f"{budget_words}; even the lower bound is over it. Spent so far "
                            f"{money(r['spend_to_date'], cur)}."
                        ),
                        action=action,
                        data_through=r["data_through"],
                        team=b.team,
                        facts={
                            "forecast_period_end": r["forecast_period_end"],
                            "forecast_lo_80": lo,
                            "forecast_hi_80": r["forecast_hi_80"],
                            "budget_amount": r["amount_reporting"],
                        },
                    )
                )
    return out


# --------------------------------------------------------------------------------------------
# episodes (idle allocations, GPUs down)


def _episodes(frame: pl.DataFrame, keys: list[str], flag: str) -> pl.DataFrame:
    """Consecutive hours (per `keys`) where `flag` holds, numbered per key as `episode`."""
    return (
        frame.sort([*keys, "hour"])
        .with_columns(
            _prev_hour=pl.col("hour").shift(1).over(keys),
            _prev_flag=pl.col(flag).shift(1).over(keys),
        )
        .with_columns(
            _new=pl.col(flag)
            & (
                pl.col("_prev_flag").is_null()
                | ~pl.col("_prev_flag")
                | ((pl.col("hour") - pl.col("_prev_hour")) != HOUR)
            )
        )
        .with_columns(episode=pl.col("_new").cast(pl.Int64).cum_sum().over(keys))
        .filter(pl.col(flag))
        .drop("_prev_hour", "_prev_flag", "_new")
    )


def idle_allocation_alerts(
    run_hours: pl.DataFrame, rule: IdleAllocationRule, rule_name: str, data_through: date
) -> list[Alert]:
    """One alert per idle episode of a run longer than `min_hours`.

    `run_hours`: `run_id`, `job_name`, `team`, `user_name`, `ended_at`, `hour`,
    `held_seconds`, `allocated_idle_seconds` (GPU-seconds over the run's GPUs) and `cost` of
    the hour. An hour is idle when at least `min_idle_share` of its held GPU-seconds are
    allocated-idle; an episode is a run's consecutive idle hours; it is priced at the cost of
    its hours (cost per hour x hours)."""
    if run_hours.height == 0:
        return []
    last_hour = run_hours.group_by("run_id").agg(pl.col("hour").max().alias("_last"))
    idle = run_hours.with_columns(
        _idle=(pl.col("held_seconds") > 0)
        & (pl.col("allocated_idle_seconds") >= rule.min_idle_share * pl.col("held_seconds"))
    )
    eps = (
        _episodes(idle, ["run_id"], "_idle")
        .group_by(["run_id", "episode"])
        .agg(
            pl.col("job_name").first(),
            pl.col("team").first(),
            pl.col("user_name").first(),
            pl.col("ended_at").first(),
            pl.col("hour").min().alias("start"),
            pl.col("hour").max().alias("last"),
            pl.len().alias("hours"),
            (pl.col("held_seconds").max() / 3600.0).alias("gpus"),
            (pl.col("allocated_idle_seconds").sum() / 3600.0).alias("idle_gpu_hours"),
            pl.col("cost").sum().alias("cost"),
        )
        .join(last_hour, on="run_id")
        .filter(pl.col("hours") > rule.min_hours)
        .sort(["start", "run_id"])
    )
    out = []
    for r in eps.iter_rows(named=True):
        end = r["last"] + HOUR
        ongoing = r["last"] == r["_last"] and r["ended_at"] is None
        per_hour = r["cost"] / r["hours"]
        name = r["job_name"] or r["run_id"]
        out.append(
            Alert(
                rule=f"idle_allocation:{rule_name}",
                kind="idle_allocation",
                subject=r["run_id"],
                period=_iso(r["start"]),
                threshold=float(rule.min_hours),
                amount=float(r["cost"]),
                title=f"Idle allocation: {name}",
                what=(
                    f"run {r['run_id']} ({name}) held {r['gpus']:.0f} GPU(s) at about 0 % "
                    f"utilisation for {r['hours']} h from {stamp(r['start'])}"
                    + ("" if ongoing else f" to {stamp(end)}")
                    + f" ({r['idle_gpu_hours']:.1f} idle GPU-hours), at "
                    f"{per_hour:,.2f} an hour."
                ),
                action=(
                    "stop the notebook or job, or release its GPUs, when it is not computing; "
                    "set an idle timeout on interactive sessions"
                ),
                data_through=data_through,
                team=r["team"],
                user_name=r["user_name"],
                facts={
                    "hours": r["hours"],
                    "idle_gpu_hours": r["idle_gpu_hours"],
                    "cost_per_hour": per_hour,
                },
                condition_ended_at=None if ongoing else end,
            )
        )
    return out


def gpu_down_alerts(
    gpu_hours: pl.DataFrame, rule: GpuDownRule, rule_name: str, data_through: date
) -> list[Alert]:
    """One alert per node and down episode: consecutive hours in which any GPU of the node has
    down seconds, raised when the node's longest-down GPU in the episode was down for more
    than `min_hours` (the sum of its down seconds there). A node outage that takes all 8 GPUs
    down is one alert, not eight: subject the host, period the episode's first hour, the GPUs
    listed in the message, amount the cost of every GPU's down seconds in the episode.
    `gpu_hours`: `gpu_uuid`, `host`, `gpu_index`, `hour`, `down_seconds`, `cost` (the GPU's
    cost of the hour)."""
    if gpu_hours.height == 0:
        return []
    last_hour = gpu_hours.group_by("host").agg(pl.col("hour").max().alias("_last"))
    node_hours = (
        gpu_hours.group_by(["host", "hour"])
        .agg(
            pl.col("down_seconds").max().alias("max_down"),
            (pl.col("cost") * pl.col("down_seconds") / 3600.0).sum().alias("cost"),
        )
        .with_columns(_down=pl.col("max_down") > 0)
    )
    eps = _episodes(node_hours, ["host"], "_down")
    spans = eps.group_by(["host", "episode"]).agg(
        pl.col("hour").min().alias("start"),
        pl.col("hour").max().alias("last"),
        pl.col("max_down").sort_by("hour").last().alias("last_down"),
        pl.col("cost").sum().alias("cost"),
    )
    # each GPU's down hours inside its node's episode
    per_gpu = (
        gpu_hours.filter(pl.col("down_seconds") > 0)
        .join(eps.select("host", "hour", "episode"), on=["host", "hour"])
        .group_by(["host", "episode", "gpu_index", "gpu_uuid"])
        .agg((pl.col("down_seconds").sum() / 3600.0).alias("down_hours"))
        .sort(["host", "episode", "gpu_index"])
        .group_by(["host", "episode"], maintain_order=True)
        .agg(
            pl.col("gpu_index"),
            pl.col("gpu_uuid"),
            pl.col("down_hours").max().alias("down_hours"),
            pl.col("down_hours").sum().alias("gpu_down_hours"),
        )
    )
    found = (
        spans.join(per_gpu, on=["host", "episode"])
        .join(last_hour, on="host")
        .filter(pl.col("down_hours") > rule.min_hours)
        .sort(["start", "host"])
    )
    out = []
    for r in found.iter_rows(named=True):
        ongoing = r["last"] == r["_last"] and r["last_down"] >= 3600
        end = r["last"] + timedelta(seconds=float(r["last_down"]))
        gpus = ", ".join(str(i) for i in r["gpu_index"])
        n = len(r["gpu_index"])
        which = f"GPU {gpus}" if n == 1 else f"{n} GPUs ({gpus})"
        out.append(
            Alert(
                rule=f"gpu_down:{rule_name}",
                kind="gpu_down",
                subject=r["host"],
                period=_iso(r["start"]),
                threshold=float(rule.min_hours),
                amount=float(r["cost"]),
                title=f"GPU down: {r['host']} ({which})",
                what=(
                    f"{r['host']} has had {which} down since {stamp(r['start'])}"
                    + ("" if ongoing else f" (back at {stamp(end)})")
                    + f", the longest for {r['down_hours']:.1f} h "
                    f"({r['gpu_down_hours']:.1f} GPU-hours down in all); their cost runs on "
                    "while they are down."
                ),
                action=(
                    "drain the node, check the XID log and `nvidia-smi -q`, and reset or "
                    "replace the GPU (open a ticket with the provider for a cloud node)"
                ),
                data_through=data_through,
                facts={
                    "down_hours": r["down_hours"],
                    "gpu_down_hours": r["gpu_down_hours"],
                    "gpu_indices": list(r["gpu_index"]),
                    "gpu_uuids": list(r["gpu_uuid"]),
                },
                condition_ended_at=None if ongoing else end,
            )
        )
    return out


def _iso(value: datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------------------------
# daily and monthly rules


def idle_share_alerts(
    team_daily: pl.DataFrame, rule: IdleShareRule, rule_name: str, data_through: date
) -> list[Alert]:
    """A team whose allocated-idle share of its held GPU-hours in a calendar month is over
    `max_share`. `team_daily`: `day`, `team`, `busy_gpu_hours`, `allocated_idle_gpu_hours`,
    `allocated_idle_cost`; priced at the month's allocated-idle cost."""
    if team_daily.height == 0:
        return []
    months = (
        team_daily.filter(pl.col("team").is_not_null())
        .with_columns(month=pl.col("day").dt.strftime("%Y-%m"))
        .group_by(["team", "month"])
        .agg(
            pl.col("busy_gpu_hours").sum().alias("busy"),
            pl.col("allocated_idle_gpu_hours").sum().alias("idle"),
            pl.col("allocated_idle_cost").fill_null(0.0).sum().alias("cost"),
        )
        .filter((pl.col("busy") + pl.col("idle")) > 0)
        .with_columns(share=pl.col("idle") / (pl.col("busy") + pl.col("idle")))
        .filter(pl.col("share") > rule.max_share)
        .sort(["month", "team"])
    )
    return [
        Alert(
            rule=f"idle_share:{rule_name}",
            kind="idle_share",
            subject=f"team:{r['team']}",
            period=r["month"],
            threshold=float(rule.max_share),
            amount=float(r["cost"]),
            title=f"Idle share: team {r['team']} at {_pct(r['share'])}",
            what=(
                f"in {r['month']} team {r['team']} held {r['busy'] + r['idle']:,.1f} GPU-hours "
                f"of which {r['idle']:,.1f} ({_pct(r['share'])}) sat allocated but idle, over "
                f"the {_pct(rule.max_share)} limit."
            ),
            action=(
                "find the team's idle runs in the explorer (Idle GPU-hours by run) and right-size "
                "or stop them; set idle timeouts on notebooks"
            ),
            data_through=data_through,
            team=r["team"],
            facts={"idle_share": r["share"], "idle_gpu_hours": r["idle"]},
        )
        for r in months.iter_rows(named=True)
    ]


def xid_spike_alerts(
    health: pl.DataFrame, rule: XidSpikeRule, rule_name: str, data_through: date
) -> list[Alert]:
    """A node whose XID count on a UTC day is over `factor` x its trailing baseline (the mean
    daily count of the `baseline_days` days before it, the days the node has rows for; a node's
    first day has no baseline and is not judged) AND large enough to matter: at least
    `min_count` XIDs, or at least `fatal_min_count` fatal ones. A single stray XID on a clean
    node (baseline 0) is over the baseline but under `min_count` (2): no alert; a GPU falling
    off the bus (one XID 79) is fatal: an alert. `health`: `day`, `host`, `xid_count`,
    `fatal_xid_count` (optional: 0 when absent), `down_cost` (the node's down GPU-hours' cost
    that day)."""
    if health.height == 0:
        return []
    if "fatal_xid_count" not in health.columns:
        health = health.with_columns(fatal_xid_count=pl.lit(0, dtype=pl.Int64))
    h = health.sort(["host", "day"]).with_columns(
        baseline=pl.col("xid_count")
        .cast(pl.Float64)
        .shift(1)
        .rolling_mean(window_size=rule.baseline_days, min_samples=1)
        .over("host")
    )
    enough = pl.col("xid_count") >= rule.min_count
    if rule.fatal_min_count is not None:
        enough = enough | (pl.col("fatal_xid_count").fill_null(0) >= rule.fatal_min_count)
    spikes = h.filter(
        pl.col("baseline").is_not_null()
        & enough
        & (pl.col("xid_count") > rule.factor * pl.col("baseline"))
    ).sort(["day", "host"])
    return [
        Alert(
            rule=f"xid_spike:{rule_name}",
            kind="xid_spike",
            subject=r["host"],
            period=r["day"].isoformat(),
            threshold=float(rule.factor),
            amount=float(r["down_cost"] or 0.0),
            title=f"XID spike: {r['host']}",
            what=(
                f"{r['host']} reported {r['xid_count']} XID errors on {r['day']}, over "
                f"{rule.factor:g} x its trailing baseline of {r['baseline']:.2f} a day (the mean "
                f"of up to {rule.baseline_days} days before)"
                + (f", {r['fatal_xid_count']} of them fatal." if r["fatal_xid_count"] else ".")
            ),
            action=(
                "look at the node's XID codes in the explorer (fleet health); drain it if they "
                "are fatal (79, 48, 94, 95) and open a hardware ticket"
            ),
            data_through=data_through,
            facts={
                "xid_count": r["xid_count"],
                "fatal_xid_count": r["fatal_xid_count"],
                "baseline": r["baseline"],
            },
        )
        for r in spikes.iter_rows(named=True)
    ]


def spend_anomaly_alerts(
    forecast: pl.DataFrame | None,
    spend: pl.DataFrame,
    rule: SpendAnomalyRule,
    rule_name: str,
    data_through: date,
) -> list[Alert]:
    """A day's spend of a team or a service outside the 99 % band of the forecast trained
    through the day before, and more than `min_impact` away from its `yhat`, naming the largest
    contributor: for a team the service, for a service the team, whose spend moved most against
    its mean of the 7 days before. `spend`: `day`, `team`, `service`, `cost`."""
    if forecast is None or forecast.height == 0:
        return []
    rows = forecast.filter(
        (pl.col("series") == "spend")
        & (pl.col("scope").str.starts_with("team:") | pl.col("scope").str.starts_with("service:"))
        & ~pl.col("scope").str.ends_with("+shared_idle")
        & pl.col("actual").is_not_null()
        & (pl.col("trained_through") == pl.col("day") - pl.duration(days=1))
        & ((pl.col("actual") < pl.col("lo_99")) | (pl.col("actual") > pl.col("hi_99")))
        & ((pl.col("actual") - pl.col("yhat")).abs() > rule.min_impact)
    ).sort(["day", "scope"])
    out = []
    for r in rows.iter_rows(named=True):
        kind, value = r["scope"].split(":", 1)
        other = "service" if kind == "team" else "team"
        contributor, delta = _largest_contributor(spend, kind, value, other, r["day"])
        impact = float(r["actual"] - r["yhat"])
        direction = "above" if impact > 0 else "below"
        named = (
            f" The largest contributor is {other} {contributor} ({delta:+,.2f} against its "
            "mean of the 7 days before)."
            if contributor is not None
            else ""
        )
        out.append(
            Alert(
                rule=f"spend_anomaly:{rule_name}",
                kind="spend_anomaly",
                subject=r["scope"],
                period=r["day"].isoformat(),
                threshold=float(rule.min_impact),
                amount=impact,
                title=f"Spend anomaly: {kind} {value} on {r['day']}",
                what=(
                    f"{kind} {value} spent {r['actual']:,.2f} on {r['day']}, {abs(impact):,.2f} "
                    f"{direction} the forecast {r['yhat']:,.2f} (99 % band {r['lo_99']:,.2f} to "
                    f"{r['hi_99']:,.2f}, trained through {r['trained_through']}).{named}"
                ),
                action=(
                    "check what changed that day (new runs, instance types, a purchase or "
                    "credit); if it is expected, nothing: the forecast learns it"
                ),
                data_through=data_through,
                team=value if kind == "team" else None,
                facts={"actual": r["actual"], "yhat": r["yhat"], "contributor": contributor},
            )
        )
    return out


def _largest_contributor(
    spend: pl.DataFrame, kind: str, value: str, other: str, day: date
) -> tuple[str | None, float]:
    rows = spend.filter(
        (pl.col(kind) == value)
        & (pl.col("day") <= day)
        & (pl.col("day") >= day - timedelta(days=7))
    )
    if rows.height == 0:
        return None, 0.0
    by = rows.group_by([other, "day"]).agg(pl.col("cost").sum())
    today = by.filter(pl.col("day") == day).select(other, pl.col("cost").alias("today"))
    before = (
        by.filter(pl.col("day") < day)
        .group_by(other)
        .agg((pl.col("cost").sum() / 7.0).alias("before"))
    )
    moved = (
        today.join(before, on=other, how="full", coalesce=True)
        .with_columns(delta=pl.col("today").fill_null(0.0) - pl.col("before").fill_null(0.0))
        .filter(pl.col(other).is_not_null())
        .sort([pl.col("delta").abs(), pl.col(other)], descending=[True, False])
    )
    if moved.height == 0:
        return None, 0.0
    top = moved.row(0, named=True)
    return str(top[other]), float(top["delta"])


def restatement_alerts(
    restatements: pl.DataFrame,
    rule: RestatementRule,
    rule_name: str,
    data_through: date,
    currency_rates: dict[str, float],
    reporting_currency: str,
) -> list[Alert]:
    """A restating delivery that moves a provider's EffectiveCost of a billing period by more
    than `min_share` of the earlier delivery's total, naming the delivery and the services that
    moved. `restatements`: fct_billing_restatements (`provider`, `billing_period`,
    `delivery_id`, `service_name`, `billing_currency`, `old_effective_cost`,
    `new_effective_cost`)."""
    if restatements.height == 0:
        return []
    rates = {**currency_rates, reporting_currency: 1.0}
    conv = restatements.with_columns(
        _rate=pl.col("billing_currency").replace_strict(
            rates, default=None, return_dtype=pl.Float64
        )
    ).filter(pl.col("_rate").is_not_null())
    keys = ["provider", "billing_period", "delivery_id"]
    totals = (
        conv.with_columns(
            old=pl.col("old_effective_cost") * pl.col("_rate"),
            new=pl.col("new_effective_cost") * pl.col("_rate"),
        )
        .group_by(keys)
        .agg(
            pl.col("old").sum(),
            pl.col("new").sum(),
            pl.struct(pl.col("service_name"), (pl.col("new") - pl.col("old")).alias("change")),
        )
        .with_columns(change=pl.col("new") - pl.col("old"))
        .filter(
            (pl.col("old").abs() > 0)
            & ((pl.col("change").abs() / pl.col("old").abs()) > rule.min_share)
        )
        .sort(keys)
    )
    out = []
    for r in totals.iter_rows(named=True):
        moved = sorted(
            (s for s in r["service_name"] if abs(s["change"]) >= 0.005),
            key=lambda s: -abs(s["change"]),
        )
        services = ", ".join(f"{s['service_name']} {s['change']:+,.2f}" for s in moved[:5])
        share = r["change"] / abs(r["old"])
        period = str(r["billing_period"])
        out.append(
            Alert(
                rule=f"restatement:{rule_name}",
                kind="restatement",
                subject=f"{r['provider']}:{r['delivery_id']}",
                period=period,
                threshold=float(rule.min_share),
                amount=float(r["change"]),
                title=f"Restated bill: {r['provider']} {period}",
                what=(
                    f"delivery {r['delivery_id']} restated {r['provider']}'s billing period "
                    f"{period} from {r['old']:,.2f} to {r['new']:,.2f} ({share:+.1%}); services "
                    f"that moved: {services or 'none over 0.01'}."
                ),
                action=(
                    "numbers reported for this period have changed: re-check reports and "
                    "chargebacks sent from it (fct_billing_restatements explains the change)"
                ),
                data_through=data_through,
                facts={"old_total": r["old"], "new_total": r["new"], "share": share},
            )
        )
    return out
