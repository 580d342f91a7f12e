"""kube-state-metrics scrapes (Prometheus text exposition, plain or gzip) → `k8s_gpu_requests`
(kubernetes source option `format: kube_state_metrics`).

The samples read are `kube_pod_container_resource_requests{namespace, pod, uid, container, node,
resource="nvidia_com_gpu", unit="integer"} N [TIMESTAMP_MS]`; every other metric of the scrape is
skipped. One row per pod, resource and sample time: the pod's containers summed (`containers`
says how many series were summed). Parsing is vectorised the way ingest/telemetry/dcgm.py
parses DCGM scrapes (its line reader, sample regex and label unescaping are reused): lines are
filtered by metric name as strings first, so a full kube-state-metrics scrape costs one pass.

Each row also carries what the scrape says about the pod (null when it lacks the metric), so runs
can be built from kube-state-metrics alone when no pod dumps are configured: `phase` (the
`kube_pod_status_phase{phase}` series whose value is 1), `created_at` / `started_at` /
`finished_at` (`kube_pod_created`, `kube_pod_start_time`, `kube_pod_completion_time`: Unix
seconds), `reason` (the `kube_pod_status_reason{reason}` series whose value is 1: Evicted,
NodeLost, …) and `owner_kind` / `owner_name` (`kube_pod_owner`, the controller first). They are
taken from the latest sample of the pod (namespace, pod) at or before the request's time.

Rejected (quarantine, with the reason): a sample line of the metric, or of one of those pod
metrics, that does not parse, a value that is not a number (a request that is not a whole number
≥ 0), a sample without `namespace` or `pod`, and a container series repeated at the same time.

Options: `cluster`; `scrape_time` (the time of samples without a timestamp; default the file's
mtime); `metric` (default `kube_pod_container_resource_requests`; e.g. `…_limits`); `resource`
(default `nvidia_com_gpu`; `nvidia.com/gpu` is the same resource).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from ingest.core.common import ReadResult, quarantine_from
from ingest.core.errors import IngestError
from ingest.core.findings import IngestFinding
from ingest.core.landing import empty_quarantine, polars_schema
from ingest.core.text import quarantine_invalid_lines
from ingest.telemetry.dcgm import _SLOW_LINE, _VALUE, _default_time, _unescape, text_lines

TABLE = "k8s_gpu_requests"
METRIC = "kube_pod_container_resource_requests"
RESOURCE = "nvidia_com_gpu"
_LABELS = ("namespace", "pod", "uid", "container", "node", "resource")
#: pod-level metrics read beside the requests (module docstring)
POD_METRICS = (
    "kube_pod_status_phase",
    "kube_pod_created",
    "kube_pod_start_time",
    "kube_pod_completion_time",
    "kube_pod_status_reason",
    "kube_pod_owner",
)
_INFO_LABELS = ("namespace", "pod", "phase", "reason", "owner_kind", "owner_name")
_INFO_COLUMNS = (
    "phase",
    "created_at",
    "started_at",
    "finished_at",
    "reason",
    "owner_kind",
    "owner_name",
)


def _resource_name(value: str | pl.Expr) -> Any:
    """`nvidia.com/gpu` and `nvidia_com_gpu` name the same resource (KSM sanitises names)."""
    if isinstance(value, str):
        return value.replace(".", "_").replace("/", "_").replace("-", "_")
    return value.str.replace_all(r"[./-]", "_")


def _label(name: str) -> pl.Expr:
    return _unescape(
        pl.col("inner")
        .str.extract(rf"(?:^|,)\s*{name}\s*=\s*({_VALUE})", 1)
        .str.slice(1)
        .str.head(-1)
    )


def parse_ksm(
    data: bytes,
    *,
    source: str,
    file: str,
    default_time: datetime,
    cluster: str | None = None,
    metric: str = METRIC,
    resource: str = RESOURCE,
) -> ReadResult:
    """Parse one kube-state-metrics scrape already in memory (see `read_ksm`)."""
    schema = polars_schema(TABLE)
    empty = ReadResult(pl.DataFrame(schema=schema), empty_quarantine(), files=[file])
    if not data or data.isspace():
        return empty
    try:
        lines = text_lines(data)
    except (OSError, pl.exceptions.PolarsError) as err:
        raise IngestError(f"not readable text: {err}".splitlines()[0], file=file) from None
    info_lines = lines.filter(
        pl.any_horizontal(pl.col("line").str.starts_with(m + "{") for m in POD_METRICS)
    )
    lines = lines.filter(pl.col("line").str.starts_with(metric + "{"))
    if lines.height == 0:
        return empty
    info, info_bad = _pod_info(info_lines, default_time)
    g = pl.col("line").str.extract_groups(_SLOW_LINE)
    df = lines.with_columns(g=g).select(
        "x_line_number",
        "line",
        name=pl.col("g").struct.field("1"),
        inner=pl.col("g").struct.field("2"),
        v=pl.col("g").struct.field("3"),
        t=pl.col("g").struct.field("4"),
    )
    df = df.with_columns(
        value=pl.col("v").cast(pl.Float64, strict=False),
        ts=pl.col("t").cast(pl.Int64, strict=False),
        **{k: _label(k) for k in _LABELS},
    ).with_columns(
        pl.col("resource").pipe(_resource_name),
        x_source=pl.lit(source, pl.String),
        x_source_file=pl.lit(file, pl.String),
    )
    # only the GPU resource: other resources (cpu, memory) are not rejects, just not wanted
    df = df.filter(
        pl.col("name").is_null() | (pl.col("name") != metric) | (pl.col("resource") == resource)
    )
    default_us = int(default_time.timestamp() * 1_000_000)
    df = df.with_columns(
        time=(pl.col("ts") * 1000)
        .fill_null(default_us)
        .cast(pl.Datetime("us"))
        .dt.replace_time_zone("UTC")
    )
    reason = (
        pl.when(pl.col("name").is_null() | (pl.col("name") != metric))
        .then(pl.lit("unparseable sample line"))
        .when(pl.col("value").is_null() | pl.col("value").is_nan())
        .then(pl.format("value is not a number: {}", pl.col("v")))
        .when(pl.col("t").is_not_null() & pl.col("ts").is_null())
        .then(pl.format("timestamp is not an integer: {}", pl.col("t")))
        .when((pl.col("value") < 0) | (pl.col("value") != pl.col("value").round(0)))
        .then(pl.format("GPU request is not a whole number >= 0: {}", pl.col("v")))
        .when(pl.col("namespace").is_null() | pl.col("pod").is_null())
        .then(pl.lit("sample has no namespace or pod label"))
        .otherwise(None)
    )
    df = df.with_columns(reason=reason)
    key = pl.struct("time", "namespace", "pod", "uid", "container", "resource")
    df = df.with_columns(
        reason=pl.when(
            pl.col("reason").is_null() & ~key.is_first_distinct().over(pl.col("reason").is_null())
        )
        .then(pl.lit("duplicate container series at the same time"))
        .otherwise(pl.col("reason"))
    )
    bad = df.filter(pl.col("reason").is_not_null())
    good = df.filter(pl.col("reason").is_null())
    rows = (
        good.group_by("time", "namespace", "pod", "uid", "node", "resource", maintain_order=True)
        .agg(
            containers=pl.len(),
            gpus=pl.col("value").sum().round(0).cast(pl.Int64),
            x_source=pl.col("x_source").first(),
            x_source_file=pl.col("x_source_file").first(),
            x_line_number=pl.col("x_line_number").min(),
        )
        .with_columns(
            cluster=pl.lit(cluster, pl.String),
            resource=pl.lit("nvidia.com/gpu" if resource == RESOURCE else resource, pl.String),
        )
    )
    rows = (
        _with_pod_info(rows, info).sort("x_line_number").select(list(schema)).cast(dict(schema))  # type: ignore[arg-type]
    )
    bad = pl.concat(
        [bad.select("x_line_number", "line", "reason"), info_bad], how="vertical_relaxed"
    ).sort("x_line_number")
    quarantine = quarantine_from(
        bad.with_columns(x_source=pl.lit(source), x_source_file=pl.lit(file)),
        pl.col("reason"),
        pl.col("line"),
    )
    return ReadResult(rows, quarantine, files=[file], warnings=_start_findings(rows, file))


#: the check of the finding below (docs/landing.md, "Kubernetes")
START_MISSING = "ksm_pod_start_missing"


def _start_findings(rows: pl.DataFrame, file: str) -> list[IngestFinding]:
    """A `warning` when pods that request GPUs and are not Pending have no kube_pod_start_time
    in the whole scrape: runs built from kube-state-metrics (a cluster without pod dumps) cannot
    start them, so their GPU time counts as unallocated."""
    if rows.height == 0:
        return []
    pods = rows.group_by("namespace", "pod").agg(
        started=pl.col("started_at").is_not_null().any(),
        pending=(pl.col("phase") == "Pending").fill_null(False).all(),
        gpus=pl.col("gpus").max(),
    )
    missing = pods.filter(~pl.col("started") & ~pl.col("pending") & (pl.col("gpus") > 0))
    if missing.height == 0:
        return []
    first = missing.sort("namespace", "pod").row(0, named=True)
    return [
        IngestFinding(
            START_MISSING,
            f"{missing.height} pods requesting GPUs have no kube_pod_start_time in {file} "
            f"(first: {first['namespace']}/{first['pod']}): runs built from kube-state-metrics "
            "cannot start them, so their GPU time counts as unallocated",
            "warning",
            count=missing.height,
        )
    ]


def _epoch(col: str) -> pl.Expr:
    """Unix seconds (a float sample value) as a UTC timestamp."""
    return (
        (pl.col(col) * 1_000_000).round(0).cast(pl.Int64).cast(pl.Datetime("us"))
    ).dt.replace_time_zone("UTC")


def _pod_info(lines: pl.DataFrame, default_time: datetime) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The pod metrics of the scrape, one row per (time, namespace, pod) with the columns of
    `_INFO_COLUMNS`, and their rejected lines (`x_line_number`, `line`, `reason`)."""
    g = pl.col("line").str.extract_groups(_SLOW_LINE)
    default_us = int(default_time.timestamp() * 1_000_000)
    df = (
        lines.with_columns(g=g)
        .select(
            "x_line_number",
            "line",
            name=pl.col("g").struct.field("1"),
            inner=pl.col("g").struct.field("2"),
            v=pl.col("g").struct.field("3"),
            t=pl.col("g").struct.field("4"),
        )
        .with_columns(
            value=pl.col("v").cast(pl.Float64, strict=False),
            ts=pl.col("t").cast(pl.Int64, strict=False),
            controller=_label("owner_is_controller"),
            **{k: _label(k) for k in _INFO_LABELS},
        )
        .with_columns(
            time=(pl.col("ts") * 1000)
            .fill_null(default_us)
            .cast(pl.Datetime("us"))
            .dt.replace_time_zone("UTC")
        )
    )
    reason = (
        pl.when(pl.col("name").is_null() | ~pl.col("name").is_in(POD_METRICS))
        .then(pl.lit("unparseable sample line"))
        .when(pl.col("value").is_null() | pl.col("value").is_nan())
        .then(pl.format("value is not a number: {}", pl.col("v")))
        .when(pl.col("t").is_not_null() & pl.col("ts").is_null())
        .then(pl.format("timestamp is not an integer: {}", pl.col("t")))
        .when(pl.col("namespace").is_null() | pl.col("pod").is_null())
        .then(pl.lit("sample has no namespace or pod label"))
        .otherwise(None)
    )
    # `reason` is a label of kube_pod_status_reason: the rejection goes in `why`
    df = df.with_columns(why=reason)
    bad = df.filter(pl.col("why").is_not_null()).select(
        "x_line_number", "line", reason=pl.col("why")
    )
    good = df.filter(pl.col("why").is_null())
    one = pl.col("value") == 1

    def pick(metric: str, expr: pl.Expr, when: pl.Expr | None = None) -> pl.Expr:
        cond = pl.col("name") == metric
        if when is not None:
            cond = cond & when
        return expr.filter(cond).first()

    info = (
        # the controller owner first, else in line order
        good.sort(pl.col("controller").fill_null("") != "true", "x_line_number")
        .group_by("time", "namespace", "pod")
        .agg(
            pick("kube_pod_status_phase", pl.col("phase"), one).alias("phase"),
            pick("kube_pod_created", pl.col("value")).alias("created"),
            pick("kube_pod_start_time", pl.col("value")).alias("started"),
            pick("kube_pod_completion_time", pl.col("value")).alias("finished"),
            pick("kube_pod_status_reason", pl.col("reason"), one).alias("reason"),
            pick("kube_pod_owner", pl.col("owner_kind")).alias("owner_kind"),
            pick("kube_pod_owner", pl.col("owner_name")).alias("owner_name"),
        )
        .with_columns(
            created_at=_epoch("created"),
            started_at=_epoch("started"),
            finished_at=_epoch("finished"),
        )
        .select("time", "namespace", "pod", *_INFO_COLUMNS)
        .sort("time")
    )
    return info, bad


def _with_pod_info(rows: pl.DataFrame, info: pl.DataFrame) -> pl.DataFrame:
    """`rows` with the latest pod metrics of each pod at or before the row's time."""
    if info.height == 0:
        return rows.with_columns(
            pl.lit(None, pl.String).alias("phase"),
            pl.lit(None, pl.Datetime("us", "UTC")).alias("created_at"),
            pl.lit(None, pl.Datetime("us", "UTC")).alias("started_at"),
            pl.lit(None, pl.Datetime("us", "UTC")).alias("finished_at"),
            pl.lit(None, pl.String).alias("reason"),
            pl.lit(None, pl.String).alias("owner_kind"),
            pl.lit(None, pl.String).alias("owner_name"),
        )
    # both sides are sorted by time (polars cannot check that within the `by` groups)
    return rows.sort("time").join_asof(
        info, on="time", by=["namespace", "pod"], strategy="backward", check_sortedness=False
    )


def read_ksm(path: str | Path, *, source: str, options: dict[str, Any] | None = None) -> ReadResult:
    """Read one kube-state-metrics scrape file (plain or gzip) into `k8s_gpu_requests` rows."""
    path = Path(path)
    options = options or {}
    try:
        data = path.read_bytes()
    except OSError as err:
        raise IngestError(f"cannot read file: {err.strerror or err}", file=path) from None
    cluster = options.get("cluster")
    result = parse_ksm(
        data,
        source=source,
        file=str(path),
        default_time=_default_time(path, options),
        cluster=str(cluster) if cluster is not None else None,
        metric=str(options.get("metric", METRIC)),
        resource=_resource_name(str(options.get("resource", RESOURCE))),
    )
    return quarantine_invalid_lines(result, data, source=source, file=str(path))
