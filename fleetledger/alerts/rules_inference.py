"""The inference alert rules (docs/alerts.md): `inference_cost_rise` and `inference_slo`, pure
functions from a frame of service-hours to `Alert`s, tested on hand-made tables.

`service_hours`: one row per inference service (`model_name`) and UTC `hour`, all its replicas
together (fct_inference_hourly summed: alerts/inputs.py): `team`, `tokens` (prompt +
generation), `cost` (direct), `gpu_hours`, `mean_utilization` (GPU-hour weighted, 0-1) and
`ttft_p95_s` (the highest of its replicas' hourly TTFT p95). Both rules fire only while the
service's GPUs sit below the rule's `max_utilization`: slow or dear without being busy is waste
or misconfiguration, not load.
"""

from __future__ import annotations

from datetime import date, timedelta

import polars as pl

from fleetledger.alerts.model import Alert, stamp
from fleetledger.alerts.rules import _episodes, _iso, _pct
from fleetledger.config_alerts import InferenceCostRiseRule, InferenceSloRule

HOUR = timedelta(hours=1)


def _weighted_utilization() -> pl.Expr:
    used = pl.col("mean_utilization").is_not_null()
    return (pl.col("gpu_hours") * pl.col("mean_utilization")).filter(used).sum() / pl.col(
        "gpu_hours"
    ).filter(used).sum()


def inference_cost_rise_alerts(
    service_hours: pl.DataFrame, rule: InferenceCostRiseRule, rule_name: str, data_through: date
) -> list[Alert]:
    """A service whose cost per 1M tokens in a calendar week (Monday-Sunday; the last week to
    date) is over (1 + `min_rise`) x the week before's, while the week's GPU-hour weighted
    utilisation is under `max_utilization`. Weeks without tokens are not judged. Priced at
    what the rise cost: (this week's - last week's cost per 1M tokens) x this week's tokens /
    1e6. Period: the week's Monday."""
    if service_hours.height == 0:
        return []
    weeks = (
        service_hours.with_columns(week=pl.col("hour").dt.truncate("1w").dt.date())
        .group_by(["model_name", "week"])
        .agg(
            pl.col("team").drop_nulls().first(),
            pl.col("tokens").sum(),
            pl.col("cost").sum(),
            _weighted_utilization().alias("utilization"),
        )
        .filter(pl.col("tokens") > 0)
        .with_columns(per_1m=pl.col("cost") * 1e6 / pl.col("tokens"))
        .sort(["model_name", "week"])
        .with_columns(
            prev_week=pl.col("week").shift(1).over("model_name"),
            prev_per_1m=pl.col("per_1m").shift(1).over("model_name"),
        )
        .filter(
            (pl.col("prev_week") == pl.col("week") - pl.duration(days=7))
            & (pl.col("prev_per_1m") > 0)
            & (pl.col("per_1m") > (1 + rule.min_rise) * pl.col("prev_per_1m"))
            & (pl.col("utilization") < rule.max_utilization)
        )
        .sort(["week", "model_name"])
    )
    out = []
    for r in weeks.iter_rows(named=True):
        rise = r["per_1m"] / r["prev_per_1m"] - 1
        extra = (r["per_1m"] - r["prev_per_1m"]) * r["tokens"] / 1e6
        out.append(
            Alert(
                rule=f"inference_cost_rise:{rule_name}",
                kind="inference_cost_rise",
                subject=f"service:{r['model_name']}",
                period=r["week"].isoformat(),
                threshold=float(rule.min_rise),
                amount=float(extra),
                title=f"Inference cost rise: {r['model_name']} up {_pct(rise)}",
                what=(
                    f"{r['model_name']} cost {r['per_1m']:,.4f} per 1M tokens in the week from "
                    f"{r['week']}, up {_pct(rise)} from {r['prev_per_1m']:,.4f} the week "
                    f"before (over the {_pct(rule.min_rise)} limit), while its GPUs averaged "
                    f"{_pct(r['utilization'])} utilisation (under "
                    f"{_pct(rule.max_utilization)})."
                ),
                action=(
                    "the service holds more GPUs than its traffic needs: scale its replicas "
                    "down (see the Economics page's consolidation advice) or route more "
                    "traffic to it"
                ),
                data_through=data_through,
                team=r["team"],
                facts={
                    "cost_per_1m_tokens": r["per_1m"],
                    "previous_cost_per_1m_tokens": r["prev_per_1m"],
                    "rise": rise,
                    "mean_utilization": r["utilization"],
                },
            )
        )
    return out


def inference_slo_alerts(
    service_hours: pl.DataFrame, rule: InferenceSloRule, rule_name: str, data_through: date
) -> list[Alert]:
    """One alert per episode of consecutive hours in which a service's TTFT p95 is over
    `ttft_p95_seconds` while its GPUs sit under `max_utilization`, of at least `min_hours`
    hours. Priced at the service's cost in those hours. Period: the episode's first hour."""
    if service_hours.height == 0:
        return []
    last_hour = service_hours.group_by("model_name").agg(pl.col("hour").max().alias("_last"))
    flagged = service_hours.with_columns(
        _breach=(pl.col("ttft_p95_s") > rule.ttft_p95_seconds).fill_null(False)
        & (pl.col("mean_utilization") < rule.max_utilization).fill_null(False)
    )
    eps = (
        _episodes(flagged, ["model_name"], "_breach")
        .group_by(["model_name", "episode"])
        .agg(
            pl.col("team").drop_nulls().first(),
            pl.col("hour").min().alias("start"),
            pl.col("hour").max().alias("last"),
            pl.len().alias("hours"),
            pl.col("ttft_p95_s").max().alias("worst"),
            _weighted_utilization().alias("utilization"),
            pl.col("cost").sum().alias("cost"),
        )
        .join(last_hour, on="model_name")
        .filter(pl.col("hours") >= rule.min_hours)
        .sort(["start", "model_name"])
    )
    out = []
    for r in eps.iter_rows(named=True):
        end = r["last"] + HOUR
        ongoing = r["last"] == r["_last"]
        out.append(
            Alert(
                rule=f"inference_slo:{rule_name}",
                kind="inference_slo",
                subject=f"service:{r['model_name']}",
                period=_iso(r["start"]),
                threshold=float(rule.ttft_p95_seconds),
                amount=float(r["cost"]),
                title=f"Inference SLO: {r['model_name']} TTFT p95 {r['worst']:.3f} s",
                what=(
                    f"{r['model_name']}'s time to first token (p95) was over the "
                    f"{rule.ttft_p95_seconds:g} s SLO for {r['hours']} h from "
                    f"{stamp(r['start'])}" + ("" if ongoing else f" to {stamp(end)}") + f" "
                    f"(worst {r['worst']:.3f} s) while its GPUs averaged "
                    f"{_pct(r['utilization'])} utilisation (under "
                    f"{_pct(rule.max_utilization)})."
                ),
                action=(
                    "the GPUs are not the bottleneck: check the server's batch and KV-cache "
                    "settings, the queue (requests waiting) and the load balancer in front of "
                    "its replicas"
                ),
                data_through=data_through,
                team=r["team"],
                facts={
                    "hours": r["hours"],
                    "worst_ttft_p95_s": r["worst"],
                    "mean_utilization": r["utilization"],
                },
                condition_ended_at=None if ongoing else end,
            )
        )
    return out
